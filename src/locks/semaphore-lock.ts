/**
 * What a semaphore offers, whatever store keeps it: the common lock API with permits per lease,
 * `limit()`, `available()` and `setPermits(n)`.
 */
import { PadlockOptionError } from '../errors.js';
import type { Lease } from '../lease.js';
import type { AcquireOptions } from '../options.js';
import type { Lockable } from './lock.js';

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

/**
 * The permits `options` ask (1 when not given, checked), and the options the common lock reads
 * (without `permits`): a semaphore takes them through its lock for that many permits.
 */
export function splitPermits(options: SemaphoreAcquireOptions | undefined): [number, AcquireOptions | undefined] {
  if (typeof options !== 'object' || options === null || Array.isArray(options) || !('permits' in options)) return [1, options];
  const { permits, ...rest } = options;
  return [permits === undefined ? 1 : checkPermits('permits', permits), rest];
}
