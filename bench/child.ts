/** A forked bench process (a contended worker, the scale run's lease holder) spoken to over IPC. */
import { fork, type ChildProcess } from 'node:child_process';

/** A child process running `script`: each request resolves with its next reply; an `error` reply or an early exit rejects. */
export class ChildChannel<To extends object, From extends { readonly type: string }> {
  readonly child: ChildProcess;
  readonly exited: Promise<number | null>;
  #waiting: ((message: From) => void) | undefined;
  #failure: Error | undefined;
  #failed: ((error: Error) => void) | undefined;

  constructor(script: string, execArgv: readonly string[] = []) {
    this.child = fork(script, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], execArgv: [...process.execArgv, ...execArgv] });
    this.exited = new Promise((resolve) => this.child.once('exit', (code) => resolve(code)));
    this.child.on('message', (message: From) => {
      if (message.type === 'error') this.#fail(new Error(`${script} failed: ${'message' in message ? String(message.message) : '?'}`));
      else this.#waiting?.(message);
    });
    this.child.once('exit', (code) => this.#fail(new Error(`${script} exited (code ${String(code)}) before replying`)));
  }

  #fail(error: Error): void {
    this.#failure ??= error;
    this.#failed?.(error);
  }

  /** Sends `message` and resolves with the next reply. */
  request(message: To): Promise<From> {
    return new Promise((resolve, reject) => {
      if (this.#failure !== undefined) {
        reject(this.#failure);
        return;
      }
      this.#waiting = (reply) => {
        this.#waiting = undefined;
        resolve(reply);
      };
      this.#failed = reject;
      this.child.send(message);
    });
  }

  /** Sends `message` without waiting for a reply (when connected). */
  tell(message: To): void {
    if (this.child.connected) this.child.send(message);
  }

  /** Waits for the process to exit, killing it past `ms`. */
  async stop(ms: number): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const timer = setTimeout(() => this.child.kill('SIGKILL'), ms);
    await this.exited;
    clearTimeout(timer);
  }
}

export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
