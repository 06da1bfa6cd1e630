/**
 * Contended runs: W workers on one key, in this process (sharing one client, as an application
 * would) or as W OS processes (each with its own connections). Both run the same worker loop
 * (`workload.ts`) and are measured the same way: client timestamps for rates and latencies, the
 * counter for lost updates, the command meter and `INFO commandstats` for commands.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import {
  addCounts,
  diffCounts,
  parseCommandStats,
  readCommandMeter,
  resetCommandMeter,
  totalCount,
  type CommandCounts,
} from './command-meter.js';
import { openContender, type ContenderSpec } from './contenders.js';
import type { FromWorker, ToWorker } from './messages.js';
import { measureContended, nowMs, type AcquisitionRecord, type ContendedMeasures } from './stats.js';
import { measurePing } from './uncontended.js';
import { connectData, runWorker, warmUp, type RunPlan, type WorkerOutcome } from './workload.js';

export type Mode = 'in-process' | 'processes';

export interface ContendedOptions {
  readonly workers: number;
  readonly seconds: number;
  /** Mean think time between a worker's acquisitions (ms); 0 for none. */
  readonly thinkMs: number;
}

export interface ContendedResult extends ContendedMeasures {
  readonly label: string;
  readonly library: ContenderSpec['library'];
  readonly spec: ContenderSpec;
  readonly mode: Mode;
  readonly workers: number;
  readonly seconds: number;
  /** Cycles completed from the start to the end of the drain (the metered period). */
  readonly cycles: number;
  /** Cycles minus the counter's increase: updates lost to a broken exclusion. Must be 0. */
  readonly lostUpdates: number;
  /** Acquire calls the library gave up on (retry limit or acquire timeout) and the worker repeated. */
  readonly giveUps: number;
  /** Workers still waiting at the hard stop. */
  readonly stuck: number;
  /** Ping p50 (ms) measured on the same server just before this run (the machine's load changes). */
  readonly pingP50: number;
  /** Lock commands the clients sent per cycle (the workload's GET and SET excluded). */
  readonly sentPerAcquisition: number;
  /** Commands Redis ran per cycle, including those inside scripts (the workload's GET and SET excluded). */
  readonly executedPerAcquisition: number;
  /** Lock commands sent, by name, over the metered period. */
  readonly sent: CommandCounts;
  /** Commands executed, by name, over the metered period. */
  readonly executed: CommandCounts;
}

/** What a set of workers reports back after a run. */
interface Collected {
  readonly outcomes: readonly WorkerOutcome[];
  readonly sent: CommandCounts;
}

/** Workers opened and warmed up, waiting for a plan. */
interface Session {
  run(plan: RunPlan): Promise<Collected>;
  close(): Promise<void>;
}

/** How long after the last worker is ready the run starts, so that every worker is waiting for it. */
const START_DELAY_MS = { 'in-process': 50, processes: 300 } as const;
/** How long after the deadline a worker may still wait before it is counted as stuck. */
const DRAIN_LIMIT_MS = 15_000;
/** Bound on starting or stopping a set of worker processes. */
const PROCESS_TIMEOUT_MS = 60_000;

/** Runs `spec` contended in `mode` on the server at `url`. */
export async function runContended(spec: ContenderSpec, url: string, mode: Mode, options: ContendedOptions): Promise<ContendedResult> {
  const admin = connectData(url);
  const key = `bench:${randomBytes(4).toString('hex')}`;
  const counterKey = `${key}:counter`;
  const session = mode === 'in-process' ? await openInProcess(spec, url, options, key, counterKey) : await openProcesses(spec, url, options, key, counterKey);
  try {
    const ping = await measurePing(url, 300);
    const counterBefore = Number((await admin.get(counterKey)) ?? 0);
    const statsBefore = parseCommandStats(await admin.info('commandstats'));
    const startAt = nowMs() + START_DELAY_MS[mode];
    const deadline = startAt + options.seconds * 1000;
    const plan: RunPlan = { key, counterKey, startAt, deadline, hardStop: deadline + DRAIN_LIMIT_MS, thinkMs: options.thinkMs };
    const collected = await session.run(plan);
    const statsAfter = parseCommandStats(await admin.info('commandstats'));
    const counterAfter = Number((await admin.get(counterKey)) ?? 0);

    const records: AcquisitionRecord[] = collected.outcomes.flatMap((o) => o.records);
    const cycles = records.length;
    const workload: CommandCounts = { get: cycles, set: cycles };
    const sent = withoutCounts(collected.sent, workload);
    // The INFO that took the first snapshot is counted in the second.
    const executed = withoutCounts(diffCounts(statsAfter, statsBefore), { ...workload, info: 1 });
    return {
      label: spec.label,
      library: spec.library,
      spec,
      mode,
      workers: options.workers,
      seconds: options.seconds,
      ...measureContended(records, options.workers, startAt, deadline),
      cycles,
      lostUpdates: cycles - (counterAfter - counterBefore),
      giveUps: collected.outcomes.reduce((n, o) => n + o.giveUps, 0),
      stuck: collected.outcomes.filter((o) => o.stuck).length,
      pingP50: ping.p50,
      sentPerAcquisition: totalCount(sent) / cycles,
      executedPerAcquisition: totalCount(executed) / cycles,
      sent,
      executed,
    };
  } finally {
    await session.close();
    await admin.quit().catch(() => admin.disconnect());
  }
}

