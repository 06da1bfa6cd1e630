/**
 * The semaphore: `permits` permits shared by all processes; an acquisition takes n of them (default
 * 1) as one lease, with its own fence, renewed by the watchdog and expiring on the server's clock
 * if its holder dies. Waiters queue in Redis in FIFO order: a large request at the head is not
 * overtaken by smaller ones behind it. See docs/protocol.md, "Semaphore", for the keys and scripts.
 */
import { PadlockOptionError } from '../errors.js';
import type { Lease } from '../lease.js';
import { checkName, type AcquireOptions } from '../options.js';
import type { Shared } from '../shared.js';
import type { Lockable } from './lock.js';
import type { SemaphoreInspectReply } from '../scripts/index.js';
import { firstUse, limitDisagreement, rememberStored, storedBy, warnLimitDisagreement } from './semaphore-limits.js';
import { semaphoreKeys, SemaphoreProtocol } from './semaphore-protocol.js';
import { SemaphorePermits } from './semaphore-permits.js';

/** Options of a semaphore's `acquire`, `tryAcquire` and `withLock`. */
export interface SemaphoreAcquireOptions extends AcquireOptions {
  /**
   * How many permits this acquisition takes, all at once or none: an integer ≥ 1. A request over
   * the semaphore's limit rejects with `PermitLimitError` (it could never be granted). A re-entry
   * (nested in `withLock`, or with `owner`) keeps the permits already held, whatever it asks.
   * @default 1
   */
  permits?: number | undefined;
}

/**
 * A semaphore (`padlock.semaphore(name, permits)`): the common lock API, where each lease holds
 * some permits, plus `available()` and `setPermits(n)`.
 */
export interface SemaphoreLock extends Lockable {
  /** The limit this semaphore was made with: used while no limit is stored in Redis (see {@link setPermits}); {@link limit} says which applies. */
  readonly permits: number;
  /**
   * The limit in force for this code: the one stored by {@link setPermits}, else {@link permits}.
   * Emits the `PADLOCK_SEMAPHORE_LIMIT` warning (once per semaphore per process) when the stored
   * limit differs from {@link permits}, or other clients made the semaphore with other values.
   */
  limit(): Promise<number>;
  /**
   * Waits for `permits` permits (default 1; FIFO with every other waiter) up to `waitMs` (default
   * forever), and returns their lease. Rejects with `PermitLimitError` when more permits are asked
   * than the limit, also while waiting if `setPermits` lowers the limit below the request.
   */
  acquire(options?: SemaphoreAcquireOptions): Promise<Lease>;
  /** Takes the permits if they are free now and nobody waits ahead; `null` otherwise (with a `waitMs`, waits up to that long). */
  tryAcquire(options?: SemaphoreAcquireOptions): Promise<Lease | null>;
  /** Acquires the permits, runs `fn`, and releases them in `finally`; a nested acquisition re-enters. */
  withLock<T>(fn: (lease: Lease) => T | Promise<T>, options?: SemaphoreAcquireOptions): Promise<T>;
  /** Whether any permit is held by a holder whose lease has not run out (server clock). */
  isLocked(): Promise<boolean>;
  /** Frees every holder's permits (operators only) and admits the waiters that now fit; true when any was held. */
  forceRelease(): Promise<boolean>;
  /**
   * The limit (see {@link limit}) less the permits held by holders whose lease has not run out
   * (server clock); never below 0 (holders above a lowered limit keep their permits). Queued
   * waiters are not subtracted. Warns as {@link limit} does.
   */
  available(): Promise<number>;
  /**
   * Stores `permits` (an integer ≥ 1) as the limit, atomically, for every process: from then on it
   * replaces the creation value until the semaphore is unused for an hour. Raised: the waiters that
   * now fit are admitted at once. Lowered: holders keep their permits until they release; queued
   * waiters asking more than the new limit are refused (`PermitLimitError`) instead of waiting forever.
   */
  setPermits(permits: number): Promise<void>;
}

