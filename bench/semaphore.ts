/**
 * The semaphore rows of `npm run bench`: padlock's semaphore against redis-semaphore's `Semaphore`,
 * 8 permits, 32 workers in one process, each looping acquire → INCR a counter → release → think.
 * Reports acquisitions per second and the p99 of the wait for permits, and padlock's ratios to the
 * peer (its defaults, and tuned: the faster of a few retry intervals). Target: ≥ 2× the peer.
 * `npm run bench -- --semaphore-only` runs these rows alone.
 */
import { Redis } from 'ioredis';
import { Semaphore as PeerSemaphore } from 'redis-semaphore';
import { Padlock } from '../src/index.js';
import { installedVersion } from './lineup.js';
import { fixed, rate, table } from './report.js';
import { nowMs, percentile, sorted } from './stats.js';

export const SEMAPHORE_PERMITS = 8;
export const SEMAPHORE_WORKERS = 32;

export interface SemaphoreRow {
  readonly label: string;
  readonly acquisitions: number;
  readonly perSecond: number;
  readonly waitP50: number;
  readonly waitP99: number;
  /** The most holders the workers counted inside at once (must be ≤ the permits). */
  readonly maxInside: number;
}

export interface SemaphoreBench {
  readonly definition: string;
  readonly peerVersion: string;
  readonly rows: readonly SemaphoreRow[];
  /** padlock's acquisitions/s over the fastest peer row's, and the lowest peer wait p99 over padlock's. */
  readonly throughputRatio: number;
  readonly waitP99Ratio: number;
}

/** One acquisition: resolves with a release. */
type Take = () => Promise<() => Promise<void>>;

interface Contender {
  readonly label: string;
  open(redis: Redis, name: string): { take: Take; close: () => Promise<void> };
}

const CONTENDERS: readonly Contender[] = [
  {
    label: `padlock semaphore (${SEMAPHORE_PERMITS} permits)`,
    open(redis, name) {
      const padlock = new Padlock({ redis });
      const sem = padlock.semaphore(name, SEMAPHORE_PERMITS);
      return {
        take: async () => {
          const lease = await sem.acquire();
          return () => lease.release();
        },
        close: () => padlock.close(),
      };
    },
  },
  ...[undefined, 1, 5].map(
    (retryInterval): Contender => ({
      label: retryInterval === undefined ? 'redis-semaphore Semaphore defaults' : `redis-semaphore Semaphore tuned (retryInterval ${retryInterval}, acquireTimeout 60 s)`,
      open(redis, name) {
        const options = retryInterval === undefined ? {} : { retryInterval, acquireTimeout: 60_000 };
        return {
          take: async () => {
            const sem = new PeerSemaphore(redis, name, SEMAPHORE_PERMITS, options);
            await sem.acquire();
            return () => sem.release();
          },
          close: () => Promise.resolve(),
        };
      },
    }),
  ),
];

function think(meanMs: number): Promise<void> {
  const ms = meanMs <= 0 ? 0 : -Math.log(1 - Math.random()) * meanMs;
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function runOne(contender: Contender, url: string, seconds: number, thinkMs: number, run: number): Promise<SemaphoreRow> {
  const redis = new Redis(url);
  const counter = new Redis(url);
  const name = `bench:semaphore:${run}`;
  const { take, close } = contender.open(redis, name);
  const warmUpMs = 300;
  const start = nowMs();
  const from = start + warmUpMs;
  const end = from + seconds * 1000;
  const waits: number[] = [];
  let inside = 0;
  let maxInside = 0;
  const worker = async (): Promise<void> => {
    while (nowMs() < end) {
      const asked = nowMs();
      const release = await take();
      const got = nowMs();
      inside++;
      maxInside = Math.max(maxInside, inside);
      await counter.incr(`${name}:count`);
      inside--;
      await release();
      if (asked >= from && got <= end) waits.push(got - asked);
      await think(thinkMs);
    }
  };
  await Promise.all(Array.from({ length: SEMAPHORE_WORKERS }, worker));
  await close();
  redis.disconnect();
  counter.disconnect();
  const s = sorted(waits);
  return { label: contender.label, acquisitions: waits.length, perSecond: waits.length / seconds, waitP50: percentile(s, 50), waitP99: percentile(s, 99), maxInside };
}

/** Runs every contender in turn on the server at `url`. */
export async function semaphoreBench(url: string, seconds: number, thinkMs: number, log: (line: string) => void): Promise<SemaphoreBench> {
  const rows: SemaphoreRow[] = [];
  for (const [i, contender] of CONTENDERS.entries()) {
    const row = await runOne(contender, url, seconds, thinkMs, i);
    log(`  ${row.label}: ${rate(row.perSecond)} acq/s, wait p99 ${fixed(row.waitP99, 2)} ms`);
    if (row.maxInside > SEMAPHORE_PERMITS) throw new Error(`${row.label}: ${row.maxInside} holders at once with ${SEMAPHORE_PERMITS} permits`);
    rows.push(row);
  }
  const [padlock, ...peers] = rows;
  if (padlock === undefined) throw new Error('no semaphore rows');
  const best = [...peers].sort((a, b) => b.perSecond - a.perSecond)[0] ?? padlock;
  return {
    definition: `${SEMAPHORE_WORKERS} workers in one process, ${SEMAPHORE_PERMITS} permits, each cycle acquire 1 permit → INCR → release → think (mean ${thinkMs} ms); ${seconds} s per row after 0.3 s of warm-up`,
    peerVersion: installedVersion('redis-semaphore'),
    rows,
    throughputRatio: padlock.perSecond / best.perSecond,
    waitP99Ratio: Math.min(...peers.map((r) => r.waitP99)) / padlock.waitP99,
  };
}

/** The section of the report. */
export function semaphoreSection(bench: SemaphoreBench): string[] {
  return [
    '',
    `## Semaphore: padlock vs redis-semaphore@${bench.peerVersion}`,
    '',
    bench.definition,
    '',
    table(
      ['contender', 'acq/s', 'wait p50 ms', 'wait p99 ms', 'max inside'],
      bench.rows.map((r) => [r.label, rate(r.perSecond), fixed(r.waitP50, 2), fixed(r.waitP99, 2), String(r.maxInside)]),
    ),
    '',
    `padlock vs redis-semaphore: ${fixed(bench.throughputRatio, 2)}× the acquisitions/s of its fastest row (target ≥ 2×); its lowest wait p99 is ${fixed(bench.waitP99Ratio, 2)}× padlock's`,
  ];
}
