/**
 * Hold-time and wait-time distributions per lock name, as padlock processes record them
 * (`recordTimings`, src/timings-recorder.ts) and the dashboard draws them (src/dashboard/): one small
 * hash per name, `<prefix>:{<name>}:timings`, in the lock's own Cluster slot, whose fields count
 * the times that fell in each of {@link TIMING_BUCKETS_MS} (`hold:<i>`, `wait:<i>`) and sum them
 * (`hold:sum`, `wait:sum`, ms). At most 2 × (16 + 1) + 2 fields, whatever the traffic; the hash
 * expires once nothing was recorded for its time to live (a day by default).
 */
import { hashTag } from './keys.js';
import { defineScript } from './stores/redis/adapters/script-runner.js';
import { luaSources } from './stores/redis/scripts/embedded.js';

/** Upper bounds of the histogram's buckets, in ms; a last bucket takes what is above the largest. */
export const TIMING_BUCKETS_MS: readonly number[] = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 30_000, 60_000, 300_000];

/** How long a name's histogram lives after its last recording, by default: a day. */
export const DEFAULT_TIMINGS_TTL_MS = 86_400_000;

/** What is measured: how long holds lasted, how long acquisitions waited for a lock another held. */
export type TimingMetric = 'hold' | 'wait';

/** The hash of lock `name`'s timings under `prefix`. */
export function timingsKey(prefix: string, name: string): string {
  return `${prefix}:{${hashTag(name)}}:timings`;
}

/** The suffix that tells a timings hash from a lock's keys when scanning. */
export const TIMINGS_SUFFIX = 'timings';

/** The bucket index of a time of `ms`. */
export function bucketOf(ms: number): number {
  const i = TIMING_BUCKETS_MS.findIndex((bound) => ms <= bound);
  return i === -1 ? TIMING_BUCKETS_MS.length : i;
}

/** One distribution, as read back. */
export interface Distribution {
  /** How many times were recorded. */
  readonly count: number;
  /** Their sum, in ms. */
  readonly sumMs: number;
  /** Counts per bucket: `TIMING_BUCKETS_MS.length + 1` of them, the last above the largest bound. */
  readonly buckets: readonly number[];
}

/** A name's two distributions. */
export interface Timings {
  /** How long holds lasted, from grant to release or loss. */
  readonly hold: Distribution;
  /** How long acquisitions waited for a lock another held (0 for a lock found free). */
  readonly wait: Distribution;
}

/** Reads HGETALL's flat field/value reply into {@link Timings}; unknown fields are ignored. */
export function parseTimings(flat: readonly string[]): Timings {
  const values = new Map<string, number>();
  for (let i = 0; i + 1 < flat.length; i += 2) values.set(flat[i] as string, Number(flat[i + 1]));
  const distribution = (metric: TimingMetric): Distribution => {
    const buckets = Array.from({ length: TIMING_BUCKETS_MS.length + 1 }, (_, i) => values.get(`${metric}:${i}`) ?? 0);
    return { count: buckets.reduce((a, b) => a + b, 0), sumMs: values.get(`${metric}:sum`) ?? 0, buckets };
  };
  return { hold: distribution('hold'), wait: distribution('wait') };
}

/** Adds increments to a name's histogram and renews its expiry (timings-record.lua). */
export const timingsRecordScript = defineScript('timings-record.lua', luaSources.timingsRecord, (reply): true => {
  if (reply !== 1) throw new TypeError(`timings-record.lua: unexpected reply ${JSON.stringify(reply)}`);
  return true;
});

/** Reads a name's histogram (timings-read.lua). */
export const timingsReadScript = defineScript('timings-read.lua', luaSources.timingsRead, (reply): Timings => {
  if (!Array.isArray(reply)) throw new TypeError(`timings-read.lua: unexpected reply ${JSON.stringify(reply)}`);
  return parseTimings(reply.map(String));
});
