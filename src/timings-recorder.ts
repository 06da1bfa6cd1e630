/**
 * `recordTimings`: a Padlock's hold and wait times, added up per lock name into the small histograms
 * of src/timings.ts, for the dashboard to draw. Opt-in. Times are counted in memory and sent every
 * {@link FLUSH_MS} (one script call per name recorded since the last flush, in the background; a
 * failure drops that batch: these are statistics, never worth a retry queue), and once more by
 * `close()`. On Redlock the histograms live on the first master only: statistics need no quorum.
 */
import { settleWithin } from './clock.js';
import { PadlockOptionError, type LockLostReason } from './errors.js';
import type { AcquireOutcome, ObservedLock, Observer, RenewalOutcome } from './observability/observer.js';
import type { CommandConnection } from './stores/redis/adapters/connection.js';
import { ScriptRunner } from './stores/redis/adapters/script-runner.js';
import { bucketOf, DEFAULT_TIMINGS_TTL_MS, timingsKey, timingsRecordScript, type TimingMetric } from './timings.js';

/** How often recorded times are sent to Redis. */
export const FLUSH_MS = 2_000;
/** Names held in memory between two flushes at most; times of further names wait for the next flush's room (dropped). */
const MAX_PENDING_NAMES = 1_000;
/** How long close() waits for the last flush. */
const CLOSE_FLUSH_MS = 1_000;

/** Options of `recordTimings` (PadlockOptions). */
export interface RecordTimingsOptions {
  /**
   * The name a lock's times are recorded under; `undefined` records nothing for it. With one lock
   * per entity (`order:42`), map names to a family (`name => name.split(':')[0]`) so that one
   * histogram stands for them all instead of one per entity.
   * @default the lock's own name
   */
  nameOf?: ((lockName: string) => string | undefined) | undefined;
  /**
   * How long a histogram lives after its last recording, in ms (1 000 to 2 147 483 647).
   * @default 86400000 (a day)
   */
  ttlMs?: number | undefined;
}

/** Validated `recordTimings`. */
export interface ResolvedRecordTimings {
  readonly nameOf: (lockName: string) => string | undefined;
  readonly ttlMs: number;
}

/** Validates `recordTimings`: `true`, `false`, `undefined` or {@link RecordTimingsOptions}. */
export function resolveRecordTimings(value: unknown): ResolvedRecordTimings | undefined {
  if (value === undefined || value === false) return undefined;
  if (value === true) return { nameOf: (name) => name, ttlMs: DEFAULT_TIMINGS_TTL_MS };
  const expected = 'true, false, or an object { nameOf?, ttlMs? }';
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new PadlockOptionError('recordTimings', expected, value);
  const { nameOf, ttlMs, ...rest } = value as Record<string, unknown>;
  const unknown = Object.keys(rest)[0];
  if (unknown !== undefined) throw new PadlockOptionError(`recordTimings.${unknown}`, 'one of nameOf, ttlMs (unknown option)', rest[unknown]);
  if (nameOf !== undefined && typeof nameOf !== 'function') throw new PadlockOptionError('recordTimings.nameOf', 'a function (lockName) => string | undefined', nameOf);
  if (ttlMs !== undefined && (typeof ttlMs !== 'number' || !Number.isInteger(ttlMs) || ttlMs < 1_000 || ttlMs > 2_147_483_647)) {
    throw new PadlockOptionError('recordTimings.ttlMs', 'an integer from 1000 to 2147483647', ttlMs);
  }
  return { nameOf: (nameOf as ((name: string) => string | undefined) | undefined) ?? ((name) => name), ttlMs: ttlMs ?? DEFAULT_TIMINGS_TTL_MS };
}

/** Counts hold and wait times per name and sends them to Redis now and then. */
export class TimingsRecorder implements Observer {
  readonly #runner: ScriptRunner;
  readonly #prefix: string;
  readonly #options: ResolvedRecordTimings;
  /** Per histogram key: field → increment, since the last flush. */
  #pending = new Map<string, Map<string, number>>();
  #timer: NodeJS.Timeout | undefined;
  #flushing: Promise<void> | undefined;
  #closed = false;

