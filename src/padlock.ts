/**
 * The client: options, the parts its locks share (topology, subscriber, watchdog, runtime), and
 * factories for each lock kind.
 */
import { EventEmitter } from 'node:events';
import { holdEvent, holdWarningEvent, type Emit, type PadlockEvents } from './events.js';
import type { Lease } from './lease.js';
import type { Lockable } from './locks/lock.js';
import type { ReadWriteLock } from './locks/read-write-lock.js';
import { MultiLock, type MultiLockable } from './locks/multi.js';
import { checkPermits, type SemaphoreLock } from './locks/semaphore-lock.js';
import { checkName, resolveCloseOptions, resolvePadlockOptions, type AcquireOptions, type CloseOptions, type PadlockOptions } from './options.js';
import { PadlockOptionError } from './errors.js';
import { ErrorReports } from './stores/redis/adapters/error-reports.js';
import { Runtime } from './runtime.js';
import type { Shared } from './shared.js';
import type { LockKindName, Store } from './store.js';
import { openStore } from './stores/open-store.js';
import { Watchdog } from './watchdog.js';
import { debug, debugEnabled } from './observability/debug-log.js';
import { Metrics } from './observability/metrics.js';
import type { Observer } from './observability/observer.js';
import { forgetOnExit, releaseOnExit } from './shutdown.js';
import { bothObservers, TimingsRecorder } from './timings-recorder.js';

/**
 * Distributed locks on Redis.
 *
 * @example
 * ```ts
 * const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
 * const padlock = new Padlock({ redis });
 * const total = await padlock.withLock('order:42', async (lease) => {
 *   // send lease.fence with every write to the protected store
 *   return 7;
 * }, { waitMs: 5_000 });
 * await padlock.close(); // releases what it holds; the client stays yours:
 * await redis.quit();
 * ```
 *
 * Events: `acquired`, `released`, `extended` (renewals too), `lost` (a `LockLostError`),
 * `holdWarning` (a hold has used 80 % of its lease without a renewal), `error` (renewal or
 * subscriber trouble; emitted only when someone listens, never thrown; one per outage, not one per
 * failed call: see {@link PadlockEvents}).
 */
export class Padlock extends EventEmitter<PadlockEvents> {
  /** The key prefix in use. */
  readonly prefix: string;
  /** The default lease in milliseconds. */
  readonly leaseMs: number;
  /** How long `close()` lets running `withLock` functions finish before it releases their locks, in milliseconds (`drainMs`). */
  readonly drainMs: number;
  /** How long this Padlock's liveness key lives after each write, in milliseconds (`livenessMs`). */
  readonly livenessMs: number;
  /** @internal What its locks share. */
  readonly shared: Shared;
  /** With `recordTimings`: its recorder, flushed by close(). */
  readonly #timings: TimingsRecorder | undefined;

  /** @throws PadlockOptionError when an option is invalid (nothing is sent to Redis). */
  constructor(options: PadlockOptions) {
    super();
    const resolved = resolvePadlockOptions(options);
    this.prefix = resolved.prefix;
    this.leaseMs = resolved.leaseMs;
    this.livenessMs = resolved.livenessMs;
    this.drainMs = resolved.drainMs;
    const emit: Emit = (event, ...args) => {
      // Timers call this: a listener's exception must not escape as an uncaught error, nor may an
      // 'error' event without a listener (EventEmitter would throw it).
      if (debugEnabled && event === 'lost') debug(`lost: ${String((args[0] as Error | undefined)?.message)}`);
      if (event === 'error' && this.listenerCount('error') === 0) return;
      try {
        (this.emit as (event: string, ...args: unknown[]) => boolean)(event, ...args);
      } catch (error) {
        process.emitWarning(`a padlock '${event}' listener threw: ${String(error)}`, 'PadlockListenerWarning');
      }
    };
    // One `error` event per outage, not one per failed call (stores/redis/adapters/error-reports.ts).
    const errorReports = new ErrorReports((error) => emit('error', error));
    const reportError = (error: unknown): void => errorReports.report(error);
    const store: Store = openStore(resolved, {
      track: (work) => runtime.track(work),
      holding: () => runtime.holds.size > 0,
      report: reportError,
      suspect: (name) => runtime.suspect(name),
    });
    this.#timings = resolved.recordTimings === undefined || resolved.store.kind !== 'redis' ? undefined : new TimingsRecorder(resolved.store.redis, this.prefix, resolved.recordTimings);
    const timings = this.#timings;
    const metrics = resolved.metrics === undefined ? undefined : new Metrics(resolved.metrics);
    const withMetrics = metrics === undefined ? timings : bothObservers(metrics, timings);
    // Metrics that record nothing (no OpenTelemetry SDK registered) are told nothing: they cost nothing.
    const observing = (): Observer | undefined => (metrics !== undefined && metrics.recording ? withMetrics : timings);
    // An event's payload is made only when someone listens (most applications listen to none).
    const listens = (event: keyof PadlockEvents): boolean => this.listenerCount(event) > 0;
    const watchdog = new Watchdog({
      renew: (holds) => {
        const renewing = store.renewMany(holds, reportError);
        const observer = observing();
        if (observer === undefined) return renewing;
        return renewing.then((remaining) => {
          holds.forEach((hold, i) => {
            const pttl = remaining[i];
            observer.renewal(hold.lock, pttl === undefined ? 'failed' : pttl > 0 ? 'renewed' : 'refused');
          });
          return remaining;
        });
      },
      groupOf: (hold) => store.renewalGroup(hold),
      renewed: (hold) => {
        if (listens('extended')) emit('extended', holdEvent(hold));
      },
      lost: (hold, reason) => runtime.lost(hold, reason),
      failed: reportError,
      warn: (hold) => {
        const warning = holdWarningEvent(hold);
        if (debugEnabled) debug(`holdWarning: ${warning.message}`);
        emit('holdWarning', warning);
      },
    });
    const runtime = new Runtime(watchdog, emit, listens, observing, store);
    this.shared = {
      store,
      watchdog,
      runtime,
      prefix: this.prefix,
      leaseMs: this.leaseMs,
      emit,
      listens,
      get observer() {
        return observing();
      },
    };
    if (resolved.releaseOnExit) releaseOnExit(this);
  }

