#!/usr/bin/env node
/**
 * The `padlock` bin: runs `padlock <command> [options]` (program.ts) and reports failures as one
 * line on stderr (`padlock: …`) with a non-zero exit code, never a stack trace (set
 * `PADLOCK_DEBUG=1` to see one). Ctrl-C and SIGTERM abort the command's signal; a second one exits
 * at once.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CliError, ExitCode, firstLine } from './errors.js';

/** padlock's version, from the nearest package.json named "padlock" above this module. */
function version(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++, dir = dirname(dir)) {
    const file = join(dir, 'package.json');
    if (!existsSync(file)) continue;
    const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: unknown; version?: unknown };
    if (pkg.name === 'padlock' && typeof pkg.version === 'string') return pkg.version;
  }
  return 'unknown';
}

function report(error: unknown, env: NodeJS.ProcessEnv): number {
  const debug = env['PADLOCK_DEBUG'] !== undefined && env['PADLOCK_DEBUG'] !== '' && env['PADLOCK_DEBUG'] !== '0';
  if (error instanceof CliError) {
    process.stderr.write(`padlock: ${firstLine(error)}\n`);
    if (debug && error.cause !== undefined) process.stderr.write(`${error.cause instanceof Error ? error.cause.stack : JSON.stringify(error.cause)}\n`);
    if (error.exitCode === ExitCode.usage && !/--help/.test(error.message)) process.stderr.write(`Run '${error.hint ?? 'padlock --help'}' for usage.\n`);
    return error.exitCode;
  }
  process.stderr.write(`padlock: unexpected error: ${firstLine(error)}${debug ? '' : ' (set PADLOCK_DEBUG=1 for details)'}\n`);
  if (debug && error instanceof Error) process.stderr.write(`${error.stack}\n`);
  return ExitCode.failure;
}

// `padlock list | head`: the reader went away. Stop quietly, as a command killed by SIGPIPE would.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(typeof process.exitCode === 'number' ? process.exitCode : ExitCode.ok);
    throw error;
  });
}

const controller = new AbortController();
const onSignal = (signal: NodeJS.Signals): void => {
  // A second Ctrl-C does not wait for the cleanup.
  if (controller.signal.aborted) process.exit(signal === 'SIGTERM' ? 143 : ExitCode.interrupted);
  controller.abort(signal);
};
process.on('SIGINT', onSignal);
process.on('SIGTERM', onSignal);

const context = { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin, env: process.env, signal: controller.signal };
// The Redis client library is loaded by the commands that talk to Redis (client-library.ts): help needs none.
const code = await import('./program.js')
  .then(({ runCli }) => runCli(process.argv.slice(2), context, version()))
  .catch((error: unknown) => report(error, process.env));
process.exitCode = code;
process.off('SIGINT', onSignal);
process.off('SIGTERM', onSignal);
// Everything is closed by now; should a stray handle remain, do not hang on it.
setTimeout(() => process.exit(code), 1_000).unref();
