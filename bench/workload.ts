/**
 * What one worker does in a contended run, wherever it runs (in the parent or in a child process):
 * acquire a lock (the run's one lock, or one of its many picked at random), GET+SET
 * read-modify-write of that lock's counter, release, think, until the deadline.
 */
import { Redis } from 'ioredis';
import { readCommandMeter, readMessageMeter, readScriptMeter, resetCommandMeter, type CommandCounts } from './command-meter.js';
import type { Contender, Held } from './contenders.js';
import { nowMs, type AcquisitionRecord } from './stats.js';

/**
 * The locks a run's workers contend for: one (`key`, its counter at `counterKey`), or `locks`
 * distinct ones (`key:i`, each with its own counter `key:i:counter`) picked at random per cycle.
 */
export interface Workload {
  readonly key: string;
  readonly counterKey: string;
  readonly locks: number;
}

/** Lock `i` of `workload` (0 ≤ i < locks): its key and its counter's. */
export function lockAt(workload: Workload, i: number): { readonly key: string; readonly counterKey: string } {
  return workload.locks === 1 ? workload : { key: `${workload.key}:${i}`, counterKey: `${workload.key}:${i}:counter` };
}

/** Every counter of `workload`. */
export function counterKeys(workload: Workload): string[] {
  return Array.from({ length: workload.locks }, (_, i) => lockAt(workload, i).counterKey);
}

/** Timing of one run, on the shared monotonic clock (see `nowMs`). */
export interface RunPlan extends Workload {
  /** Workers start together at this instant. */
  readonly startAt: number;
  /** No new acquire call starts after this instant; calls in flight finish (the drain). */
  readonly deadline: number;
  /** A worker still waiting at this instant gives up (counted as stuck). */
  readonly hardStop: number;
  /** Mean think time between acquisitions in ms (uniform ±50 %); 0 for none. */
  readonly thinkMs: number;
  /**
   * I/O inside the lock, in ms: a timer of this length between the GET and the SET, standing for a
   * call to another service (the I/O-bound rows, `io-bound.ts`); 0 or absent for none.
   */
  readonly ioMs?: number;
}

/** What one worker saw. */
export interface WorkerOutcome {
  readonly records: AcquisitionRecord[];
  /** Acquire calls the library gave up on by its own limits (retried at once by the worker). */
  readonly giveUps: number;
  /** Whether the worker reached `hardStop` while waiting. */
  readonly stuck: boolean;
}

/** What a process's lock clients cost during a run: commands sent, pub/sub messages received, CPU time. */
export interface ClientUsage {
  readonly sent: CommandCounts;
  /** Script calls by SHA1. */
  readonly scripts: CommandCounts;
  readonly messages: number;
  /** User + system CPU time of the process (ms). */
  readonly cpuMs: number;
}

/** Runs `work` with the command meter reset, and says what this process's clients cost meanwhile. */
export async function metered<T>(work: () => Promise<T>): Promise<{ result: T; usage: ClientUsage }> {
  resetCommandMeter();
  const cpu = process.cpuUsage();
  const result = await work();
  const { user, system } = process.cpuUsage(cpu);
  return { result, usage: { sent: readCommandMeter(), scripts: readScriptMeter(), messages: readMessageMeter(), cpuMs: (user + system) / 1000 } };
}

/** Opens the connection the workload's GET+SET goes through. */
export function connectData(url: string): Redis {
  const client = new Redis(url, { lazyConnect: false });
  client.on('error', () => undefined);
  return client;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The critical section: a read-modify-write that loses updates unless the lock excludes (with `ioMs` of I/O between the read and the write). */
async function increment(data: Redis, counterKey: string, ioMs = 0): Promise<void> {
  const value = Number((await data.get(counterKey)) ?? 0);
  if (ioMs > 0) await sleep(ioMs);
  await data.set(counterKey, String(value + 1));
}

/** Acquires, retrying at once when the library gives up, until `hardStop`. */
async function acquireOrGiveUp(contender: Contender, key: string, hardStop: number): Promise<{ held: Held | null; giveUps: number }> {
  let giveUps = 0;
  for (;;) {
    const remaining = Math.floor(hardStop - nowMs());
    if (remaining <= 0) return { held: null, giveUps };
    const held = await contender.acquire(key, remaining);
    if (held !== null) return { held, giveUps };
    giveUps++;
  }
}

/** One full cycle on the first lock, outside any measurement (loads scripts, opens pub/sub connections lazily made). */
export async function warmUp(contender: Contender, data: Redis, workload: Workload): Promise<void> {
  const { key, counterKey } = lockAt(workload, 0);
  const { held } = await acquireOrGiveUp(contender, key, nowMs() + 30_000);
  if (held === null) throw new Error('warm-up could not acquire the lock within 30 s');
  await increment(data, counterKey);
  await held.release();
}

/** Runs worker `worker` under `plan`. */
export async function runWorker(worker: number, contender: Contender, data: Redis, plan: RunPlan): Promise<WorkerOutcome> {
  const records: AcquisitionRecord[] = [];
  let giveUps = 0;
  const delay = plan.startAt - nowMs();
  if (delay > 0) await sleep(delay);
  while (nowMs() < plan.deadline) {
    const lock = plan.locks === 1 ? 0 : Math.floor(Math.random() * plan.locks);
    const { key, counterKey } = lockAt(plan, lock);
    const waitStart = nowMs();
    const attempt = await acquireOrGiveUp(contender, key, plan.hardStop);
    giveUps += attempt.giveUps;
    if (attempt.held === null) return { records, giveUps, stuck: true };
    const acquiredAt = nowMs();
    await increment(data, counterKey, plan.ioMs);
    const releaseStart = nowMs();
    await attempt.held.release();
    records.push({ worker, lock, waitStart, acquiredAt, releaseStart });
    if (plan.thinkMs > 0) await sleep(plan.thinkMs * (0.5 + Math.random()));
  }
  return { records, giveUps, stuck: false };
}
