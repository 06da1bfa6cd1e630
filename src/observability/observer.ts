/**
 * What padlock's parts tell an observer (the metrics): each acquisition's outcome, each refused
 * attempt, each hold's end, each renewal. A Padlock without metrics has none, and its parts skip
 * every call here after one `undefined` check.
 */
import type { LockLostReason } from '../errors.js';
import type { LockKindName } from '../store.js';

/** How an acquisition (`acquire`, `tryAcquire`, `withLock`) ended. */
export type AcquireOutcome =
  /** A fresh hold. */
  | 'acquired'
  /** A re-entry of a hold (nested `withLock`, or `acquire({ owner })`). */
  | 'reentered'
  /** The lock stayed held for `waitMs` (`tryAcquire` returned `null`). */
  | 'timeout'
  /** The caller's `signal` aborted the wait. */
  | 'aborted'
  /** The Padlock closed. */
  | 'closed'
  /** Redis did not answer in time, or no Redlock quorum. */
  | 'unavailable'
  /** Any other error (a re-entry by an owner that holds nothing, a refused command). */
  | 'error';

/** How a renewal by the watchdog went. */
export type RenewalOutcome =
  /** The lease was lengthened. */
  | 'renewed'
  /** The lock was gone or held by another: the hold is lost. */
  | 'refused'
  /** No answer or an error: retried, while the hold's deadline stands. */
  | 'failed';

/** A lock as an observer sees it. */
export interface ObservedLock {
  readonly kind: LockKindName;
  readonly name: string;
}

/** Receives what padlock does, as it happens. Must not throw. */
export interface Observer {
  /** An attempt of an acquisition found the lock held by another owner; `first` for the acquisition's first such attempt. */
  held(lock: ObservedLock, first: boolean): void;
  /**
   * An acquisition ended: `ms` since the call, and `waitedMs` since its first refused attempt
   * (`undefined` when it never found the lock held).
   */
  acquireEnded(lock: ObservedLock, outcome: AcquireOutcome, ms: number, waitedMs: number | undefined): void;
  /** A hold ended, `ms` after it was granted: released, or lost for `reason`. */
  holdEnded(lock: ObservedLock, ms: number, lost: LockLostReason | undefined): void;
  /** The watchdog's renewal of one hold had this outcome. */
  renewal(lock: ObservedLock, outcome: RenewalOutcome): void;
}
