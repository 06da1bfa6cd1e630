/**
 * The read-mostly workload: W workers in one process (one Padlock, as an application would have),
 * each cycle a read (90 %) or a write, on one name. A read holds the lock while it GETs a value and
 * works for `holdMs`; a write GETs, works, and SETs the value + 1. The same workload runs on
 * padlock's read/write lock (reads share the read lock) and on padlock's mutex (every cycle takes
 * it), interleaved in rounds so that both see the same machine; acquisitions/s and the ratio are
 * what the target reads (read/write ≥ 3 × the mutex).
 */
import { Redis } from 'ioredis';
import { Padlock, type Lockable } from '../src/index.js';
import { fixed, rate, ratio, table } from './report.js';
import { nowMs, percentile, sorted } from './stats.js';

export interface ReadWriteBenchOptions {
  readonly workers: number;
  /** Measured seconds per lock, split over the rounds. */
  readonly seconds: number;
  /** Share of cycles that read (default 0.9). */
  readonly readShare?: number;
  /** Work inside each critical section, ms (default 2). */
  readonly holdMs?: number;
  /** Rounds each lock runs, interleaved (default 2). */
  readonly rounds?: number;
}

export interface ReadWriteBenchRow {
  readonly lock: 'readWrite' | 'mutex';
  readonly acquisitions: number;
  readonly reads: number;
  readonly writes: number;
  readonly seconds: number;
  readonly perSecond: number;
  readonly waitP50: number;
  readonly waitP99: number;
  /** Writes minus the counter's increase: updates lost to a broken exclusion. Must be 0. */
  readonly lostUpdates: number;
}

export interface ReadWriteBenchRun {
  readonly definition: string;
  readonly options: Required<ReadWriteBenchOptions>;
  readonly rows: readonly ReadWriteBenchRow[];
  /** readWrite acquisitions/s ÷ mutex acquisitions/s. */
  readonly ratio: number;
}

interface Tally {
  reads: number;
  writes: number;
  waits: number[];
  ms: number;
  lost: number;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** One round of `seconds` on one lock kind: a fresh Padlock and name, W workers. */
async function round(url: string, lock: ReadWriteBenchRow['lock'], options: Required<ReadWriteBenchOptions>, seconds: number, index: number, tally: Tally): Promise<void> {
  const redis = new Redis(url);
  const data = new Redis(url);
  const padlock = new Padlock({ redis });
  const name = `bench:rw:${lock}:${index}:${process.pid}`;
  const counter = `${name}:value`;
  const pick: (read: boolean) => Lockable =
    lock === 'mutex'
      ? ((mutex) => () => mutex)(padlock.mutex(name))
      : ((rw) => (read: boolean) => (read ? rw.read : rw.write))(padlock.readWrite(name));
  try {
    // Warm-up: scripts loaded, subscriber open.
    for (const read of [true, false]) await (await pick(read).acquire()).release();
    const started = nowMs();
    const deadline = started + seconds * 1000;
    let writes = 0;
    await Promise.all(
      Array.from({ length: options.workers }, async () => {
        while (nowMs() < deadline) {
          const read = Math.random() < options.readShare;
          const waitStart = nowMs();
          const lease = await pick(read).acquire();
          tally.waits.push(nowMs() - waitStart);
          const value = Number((await data.get(counter)) ?? 0);
          await sleep(options.holdMs);
          if (!read) {
            await data.set(counter, String(value + 1));
            writes++;
          }
          await lease.release();
          if (read) tally.reads++;
          else tally.writes++;
        }
      }),
    );
    tally.ms += nowMs() - started;
    tally.lost += writes - Number((await data.get(counter)) ?? 0);
  } finally {
    await padlock.close();
    redis.disconnect();
    data.disconnect();
  }
}

/** Runs the read-mostly workload on both locks, interleaved, on the server at `url`. */
export async function runReadWriteBench(url: string, given: ReadWriteBenchOptions, log: (line: string) => void): Promise<ReadWriteBenchRun> {
  const options: Required<ReadWriteBenchOptions> = { readShare: 0.9, holdMs: 2, rounds: 2, ...given };
  const tallies = { readWrite: emptyTally(), mutex: emptyTally() };
  const perRound = options.seconds / options.rounds;
  for (let i = 0; i < options.rounds; i++) {
    for (const lock of ['mutex', 'readWrite'] as const) {
      await round(url, lock, options, perRound, i, tallies[lock]);
      log(`  read-mostly, ${lock}, round ${i + 1}: ${rate(((tallies[lock].reads + tallies[lock].writes) * 1000) / tallies[lock].ms)} acq/s so far`);
    }
  }
  const rows = (['readWrite', 'mutex'] as const).map((lock): ReadWriteBenchRow => {
    const t = tallies[lock];
    const waits = sorted(t.waits);
    const acquisitions = t.reads + t.writes;
    return { lock, acquisitions, reads: t.reads, writes: t.writes, seconds: t.ms / 1000, perSecond: (acquisitions * 1000) / t.ms, waitP50: percentile(waits, 50), waitP99: percentile(waits, 99), lostUpdates: t.lost };
  });
  const [rw, mutex] = rows;
  return {
    definition: `${options.workers} workers in one process (one Padlock), one name, ${options.readShare * 100} % reads: a read holds the lock for a GET and ${options.holdMs} ms of work, a write for GET, ${options.holdMs} ms, SET; padlock.readWrite (reads share) vs padlock.mutex (every cycle exclusive), ${options.rounds} interleaved rounds each`,
    options,
    rows,
    ratio: rw !== undefined && mutex !== undefined ? rw.perSecond / mutex.perSecond : Number.NaN,
  };
}

function emptyTally(): Tally {
  return { reads: 0, writes: 0, waits: [], ms: 0, lost: 0 };
}

/** The section `npm run bench` prints. */
export function readWriteSections(run: ReadWriteBenchRun): string[] {
  const rows = run.rows.map((r) => [r.lock === 'readWrite' ? 'padlock readWrite' : 'padlock mutex', rate(r.perSecond), `${rate(r.reads)} / ${rate(r.writes)}`, fixed(r.waitP50, 2), fixed(r.waitP99, 2), String(r.lostUpdates)]);
  return [
    '',
    `## Read-mostly: ${run.definition}`,
    '',
    table(['lock', 'acq/s', 'reads / writes', 'wait p50 ms', 'wait p99 ms', 'lost updates'], rows),
    '',
    `read/write lock ÷ mutex: ${ratio(run.ratio)} (target ≥ 3×: ${run.ratio >= 3 ? 'met' : 'missed'})`,
  ];
}
