/**
 * What a semaphore does the same way on every consensus store: an acquisition of n permits goes
 * through the store's lock for n permits (one per size asked, sharing the semaphore's queue), and
 * `isLocked`/`forceRelease` through the lock for 1; `limit` and `available` from one read of the
 * limit and the permits held. A store supplies that lock, that read, and how it stores the limit.
 */
import type { Lease } from '../lease.js';
import { checkName } from '../options.js';
import type { Lockable } from './lock.js';
import { checkPermits, splitPermits, type SemaphoreAcquireOptions, type SemaphoreLock } from './semaphore-lock.js';

export abstract class SizedSemaphore<Permits extends Lockable> implements SemaphoreLock {
  readonly name: string;
  readonly permits: number;

  /** @throws PadlockOptionError when `name` or `permits` is invalid */
  constructor(name: string, permits: unknown) {
    this.name = checkName(name);
    this.permits = checkPermits('permits', permits);
  }

  /** The lock whose holds are leases of `n` permits each. */
  protected abstract sized(n: number): Permits;

  /** The limit in force and the permits held now, as the store reads them. */
  protected abstract state(): Promise<{ limit: number; used: number }>;

  async limit(): Promise<number> {
    return (await this.state()).limit;
  }

  async available(): Promise<number> {
    const { limit, used } = await this.state();
    return Math.max(0, limit - used);
  }

  abstract setPermits(permits: number): Promise<void>;

  acquire(options?: SemaphoreAcquireOptions): Promise<Lease> {
    const [n, rest] = splitPermits(options);
    return this.sized(n).acquire(rest);
  }

  tryAcquire(options?: SemaphoreAcquireOptions): Promise<Lease | null> {
    const [n, rest] = splitPermits(options);
    return this.sized(n).tryAcquire(rest);
  }

  withLock<T>(fn: (lease: Lease) => T | Promise<T>, options?: SemaphoreAcquireOptions): Promise<T> {
    const [n, rest] = splitPermits(options);
    return this.sized(n).withLock(fn, rest);
  }

  isLocked(): Promise<boolean> {
    return this.sized(1).isLocked();
  }

  forceRelease(): Promise<boolean> {
    return this.sized(1).forceRelease();
  }
}
