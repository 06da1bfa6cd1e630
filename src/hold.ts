/**
 * One owner's hold on one lock, as this process knows it. Nested leases of the same owner share a
 * hold; the watchdog renews holds, not leases.
 */
import { driftMs, monotonicNow } from './clock.js';
import type { LockKeys } from './keys.js';
import type { LockKindName } from './store.js';

/** A hold warns (`holdWarning`) once this share of its lease has gone by without a renewal. */
export const HOLD_WARNING_AT = 0.8;

/** Where a hold stands. */
export type HoldState = 'held' | 'released' | 'lost';

/** What a hold (and its leases) ask of the lock it belongs to. */
export interface HoldLock {
  /** The lock's kind, by its factory's name (for metrics). */
  readonly kind: LockKindName;
  /** The lock's name. */
  readonly name: string;
  /** Holds of locks with the same family are renewed by the same script, so may share a call. */
  readonly family: string;
  /**
   * Looks at `holds` in the store without lengthening any lease: each one's remaining lease in ms,
   * ≤ 0 where the store no longer has it. Rejects when the store does not answer.
   */
  check(holds: readonly Hold[]): Promise<number[]>;
  /** Releases `count` holds in the store; resolves with the holds the owner has left. Rejects `LockNotHeldError`. */
  releaseInStore(hold: Hold, count: number): Promise<number>;
  /** A lease's `release()`: releases `count` holds and keeps the books (released, lost). */
  release(hold: Hold, count: number): Promise<void>;
  /** A lease's `extend(ms)`. */
  extend(hold: Hold, ms: unknown, leaseReleased: boolean): Promise<void>;
}

export class Hold {
  /** Holds taken by this process under this owner (a cross-process owner may hold more). */
  count = 0;
  /** Lease renewed by the watchdog (the longest asked for). */
  leaseMs: number;
  /** Whether the watchdog renews this hold. */
  autoExtend: boolean;
  /** Monotonic time after which the hold counts as lost unless a renewal succeeded. */
  deadline: number;
  /** Monotonic time at which the watchdog should renew next. */
  nextRenewAt: number;
  /** The remaining lease the server granted at the last grant or renewal. */
  grantedMs: number;
  /** A renewal is on its way. */
  renewing = false;
  /**
   * Its owner's last count is being released in the store. A renewal or check that finds the lock
   * gone meanwhile may be seeing that release, not a loss: the release's answer decides.
   */
  releasing = false;
  state: HoldState = 'held';
  /** Made on the first read of {@link signal} (most holds never have theirs read: interrupt.ts says why that matters). */
  #controller: AbortController | undefined;
  /** The loss, once {@link abortSignal} told of it. */
  #lost: { readonly error: unknown } | undefined;
  /** Monotonic time at which the granting command was sent (hold times count from it). */
  readonly grantedAt: number;
  /** A `holdWarning` was given for the lease as it stands (cleared when a renewal moves it on). */
  warned = false;
  /** Its key in the runtime's registry, made once when registered (the release finds it by the same). */
  registryKey: string | undefined = undefined;

  constructor(
    readonly keys: LockKeys,
    readonly owner: string,
    readonly fence: number,
    readonly lock: HoldLock,
    leaseMs: number,
    autoExtend: boolean,
    sentAt: number,
    pttl: number,
  ) {
    this.leaseMs = leaseMs;
    this.autoExtend = autoExtend;
    this.grantedAt = sentAt;
    this.deadline = sentAt + pttl - driftMs(leaseMs);
    this.grantedMs = pttl;
    this.nextRenewAt = sentAt + this.renewEveryMs;
  }

  /** Renew after a third of the lease, or of the granted time when that was shorter (a fair handoff's first lease). */
  get renewEveryMs(): number {
    return Math.min(this.leaseMs, this.grantedMs) / 3;
  }

  /** Whether the watchdog renews this hold: always with `autoExtend`, else once to lengthen a shorter grant to the asked lease. */
  get renews(): boolean {
    return this.autoExtend || this.grantedMs < this.leaseMs;
  }

  /**
   * Monotonic time at which {@link HOLD_WARNING_AT} of the lease granted last will have gone by
   * without a renewal: a fixed lease nearly used up, or renewals failing.
   */
  get warnAt(): number {
    return this.deadline - this.grantedMs * (1 - HOLD_WARNING_AT);
  }

  /** The lock's name. */
  get name(): string {
    return this.keys.name;
  }

  /** Held, and not past the local deadline (checked on every read: a stalled loop cannot fool it). */
  get alive(): boolean {
    return this.state === 'held' && monotonicNow() < this.deadline;
  }

  /**
   * Records a successful renewal or re-entry: the server said `pttl` ms remain, for a command sent at
   * `sentAt`. Only ever moves the deadline later.
   */
  renewed(sentAt: number, pttl: number): void {
    this.deadline = Math.max(this.deadline, sentAt + pttl - driftMs(this.leaseMs));
    this.grantedMs = pttl;
    this.nextRenewAt = sentAt + this.renewEveryMs;
    if (this.warnAt > monotonicNow()) this.warned = false;
  }

  /** Wall-clock estimate of the end of the lease (conservative). */
  get expiresAt(): number {
    return Date.now() + Math.max(0, this.deadline - monotonicNow());
  }

  /** Aborted with the loss's error once the hold is lost (see Lease.signal); made on first read. */
  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.#lost !== undefined) this.#controller.abort(this.#lost.error);
    }
    return this.#controller.signal;
  }

  /** The loss {@link signal} aborts with, once told (read without making the signal). */
  get loss(): { readonly error: unknown } | undefined {
    return this.#lost;
  }

  /** Aborts {@link signal} with `error` (now, or when it is first read). */
  abortSignal(error: unknown): void {
    this.#lost ??= { error };
    this.#controller?.abort(error);
  }
}
