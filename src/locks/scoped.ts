/**
 * What `tryAcquire` and `withLock` add to an acquisition, whatever the lock (one hold, or a
 * multi-lock's several): written once, for every kind.
 */
import { LockTimeoutError, PadlockOptionError } from '../errors.js';
import type { Lease } from '../lease.js';
import { watchFixedLease } from './fixed-lease-warning.js';

/** `tryAcquire`: the lease, or `null` where the acquisition ran out of time. */
export async function leaseOrNull<L>(acquiring: Promise<L>): Promise<L | null> {
  try {
    return await acquiring;
  } catch (error) {
    if (error instanceof LockTimeoutError) return null;
    throw error;
  }
}

/**
 * `withLock`: acquires, runs `fn` with the lease and releases it, all within `scoped` (which binds
 * the lease's holds to the async context, so nested acquisitions re-enter them, and lets close()
 * see the call running until its release is done). If the lock was lost while `fn` ran, or close()
 * released it, rejects with the lease's signal's reason (`LockLostError`, `PadlockClosedError`) even
 * when `fn` succeeded: its lock did not cover the whole of `fn`.
 */
export async function withLease<L extends Lease, T>(
  fn: (lease: L) => T | Promise<T>,
  acquire: () => Promise<L>,
  scoped: (lease: L, body: () => Promise<T>) => Promise<T>,
): Promise<T> {
  if (typeof fn !== 'function') throw new PadlockOptionError('fn', 'a function', fn);
  const lease = await acquire();
  return scoped(lease, async () => {
    let result: T;
    const unwatch = watchFixedLease(lease);
    try {
      result = await fn(lease);
    } catch (error) {
      await lease.release().catch(() => undefined);
      throw error;
    } finally {
      unwatch();
    }
    const loss = lease.loss;
    if (loss !== undefined) {
      await lease.release().catch(() => undefined);
      throw loss.error;
    }
    await lease.release();
    return result;
  });
}