/** `counts − minus`, dropping zero entries. */
function withoutCounts(counts: CommandCounts, minus: CommandCounts): CommandCounts {
  return diffCounts(counts, minus);
}

/** W workers in this process sharing one contender client and one workload connection. */
async function openInProcess(spec: ContenderSpec, url: string, options: ContendedOptions, key: string, counterKey: string): Promise<Session> {
  const data = connectData(url);
  const contender = await openContender(spec, url);
  await warmUp(contender, data, key, counterKey);
  return {
    async run(plan) {
      resetCommandMeter();
      const outcomes = await Promise.all(Array.from({ length: options.workers }, (_, worker) => runWorker(worker, contender, data, plan)));
      return { outcomes, sent: readCommandMeter() };
    },
    async close() {
      await contender.close();
      await data.quit().catch(() => data.disconnect());
    },
  };
}

const WORKER_SCRIPT = fileURLToPath(new URL('./worker-process.js', import.meta.url));

/** One worker process: its messages as promises. */
class WorkerProcess {
  readonly child: ChildProcess;
  readonly exited: Promise<number | null>;
  #waiting: ((message: FromWorker) => void) | undefined;
  #failure: Error | undefined;
  #failed: ((error: Error) => void) | undefined;

  constructor() {
    this.child = fork(WORKER_SCRIPT, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    this.exited = new Promise((resolve) => this.child.once('exit', (code) => resolve(code)));
    this.child.on('message', (message: FromWorker) => {
      if (message.type === 'error') this.#fail(new Error(`worker process failed: ${message.message}`));
      else this.#waiting?.(message);
    });
    this.child.once('exit', (code) => this.#fail(new Error(`worker process exited (code ${String(code)}) before replying`)));
  }

  #fail(error: Error): void {
    this.#failure ??= error;
    this.#failed?.(error);
  }

  /** Sends `message` and resolves with the next reply. */
  request(message: ToWorker): Promise<FromWorker> {
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

  /** Waits for the process to exit, killing it past `ms`. */
  async stop(ms: number): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const timer = setTimeout(() => this.child.kill('SIGKILL'), ms);
    await this.exited;
    clearTimeout(timer);
  }
}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** W worker processes, each with its own connections, opened and warmed up. */
async function openProcesses(spec: ContenderSpec, url: string, options: ContendedOptions, key: string, counterKey: string): Promise<Session> {
  const workers = Array.from({ length: options.workers }, () => new WorkerProcess());
  const stopAll = (): Promise<unknown> => Promise.all(workers.map((w) => w.stop(5_000)));
  try {
    await withTimeout(
      Promise.all(workers.map((w, worker) => w.request({ type: 'open', spec, url, worker, key, counterKey }))),
      PROCESS_TIMEOUT_MS,
      'starting the worker processes',
    );
  } catch (error) {
    for (const w of workers) w.child.kill('SIGKILL');
    await stopAll();
    throw error;
  }
  return {
    async run(plan) {
      const replies = await withTimeout(
        Promise.all(workers.map((w) => w.request({ type: 'go', plan }))),
        plan.hardStop - nowMs() + PROCESS_TIMEOUT_MS,
        'the worker processes',
      );
      const outcomes: WorkerOutcome[] = [];
      let sent: CommandCounts = {};
      for (const reply of replies) {
        if (reply.type !== 'result') throw new Error(`unexpected reply '${reply.type}' from a worker process`);
        outcomes.push(reply.outcome);
        sent = addCounts(sent, reply.sent);
      }
      return { outcomes, sent };
    },
    async close() {
      for (const w of workers) if (w.child.connected) w.child.send({ type: 'close' } satisfies ToWorker);
      await stopAll();
    },
  };
}
