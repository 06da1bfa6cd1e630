/** Child processes of tests: the compiled fixtures (test/fixtures) they run, and their first report. */
import { fork, type ChildProcess } from 'node:child_process';
import { after } from 'node:test';
import { fileURLToPath } from 'node:url';

const forked: ChildProcess[] = [];
let killOnEnd = false;

/**
 * Forks the compiled fixture `name` with `args` (stderr piped, IPC on), and SIGKILLs it after the
 * file's tests if it still runs: a test that failed half-way must not leave a child whose IPC
 * channel keeps the file alive.
 */
export function forkFixture(name: string, args: readonly string[]): ChildProcess {
  if (!killOnEnd) {
    killOnEnd = true;
    after(() => {
      for (const child of forked) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    });
  }
  const child = fork(fixture(name), args, { stdio: ['ignore', 'ignore', 'pipe', 'ipc'] });
  forked.push(child);
  return child;
}

/** The path of the compiled fixture `name` (test/fixtures/<name>.ts), for `fork`. */
export function fixture(name: string): string {
  return fileURLToPath(new URL(`../fixtures/${name}.js`, import.meta.url));
}

/** The first IPC message `child` sends; rejects if it exits before sending one. */
export function firstMessage<T>(child: ChildProcess): Promise<T> {
  return new Promise((resolve, reject) => {
    child.once('message', (message) => resolve(message as T));
    child.once('exit', (code) => reject(new Error(`worker exited with ${code} before reporting`)));
  });
}
