/**
 * What the dashboard shows, as data: the locks in use at one moment, their holders' liveness, the
 * recorded distributions and the audit log. A {@link DashboardSource} makes one; the page draws it.
 * Nothing here is Redis's: a store of another kind (ZooKeeper, etcd) would fill the same shape.
 */
import type { LockKind } from '../lock-state.js';
import type { Timings } from '../timings.js';

/** Whether a holder's client process is alive (its liveness key), as far as the store can tell. */
export type Liveness = 'alive' | 'dead' | 'unknown';

/** One holder of a lock. */
export interface HolderView {
  /** Its owner token, shortened for display (the first 8 characters and an ellipsis). */
  readonly owner: string;
  /** Re-entrant holds. */
  readonly holdCount: number;
  /** A read/write lock's holder: its side. */
  readonly side?: 'read' | 'write';
  /** A semaphore's holder: its permits. */
  readonly permits?: number;
  /** Whether its client is alive. */
  readonly liveness: Liveness;
}

/** One lock in use. */
export interface LockView {
  /** Its name. */
  readonly name: string;
  /** Its family. */
  readonly kind: LockKind;
  /** `mutex (fair)` when fair waiters queue; a semaphore's with its permits (`semaphore 2/3`). */
  readonly kindLabel: string;
  /** Whether someone holds it (a lock with waiters only is listed too). */
  readonly held: boolean;
  /** The current hold's fence; `null` when free. */
  readonly fence: number | null;
  /** Lease left, in ms; `null` when free. */
  readonly leaseMs: number | null;
  /** Since when this dashboard has seen this hold (the same fence), in ms; at least this old. */
  readonly heldForMs: number | null;
  /** Whether the hold was already there when the dashboard first looked (its age is then a lower bound). */
  readonly heldSinceStart: boolean;
  /** Who holds it (none: free, with waiters). */
  readonly holders: readonly HolderView[];
  /** A semaphore's permits used and limit (`null`: no stored limit). */
  readonly permits?: { readonly used: number; readonly limit: number | null };
  /** Live waiters. */
  readonly waiting: number;
  /** The longest-queued live waiter's wait, in ms; `null` when none. */
  readonly oldestWaitMs: number | null;
  /** Set when every client holding it is dead while its lease runs: what the reaper would do about it. */
  readonly dead?: { readonly reaper: string };
}

/** One force-release, as the audit log keeps it. */
export interface AuditEntry {
  /** When (ISO 8601, the dashboard's clock). */
  readonly at: string;
  /** Who: what `authorize(req)` returned, else the request's remote address. */
  readonly who: string;
  /** The lock. */
  readonly name: string;
  /** The lock's family. */
  readonly kind: LockKind;
  /** The fence of the hold it freed (`null`: it was free by then). */
  readonly fence: number | null;
  /** What the operator typed as the reason. */
  readonly why: string;
  /** Whether it freed a hold. */
  readonly released: boolean;
}

/** One name's recorded distributions. */
export interface TimingsView extends Timings {
  /** The name they were recorded under (a lock's, or the family `recordTimings.nameOf` gave). */
  readonly name: string;
}

/** Everything the page shows at one moment. */
export interface Snapshot {
  /** When it was read (ISO 8601). */
  readonly at: string;
  /** What the store is, for the header: `redis://127.0.0.1:6379 (one server)`. */
  readonly store: string;
  /** Whether force-release is offered. */
  readonly allowRelease: boolean;
  /** Locks in use, sorted by name then kind: the first {@link MAX_LOCKS}. */
  readonly locks: readonly LockView[];
  /** How many locks are in use in all (more than `locks` holds when cut at {@link MAX_LOCKS}). */
  readonly totalLocks: number;
  /** Recorded distributions, by name (names with locks in use first, then the others), at most {@link MAX_TIMINGS}. */
  readonly timings: readonly TimingsView[];
  /** The newest audit entries first. */
  readonly audit: readonly AuditEntry[];
  /** How long the read took, in ms. */
  readonly readMs: number;
}

/** Locks sent to the page at most (the page offers a filter by name). */
export const MAX_LOCKS = 1_000;

/** Distributions shown at most. */
export const MAX_TIMINGS = 24;

/** Audit entries shown. */
export const AUDIT_SHOWN = 20;

/** The first 8 characters of an owner token and an ellipsis (the whole token is never shown). */
export function shortOwner(owner: string): string {
  return owner.length <= 10 ? owner : `${owner.slice(0, 8)}…`;
}
