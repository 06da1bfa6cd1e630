/**
 * The parent side of a checker run: forks K workers, collects what they report, and lets a test
 * react to a worker holding the lock (to inject a fault at that moment).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { fileURLToPath } from 'node:url';
import { fromWire, isWorkerMessage, type AcquireFailure, type ParentMessage, type SectionRecord } from './records.js';
import type { WorkerConfig } from './worker.js';

const WORKER_PATH = fileURLToPath(new URL('./worker.js', import.meta.url));

/** How a worker ended. */
export interface WorkerExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  /** It sent 'done' and exited with code 0 by itself (no open handle kept it alive). */
  readonly clean: boolean;
}

export interface WorkerHandle {
  readonly id: number;
  readonly pid: number;
  readonly child: ChildProcess;
  readonly exited: Promise<WorkerExit>;
  send(message: ParentMessage): void;
}

export interface FleetEvents {
  acquired: [SectionRecord, WorkerHandle];
  holding: [SectionRecord, WorkerHandle];
  section: [SectionRecord, WorkerHandle];
}

/** Wraps a worker's command, e.g. to run it inside a network namespace. */
export type CommandWrapper = (command: string, args: readonly string[]) => { command: string; args: string[] };

/** The wrapper for one worker, if any. */
export type WrapperFor = (config: WorkerConfig) => CommandWrapper | undefined;

export class Fleet extends EventEmitter<FleetEvents> {
  readonly workers: WorkerHandle[] = [];
  readonly completed: SectionRecord[] = [];
  readonly failures: AcquireFailure[] = [];
  /** Sections acquired and not yet reported complete, by worker/slot. */
  readonly #open = new Map<string, SectionRecord>();
  /** Workers configured with `waitForGo`, told 'go' when a worker first reports holding. */
  readonly #waitingForGo: WorkerHandle[] = [];
  /** Settles once every worker has exited and its IPC channel closed: no event can come after. */
  readonly #gone: Promise<void>;

  constructor(configs: readonly WorkerConfig[], wrap?: WrapperFor) {
    super();
    for (const config of configs) this.workers.push(this.#launch(config, wrap?.(config)));
    // 'close', not 'exit': a worker's last messages may still be on their way when it exits.
    this.#gone = Promise.all(this.workers.map(({ child }) => new Promise((resolve) => child.once('close', resolve)))).then(() => undefined);
  }

  #launch(config: WorkerConfig, wrap: CommandWrapper | undefined): WorkerHandle {
    const base = { command: process.execPath, args: [WORKER_PATH] };
    const { command, args } = wrap === undefined ? base : wrap(base.command, base.args);
    const child = spawn(command, args, {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      env: { ...process.env, SAFETY_WORKER: JSON.stringify(config) },
    });
    let done = false;
    const handle: WorkerHandle = {
      id: config.worker,
      pid: child.pid ?? -1,
      child,
      exited: new Promise((resolve) => {
        child.once('exit', (code, signal) => resolve({ code, signal, clean: done && code === 0 }));
      }),
      send: (message) => {
        if (child.connected) child.send(message, (error) => void error);
      },
    };
    child.on('message', (message: unknown) => {
      if (!isWorkerMessage(message)) return;
      switch (message.type) {
        case 'acquired':
        case 'holding': {
          const record = fromWire(message.record);
          this.#open.set(`${record.worker}/${record.slot}`, record);
          // The first holder holds: the others start now, before the test injects its fault. On a
          // busy machine they could otherwise finish every section before it got there, and nobody
          // would be left to take the lock after the fault.
          if (message.type === 'holding') for (const waiting of this.#waitingForGo.splice(0)) waiting.send({ type: 'go' });
          this.emit(message.type, record, handle);
          break;
        }
        case 'section': {
          const record = fromWire(message.record);
          this.#open.delete(`${record.worker}/${record.slot}`);
          this.completed.push(record);
          this.emit('section', record, handle);
          break;
        }
        case 'acquire-failed':
          this.failures.push(message.failure);
          break;
        case 'done':
          done = true;
          break;
        case 'ready':
          break;
      }
    });
    child.on('error', () => undefined);
    if (config.waitForGo === true) this.#waitingForGo.push(handle);
    return handle;
  }

  /** Completed sections plus those a dead worker left open (known valid up to what it last reported). */
  get sections(): SectionRecord[] {
    return [...this.completed, ...this.#open.values()];
  }

  /** Asks every worker to finish what it is doing and exit. */
  stop(): void {
    for (const worker of this.workers) worker.send({ type: 'stop' });
  }

  /** Waits for every worker to exit; SIGKILLs those still running after `timeoutMs`. */
  async finish(timeoutMs: number): Promise<WorkerExit[]> {
    let timer: NodeJS.Timeout | undefined;
    const all = Promise.all(this.workers.map((w) => w.exited));
    const timedOut = await Promise.race([
      all.then(() => false),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), timeoutMs))),
    ]);
    clearTimeout(timer);
    if (timedOut) {
      for (const worker of this.workers) {
        worker.child.kill('SIGCONT');
        worker.child.kill('SIGKILL');
      }
    }
    return all;
  }

  /**
   * Resolves with the next event of `type` that matches `filter`; rejects once every worker is gone
   * without one, so that a run whose workers finished too early fails with a reason, not a hang.
   */
  next(type: 'acquired' | 'holding' | 'section', filter: (record: SectionRecord) => boolean = () => true): Promise<[SectionRecord, WorkerHandle]> {
    return new Promise((resolve, reject) => {
      const listener = (record: SectionRecord, worker: WorkerHandle): void => {
        if (!filter(record)) return;
        this.off(type, listener);
        resolve([record, worker]);
      };
      this.on(type, listener);
      void this.#gone.then(() => {
        this.off(type, listener);
        reject(new Error(`every worker was gone before the awaited '${type}' event came`));
      });
    });
  }
}

/** Whether a process is stopped (state T in /proc), i.e. a SIGSTOP really took effect. */
export async function isStopped(pid: number): Promise<boolean> {
  const { readFile } = await import('node:fs/promises');
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  return state === 'T' || state === 't';
}
