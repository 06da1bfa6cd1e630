/**
 * Freeing a lock whoever holds it, through its kind's own `forceRelease()`: what `padlock release
 * --force` and the dashboard's Force release do.
 */
import type { LockState } from './lock-state.js';
import type { Padlock } from './padlock.js';

/**
 * Frees `lock` through its kind's own `forceRelease()`. A read/write lock: the read side first, so
 * that its waiters are admitted once, by the write side's release (or by the read side's when no
 * writer held it). A semaphore: admits waiters up to its stored limit, else `permits` (1 when not
 * given: never more than the code's own limit, at least 1; waiters asking more are woken to retry).
 */
export async function forceRelease(padlock: Padlock, lock: LockState, permits: number | undefined): Promise<boolean> {
  switch (lock.kind) {
    case 'mutex':
      return padlock.mutex(lock.name).forceRelease();
    case 'readWrite': {
      const { read, write } = padlock.readWrite(lock.name);
      const sides = new Set(lock.holders.map((h) => h.side));
      const readers = sides.has('read') && (await read.forceRelease());
      const writer = sides.has('write') && (await write.forceRelease());
      return readers || writer;
    }
    case 'semaphore':
      return padlock.semaphore(lock.name, lock.permits?.limit ?? permits ?? 1).forceRelease();
  }
}

