/**
 * The client: options, the connections padlock opens, and factories for each lock kind.
 */
import { EventEmitter } from 'node:events';
import type { Lease } from './lease.js';
import type { Lockable } from './locks/lock.js';
import { FairMutex } from './locks/fair-mutex.js';
import { Mutex } from './locks/mutex.js';
import { resolvePadlockOptions, type AcquireOptions, type PadlockOptions } from './options.js';
import { fromIoredis } from './redis/connection.js';
import { Runtime, type PadlockEvents } from './runtime.js';

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
 * Events: `acquired`, `released`, `extended` (renewals too), `lost` (a `LockLostError`), `error`
 * (renewal or subscriber trouble; emitted only when someone listens, never thrown).
 */
export class Padlock extends EventEmitter<PadlockEvents> {
  /** The key prefix in use. */
  readonly prefix: string;
  /** The default lease in milliseconds. */
  readonly leaseMs: number;
  /** @internal */
  readonly runtime: Runtime;

  /** @throws PadlockOptionError when an option is invalid (nothing is sent to Redis). */
  constructor(options: PadlockOptions) {
    super();
    const resolved = resolvePadlockOptions(options);
    this.prefix = resolved.prefix;
    this.leaseMs = resolved.leaseMs;
    this.runtime = new Runtime(fromIoredis(resolved.redis), resolved.prefix, resolved.leaseMs, resolved.replyTimeoutMs, (event, ...args) => {
      // Timers call this: a listener's exception must not escape as an uncaught error, nor may an
      // 'error' event without a listener (EventEmitter would throw it).
      if (event === 'error' && this.listenerCount('error') === 0) return;
      try {
        (this.emit as (event: string, ...args: unknown[]) => boolean)(event, ...args);
      } catch (error) {
        process.emitWarning(`a padlock '${event}' listener threw: ${String(error)}`, 'PadlockListenerWarning');
      }
    });
  }

  /**
   * A reentrant mutex: one owner at a time, woken by pub/sub when released.
   * @param name 1 to 1 000 characters, any Unicode
   */
  mutex(name: string): Lockable {
    return new Mutex(this.runtime, name);
  }

  /**
   * A fair (FIFO) reentrant mutex: waiters across all processes get the lock in arrival order,
   * handed over by the release itself. Shares its key with `mutex(name)`.
   * @param name 1 to 1 000 characters, any Unicode
   */
  fairMutex(name: string): Lockable {
    return new FairMutex(this.runtime, name);
  }

  /** Shorthand for `padlock.mutex(name).withLock(fn, options)`. */
  withLock<T>(name: string, fn: (lease: Lease) => T | Promise<T>, options?: AcquireOptions): Promise<T> {
    return this.mutex(name).withLock(fn, options);
  }

  /**
   * Rejects pending waits with `PadlockClosedError`, stops renewals, releases the locks this Padlock
   * holds (best effort, at most 5 s), and closes the connections padlock opened. The `redis`
   * client passed in stays open: it is the caller's. Safe to call twice.
   */
  close(): Promise<void> {
    return this.runtime.close();
  }
}