/** Checks a count of permits: an integer ≥ 1 (and at most 2^31 − 1). */
export function checkPermits(option: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 2_147_483_647) {
    throw new PadlockOptionError(option, 'an integer from 1 to 2147483647', value);
  }
  return value;
}

export class Semaphore implements SemaphoreLock {
  readonly name: string;
  readonly permits: number;
  readonly #shared: Shared;
  readonly #protocol: SemaphoreProtocol;

  constructor(shared: Shared, name: string, permits: unknown) {
    this.name = checkName(name);
    this.permits = checkPermits('permits', permits);
    this.#shared = shared;
    this.#protocol = new SemaphoreProtocol(semaphoreKeys(shared.prefix, this.name), this.permits, shared.clientId, shared.topology.shardedPubSub);
  }

  // The limit is checked once the call has been answered: a call refused for its options sends nothing.
  async acquire(options?: SemaphoreAcquireOptions): Promise<Lease> {
    const [lock, rest] = this.#split(options);
    const lease = await lock.acquire(rest);
    this.#checkOnFirstUse();
    return lease;
  }

  async tryAcquire(options?: SemaphoreAcquireOptions): Promise<Lease | null> {
    const [lock, rest] = this.#split(options);
    const lease = await lock.tryAcquire(rest);
    this.#checkOnFirstUse();
    return lease;
  }

  async withLock<T>(fn: (lease: Lease) => T | Promise<T>, options?: SemaphoreAcquireOptions): Promise<T> {
    const [lock, rest] = this.#split(options);
    return lock.withLock((lease) => {
      this.#checkOnFirstUse();
      return fn(lease);
    }, rest);
  }

  async limit(): Promise<number> {
    return (await this.#state()).limit;
  }

  isLocked(): Promise<boolean> {
    return this.#permits(1).isLocked();
  }

  forceRelease(): Promise<boolean> {
    return this.#permits(1).forceRelease();
  }

  async available(): Promise<number> {
    const state = await this.#state();
    return Math.max(0, state.limit - state.used);
  }

  /** The semaphore's state, and the warning if its limit is disputed. */
  async #state(): Promise<SemaphoreInspectReply> {
    this.#shared.runtime.assertOpen(this.name);
    const state = await this.#shared.topology.run(this.#protocol.inspect());
    this.#warnIfDisputed(state);
    return state;
  }

  #warnIfDisputed(state: SemaphoreInspectReply): void {
    const message = limitDisagreement(this.name, this.permits, state, storedBy(this.#shared, this.name));
    if (message !== undefined) warnLimitDisagreement(this.#shared.prefix, this.name, message);
  }

  /** The first time this Padlock uses the semaphore: its limit checked beside the call, never in its way. */
  #checkOnFirstUse(): void {
    if (!firstUse(this.#shared, this.name)) return;
    // Nothing to report if it fails: the call itself meets the same Redis and says so.
    this.#shared.topology.run(this.#protocol.inspect()).then(
      (state) => this.#warnIfDisputed(state),
      () => undefined,
    );
  }

  async setPermits(permits: number): Promise<void> {
    const limit = checkPermits('permits', permits);
    this.#shared.runtime.assertOpen(this.name);
    await this.#shared.topology.run(this.#protocol.setPermits(limit));
    rememberStored(this.#shared, this.name, limit);
  }

  /** The lock for the permits `options` ask, and the options the common lock reads (without `permits`). */
  #split(options: SemaphoreAcquireOptions | undefined): [SemaphorePermits, AcquireOptions | undefined] {
    if (typeof options !== 'object' || options === null || Array.isArray(options) || !('permits' in options)) return [this.#permits(1), options];
    const { permits, ...rest } = options;
    return [this.#permits(permits === undefined ? 1 : checkPermits('permits', permits)), rest];
  }

  #permits(n: number): SemaphorePermits {
    return new SemaphorePermits(this.#shared, this.name, this.#protocol, n);
  }
}
