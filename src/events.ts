/** The events a Padlock emits, and their payloads. */
import type { LockLostError } from './errors.js';
import { monotonicNow } from './clock.js';
import { HOLD_WARNING_AT, type Hold } from './hold.js';

/** Payload of the `acquired` event. */
export interface AcquiredEvent {
  /** The lock's name. */
  readonly name: string;
  /** The owner token of the hold. */
  readonly owner: string;
  /** The hold's fencing token (the same for every re-entry of one hold). */
  readonly fence: number;
  /** Re-entrant holds after this acquisition: 1 for a fresh one, more for a re-entry. */
  readonly holdCount: number;
  /** Milliseconds the call waited. */
  readonly waitedMs: number;
}

/** Payload of the `released` and `extended` events. */
export interface HoldEvent {
  /** The lock's name. */
  readonly name: string;
  /** The owner token of the hold. */
  readonly owner: string;
  /** The hold's fencing token (the same for every re-entry of one hold). */
  readonly fence: number;
  /** Conservative wall-clock end of the lease (for `extended`). */
  readonly expiresAt: number;
}

/** Why a `holdWarning` was given. */
export type HoldWarningReason =
  /** A lease the watchdog does not renew (`acquire({ leaseMs })`) is 80 % used: the work outlasts the lease it was given. */
  | 'fixed-lease'
  /** A renewed hold's renewals have not succeeded for 80 % of its lease (Redis unreachable or slow). */
  | 'renewals-failing';

/** Payload of the `holdWarning` event: a hold close to the end of its lease. */
export interface HoldWarningEvent {
  /** The lock's name. */
  readonly name: string;
  /** The owner token of the hold. */
  readonly owner: string;
  /** The hold's fencing token (the same for every re-entry of one hold). */
  readonly fence: number;
  /** Why the warning was given: a fixed lease nearly over, or renewals failing. */
  readonly reason: HoldWarningReason;
  /** Milliseconds since the hold was granted. */
  readonly heldMs: number;
  /** The lease last granted, in ms. */
  readonly leaseMs: number;
  /** Milliseconds until the hold counts as lost, unless released, extended or renewed. */
  readonly remainingMs: number;
  /** What is happening and what to do, in a sentence (the advice: size leases from measured hold times). */
  readonly message: string;
}

/** Events a Padlock emits. */
export interface PadlockEvents {
  /** A lock was acquired or re-entered by this Padlock. */
  acquired: [AcquiredEvent];
  /** A hold was released (its last re-entrant hold, or one of them). */
  released: [HoldEvent];
  /** A hold's lease was lengthened (the watchdog's renewal, or `lease.extend()`). */
  extended: [HoldEvent];
  /** A held lock was lost (taken over, or its lease ran out unrenewed): the lease's `signal` aborts with the same error. */
  lost: [LockLostError];
  /** A hold has used 80 % of its lease without a renewal: a fixed lease nearly over, or renewals failing. */
  holdWarning: [HoldWarningEvent];
  /**
   * Trouble in the background, never thrown: a renewal, the liveness key or the subscriber failed
   * (Redis unreachable or failing over, or a command refused). Emitted only while someone listens.
   * Coalesced, so that an outage is one event and not a stream: every kind of unavailability
   * (a closed connection, a refused reconnect, `CLUSTERDOWN`, no reply in time) counts as one
   * failure, any other error as its own (by class and message); after a failure is emitted, its
   * repeats are not, until 10 s have passed since (a lasting outage is reported again every 10 s).
   * Repeats left out are written to the debug log (`NODE_DEBUG=padlock`). A holder whose renewals
   * fail is still told on its own, by `holdWarning` and `lost`.
   */
  error: [Error];
}

/** How padlock's parts report events (the Padlock's emitter, guarded: it never throws). */
export type Emit = <E extends keyof PadlockEvents>(event: E, ...args: PadlockEvents[E]) => void;

/** The `holdWarning` payload of a hold that has used {@link HOLD_WARNING_AT} of its lease. */
export function holdWarningEvent(hold: Hold): HoldWarningEvent {
  const now = monotonicNow();
  const heldMs = Math.round(now - hold.grantedAt);
  const remainingMs = Math.max(0, Math.round(hold.deadline - now));
  const leaseMs = hold.grantedMs;
  const reason: HoldWarningReason = hold.autoExtend ? 'renewals-failing' : 'fixed-lease';
  const message =
    reason === 'fixed-lease'
      ? `lock "${hold.name}" has been held ${seconds(heldMs)} of its fixed ${seconds(leaseMs)} lease, and is lost in ${seconds(remainingMs)} unless released or extended: ` +
        'size leaseMs from measured hold times (the padlock.lock.hold.duration metric) with a margin, or leave leaseMs out so that the watchdog renews the lease'
      : `lock "${hold.name}": no renewal has succeeded for ${Math.round(HOLD_WARNING_AT * 100)} % of its ${seconds(leaseMs)} lease, and it is lost in ${seconds(remainingMs)} unless one does (is Redis reachable?)`;
  return { name: hold.name, owner: hold.owner, fence: hold.fence, reason, heldMs, leaseMs, remainingMs, message };
}

function seconds(ms: number): string {
  return ms < 10_000 ? `${(ms / 1_000).toFixed(1)} s` : `${Math.round(ms / 1_000)} s`;
}

/** The `released`/`extended` payload of a hold. */
export function holdEvent(hold: Hold): HoldEvent {
  return { name: hold.name, owner: hold.owner, fence: hold.fence, expiresAt: hold.expiresAt };
}
