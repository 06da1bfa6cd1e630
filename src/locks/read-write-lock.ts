/** What a read/write lock offers, whatever store keeps it: two sides, each a lock with the common API. */
import type { Lockable } from './lock.js';

/** The two sides of a read/write lock, as `padlock.readWrite(name)` returns them. */
export interface ReadWriteLock {
  /** The lock's name. */
  readonly name: string;
  /**
   * Shared: held by any number of owners at once while no writer holds. Its lease's `fence` is the
   * fence of the last write acquisition before it (see docs/protocol.md, "Read/write lock").
   */
  readonly read: Lockable;
  /** Exclusive: one owner, while no reader holds. Every write acquisition gets a fresh, greater fence. */
  readonly write: Lockable;
}