  /**
   * @param redis the Padlock's connection, or its Redlock masters (the first one is written)
   */
  constructor(redis: CommandConnection | readonly CommandConnection[], prefix: string, options: ResolvedRecordTimings) {
    const connection = Array.isArray(redis) ? (redis as readonly CommandConnection[])[0] : (redis as CommandConnection);
    if (connection === undefined) throw new PadlockOptionError('redis', 'at least one client', redis);
    this.#runner = new ScriptRunner(connection);
    this.#prefix = prefix;
    this.#options = options;
  }

  held(): void {}

  acquireEnded(lock: ObservedLock, outcome: AcquireOutcome, ms: number, waitedMs: number | undefined): void {
    // Every fresh grant counts (most wait 0: that is the picture too); a time-out waited its whole wait.
    if (outcome === 'acquired') this.#add(lock.name, 'wait', waitedMs ?? 0);
    else if (outcome === 'timeout') this.#add(lock.name, 'wait', waitedMs ?? ms);
  }

  holdEnded(lock: ObservedLock, ms: number, lost: LockLostReason | undefined): void {
    void lost;
    this.#add(lock.name, 'hold', ms);
  }

  renewal(lock: ObservedLock, outcome: RenewalOutcome): void {
    void lock;
    void outcome;
  }

  /** Sends what is pending and stops the timer; later times are not recorded. At most 1 s. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    await settleWithin(this.flush(), CLOSE_FLUSH_MS);
  }

  /** Sends the times counted since the last flush (one call per name, in parallel). */
  flush(): Promise<void> {
    const batch = this.#pending;
    this.#pending = new Map();
    if (batch.size === 0) return this.#flushing ?? Promise.resolve();
    const ttl = this.#options.ttlMs;
    const sent = Promise.allSettled(
      [...batch].map(([key, fields]) => this.#runner.send(timingsRecordScript, [key], [ttl, ...[...fields].flatMap(([field, n]) => [field, n])])),
    ).then(() => undefined);
    const all = Promise.all([this.#flushing, sent]).then(() => undefined);
    this.#flushing = all;
    void all.then(() => {
      if (this.#flushing === all) this.#flushing = undefined;
    });
    return all;
  }

  #add(lockName: string, metric: TimingMetric, ms: number): void {
    if (this.#closed) return;
    let name: string | undefined;
    try {
      name = this.#options.nameOf(lockName);
    } catch {
      return; // An observer must not throw: a failing nameOf records nothing.
    }
    if (name === undefined || name === '') return;
    const key = timingsKey(this.#prefix, name);
    let fields = this.#pending.get(key);
    if (fields === undefined) {
      if (this.#pending.size >= MAX_PENDING_NAMES) return;
      fields = new Map();
      this.#pending.set(key, fields);
    }
    const rounded = Math.max(0, Math.round(ms));
    for (const field of [`${metric}:${bucketOf(rounded)}`, `${metric}:sum`]) fields.set(field, (fields.get(field) ?? 0) + (field.endsWith(':sum') ? rounded : 1));
    this.#schedule();
  }

  #schedule(): void {
    if (this.#timer !== undefined) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      void this.flush();
    }, FLUSH_MS);
    // Statistics must not keep the process alive; close() sends what is left.
    this.#timer.unref();
  }
}

/** `first` and `second` told everything, in that order (`undefined` ones left out). */
export function bothObservers(first: Observer | undefined, second: Observer | undefined): Observer | undefined {
  if (first === undefined || second === undefined) return first ?? second;
  return {
    held: (lock, isFirst) => (first.held(lock, isFirst), second.held(lock, isFirst)),
    acquireEnded: (lock, outcome, ms, waitedMs) => (first.acquireEnded(lock, outcome, ms, waitedMs), second.acquireEnded(lock, outcome, ms, waitedMs)),
    holdEnded: (lock, ms, lost) => (first.holdEnded(lock, ms, lost), second.holdEnded(lock, ms, lost)),
    renewal: (lock, outcome) => (first.renewal(lock, outcome), second.renewal(lock, outcome)),
  };
}
