#!/usr/bin/env node
/**
 * The `padlock` bin: parses `padlock <command> [options]`, dispatches to the command, and reports
 * failures as one line on stderr (`padlock: …`) with a non-zero exit code, never a stack trace
 * (set `PADLOCK_DEBUG=1` to see one).
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Command, CommandContext } from './command.js';
import { demoCommand } from './demo.js';
import { CliError, ExitCode, firstLine, usageError } from './errors.js';

/** Every subcommand, in the order `padlock --help` lists them. */
const COMMANDS: readonly Command[] = [demoCommand];

function help(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  return `Usage: padlock <command> [options]

Distributed locks for Node.js on Redis.

Commands:
${COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`).join('\n')}

Options:
  -h, --help     show this help (padlock <command> --help for a command's)
  -v, --version  print padlock's version

Start with: npx padlock demo`;
}

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

/**
 * Runs the command line `argv` (without `node` and the script).
 * @returns the exit code
 */
async function runCli(argv: readonly string[], context: CommandContext): Promise<number> {
  const [first, ...rest] = argv;
  if (first === undefined) {
    context.stderr.write(`${help()}\n`);
    return ExitCode.usage;
  }
  if (first === '-h' || first === '--help' || first === 'help') {
    context.stdout.write(`${help()}\n`);
    return ExitCode.ok;
  }
  if (first === '-v' || first === '--version') {
    context.stdout.write(`${version()}\n`);
    return ExitCode.ok;
  }
  const command = COMMANDS.find((c) => c.name === first);
  if (command === undefined) {
    throw usageError(first.startsWith('-') ? `unknown option '${first}' (see padlock --help)` : `unknown command '${first}' (see padlock --help)`);
  }
  try {
    return await command.run(rest, context);
  } catch (error) {
    // Point a wrong command line at the help of the command it was for.
    if (error instanceof CliError && error.exitCode === ExitCode.usage && error.hint === undefined) error.hint = `padlock ${command.name} --help`;
    throw error;
  }
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

const controller = new AbortController();
const onSignal = (signal: NodeJS.Signals): void => {
  // A second Ctrl-C does not wait for the cleanup.
  if (controller.signal.aborted) process.exit(signal === 'SIGTERM' ? 143 : ExitCode.interrupted);
  controller.abort(signal);
};
process.on('SIGINT', onSignal);
process.on('SIGTERM', onSignal);

const code = await runCli(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  signal: controller.signal,
}).catch((error: unknown) => report(error, process.env));
process.exitCode = code;
process.off('SIGINT', onSignal);
process.off('SIGTERM', onSignal);
// Everything is closed by now; should a stray handle remain, do not hang on it.
setTimeout(() => process.exit(code), 1_000).unref();
