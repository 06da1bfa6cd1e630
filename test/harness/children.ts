/** Child processes of tests: the compiled fixtures (test/fixtures) they run, and their first report. */
import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

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