  /**
   * A reentrant mutex: one owner at a time, woken by pub/sub when released.
   * @param name 1 to 1 000 characters, any Unicode
   */
  mutex(name: string): Lockable {
    this.#servable('mutex', name);
    return this.shared.store.mutex(this.shared, checkName(name));
  }

  /**
   * A fair (FIFO) reentrant mutex: waiters across all processes get the lock in arrival order,
   * handed over by the release itself. Shares its key with `mutex(name)`.
   * @param name 1 to 1 000 characters, any Unicode
   */
  fairMutex(name: string): Lockable {
    this.#servable('fairMutex', name);
    return this.shared.store.fairMutex(this.shared, checkName(name));
  }

  /**
   * A reentrant read/write lock: `read` is shared by any number of owners while no writer holds,
   * `write` is exclusive. Writer-preferring (once a writer waits, new readers queue behind it); a
   * writer may take the read lock and then release the write lock (downgrade); a reader asking for
   * the write lock is refused at once with `LockUpgradeError`. Each read hold has its own lease.
   * Refused on Redlock (`PadlockOptionError`). Its keys are its own: `mutex(name)` is another lock.
   * @param name 1 to 1 000 characters, any Unicode
   * @example
   * ```ts
   * const { read, write } = padlock.readWrite('config');
   * const value = await read.withLock(() => cache.get());
   * await write.withLock(async (lease) => store.put(next, { fence: lease.fence }));
   * ```
   */
  readWrite(name: string): ReadWriteLock {
    this.#servable('readWrite', name);
    return this.shared.store.readWrite(this.shared, checkName(name));
  }

  /**
   * One lock over several names, all or nothing: its one lease holds every name (a mutex hold of
   * each, under one owner), releases all, and its `signal` aborts when any is lost. Names are taken
   * one after another in one canonical order (sorted; duplicates folded), so callers asking for
   * overlapping sets in any order never deadlock; a time-out, abort or failure part-way releases the
   * names taken. Works wherever `mutex` does, with names in any Cluster slots. A name held here by
   * a mutex is held by a multi-lock over it, and the other way round (they share keys).
   * @param names a non-empty array of lock names (each 1 to 1 000 characters, any Unicode)
   * @throws PadlockOptionError when `names` is not a non-empty array of valid names (nothing is sent)
   */
  multi(names: readonly string[]): MultiLockable {
    const lock = new MultiLock(this.shared, names);
    this.#servable('multi', lock.name);
    return lock;
  }

  /**
   * A semaphore of `permits` permits across all processes: `acquire({ permits: n })` takes n at once
   * (default 1) as one lease, renewed while its holder lives and expiring on the server's clock if
   * it dies; waiters are served in FIFO order. `available()`, `setPermits(n)`. Refused on Redlock.
   * @param name 1 to 1 000 characters, any Unicode
   * @param permits the limit while none is stored by `setPermits`: an integer ≥ 1
   * @throws PadlockOptionError when `name` or `permits` is invalid, or on Redlock (nothing is sent to Redis)
   */
  semaphore(name: string, permits: number): SemaphoreLock {
    checkName(name);
    checkPermits('permits', permits);
    this.#servable('semaphore', name);
    return this.shared.store.semaphore(this.shared, name, permits);
  }

  /** Throws `PadlockOptionError` naming the kind and the topology when the topology refuses the kind. */
  #servable(kind: LockKindName, name: string): void {
    const why = this.shared.store.refuses(kind);
    if (why !== undefined) throw new PadlockOptionError(kind, `a lock kind that ${this.shared.store.description} can serve (${why})`, name);
  }

  /** Shorthand for `padlock.mutex(name).withLock(fn, options)`. */
  withLock<T>(name: string, fn: (lease: Lease) => T | Promise<T>, options?: AcquireOptions): Promise<T> {
    return this.mutex(name).withLock(fn, options);
  }

  /**
   * Closes this Padlock without ever handing a lock to someone else while the code that holds it
   * runs unwarned:
   * 1. new acquisitions are refused and pending waits reject with `PadlockClosedError` (a running
   *    `withLock` function may still re-enter the locks it holds);
   * 2. running `withLock` functions get `drainMs` (default: the Padlock's `drainMs`, 10 s) to
   *    finish; their leases keep renewing meanwhile, and each that finishes releases its lock as usual;
   * 3. every hold left (a function still running, or a lease from `acquire()` not yet released) has
   *    its `lease.signal` aborted with `PadlockClosedError` — a `withLock` still running then rejects
   *    with it once its function settles — and only then is it released (best effort, at most 5 s);
   * 4. renewals stop, and the connections padlock opened close. The `redis` client passed in stays
   *    open: it is the caller's.
   *
   * Safe to call twice (the second call waits for the first, whatever its options).
   * @throws PadlockOptionError (as a rejection) when `options` is invalid; nothing is closed then
   */
  close(options?: CloseOptions): Promise<void> {
    let drainMs: number;
    try {
      drainMs = resolveCloseOptions(options, this.drainMs);
    } catch (error) {
      return Promise.reject(error);
    }
    forgetOnExit(this);
    return this.shared.runtime.close(drainMs).then(() => this.#timings?.close());
  }
}
