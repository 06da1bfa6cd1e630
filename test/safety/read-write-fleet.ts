/** The parent side of a read/write checker run: forks the workers and collects their sections. */
import { spawn, type ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { fileURLToPath } from 'node:url';
import { fromWire, type ReadWriteSection, type ReadWriteWorkerMessage } from './read-write-records.js';
import type { ReadWriteWorkerConfig } from './read-write-worker.js';

const WORKER_PATH = fileURLToPath(new URL('./read-write-worker.js', import.meta.url));

export interface ReadWriteWorker {
  readonly id: number;
  readonly pid: number;
  readonly child: ChildProcess;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export class ReadWriteFleet extends EventEmitter<{ holding: [ReadWriteSection, ReadWriteWorker] }> {
  readonly workers: ReadWriteWorker[];
  readonly sections: ReadWriteSection[] = [];
  readonly failures: string[] = [];

  constructor(configs: readonly ReadWriteWorkerConfig[]) {
    super();
    this.workers = configs.map((config) => this.#launch(config));
  }

  #launch(config: ReadWriteWorkerConfig): ReadWriteWorker {
    const child = spawn(process.execPath, [WORKER_PATH], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], env: { ...process.env, RW_WORKER: JSON.stringify(config) } });
    const worker: ReadWriteWorker = {
      id: config.worker,
      pid: child.pid ?? -1,
      child,
      exited: new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal }))),
    };
    child.on('message', (message: ReadWriteWorkerMessage) => {
      if (message.type === 'section') this.sections.push(fromWire(message.section));
      else if (message.type === 'holding') this.emit('holding', fromWire(message.section), worker);
      else if (message.type === 'failed') this.failures.push(message.error);
    });
    child.on('error', () => undefined);
    return worker;
  }

  /**
   * The next 'holding' report; then the workers configured with `waitForGo` start. They wait so
   * that, on a busy machine, they cannot finish every section before the lingering holder holds
   * and leave nobody to contend with it during the fault.
   */
  holding(): Promise<[ReadWriteSection, ReadWriteWorker]> {
    return new Promise((resolve) =>
      this.once('holding', (section, holder) => {
        for (const worker of this.workers) if (worker !== holder && worker.child.connected) worker.child.send({ type: 'go' });
        resolve([section, holder]);
      }),
    );
  }

  /** Waits for every worker to exit. */
  finish(): Promise<unknown> {
    return Promise.all(this.workers.map((w) => w.exited));
  }
}
