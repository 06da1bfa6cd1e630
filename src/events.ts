/** The events a Padlock emits, and their payloads. */
import type { LockLostError } from './errors.js';
import type { Hold } from './hold.js';

/** Payload of the `acquired` event. */
export interface AcquiredEvent {
  readonly name: string;
  readonly owner: string;
  readonly fence: number;
  readonly holdCount: number;
  /** Milliseconds the call waited. */
  readonly waitedMs: number;
}

/** Payload of the `released` and `extended` events. */
export interface HoldEvent {
  readonly name: string;
  readonly owner: string;
  readonly fence: number;
  /** Conservative wall-clock end of the lease (for `extended`). */
  readonly expiresAt: number;
}

/** Events a Padlock emits. */
export interface PadlockEvents {
  acquired: [AcquiredEvent];
  released: [HoldEvent];
  extended: [HoldEvent];
  lost: [LockLostError];
  error: [Error];
}

/** How padlock's parts report events (the Padlock's emitter, guarded: it never throws). */
export type Emit = <E extends keyof PadlockEvents>(event: E, ...args: PadlockEvents[E]) => void;

/** The `released`/`extended` payload of a hold. */
export function holdEvent(hold: Hold): HoldEvent {
  return { name: hold.name, owner: hold.owner, fence: hold.fence, expiresAt: hold.expiresAt };
}
