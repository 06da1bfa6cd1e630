/**
 * One renewal scheduler per Padlock. A single timer wakes at the earliest due renewal or deadline;
 * each tick renews every hold that is due, in one script call per group of keys that one call can
 * touch (the whole server, or one Cluster slot), and declares lost every hold past its deadline.
 */
import { monotonicNow } from './clock.js';
import type { Hold } from './hold.js';

/** What the watchdog needs from its Padlock. */
export interface WatchdogHost {
  /**
   * Renews `holds` (all in one group) in one round trip; resolves with each one's remaining lease
   * (0: not held; `undefined`: not renewed this time, to be retried).
   */
  renew(holds: readonly Hold[]): Promise<readonly (number | undefined)[]>;
  /** Which round trip a hold's renewal can share (one per server, or per Cluster node). */
  groupOf(hold: Hold): string;
  /** The hold was renewed. */
  renewed(hold: Hold): void;
  /** The hold is lost. */
  lost(hold: Hold, reason: 'taken' | 'expired', cause?: unknown): void;
  /** A renewal failed for a reason other than the lock being gone (it will be retried). */
  failed(error: unknown): void;
  /** The hold has used 80 % of its lease without a renewal (`HOLD_WARNING_AT`: a fixed lease, or renewals failing). */
  warn(hold: Hold): void;
}

export class Watchdog {
  readonly #holds = new Set<Hold>();
  #timer: NodeJS.Timeout | undefined;
  #timerAt = Infinity;
  #stopped = false;

  constructor(private readonly host: WatchdogHost) {}

  /** Number of holds watched. */
  get size(): number {
    return this.#holds.size;
  }

  /** Starts watching a hold (its deadline always; its renewal when `autoExtend`). */
  add(hold: Hold): void {
    if (this.#stopped) return;
    this.#holds.add(hold);
    this.#scheduleAt(this.#wakeTime(hold));
  }

  /**
   * Stops watching a hold. The timer stays: it is unref'd, a tick with nothing to do ends it, and
   * the next hold (due later than it, in the common case of one lease length) re-arms nothing. A
   * lock taken and released over and over thus costs no timer per acquisition.
   */
  remove(hold: Hold): void {
    this.#holds.delete(hold);
  }

  /** Re-reads a hold's times (after a re-entry or an explicit extend changed them). */
  update(hold: Hold): void {
    if (this.#holds.has(hold)) this.#scheduleAt(this.#wakeTime(hold));
  }

  /** Stops the timer for good. */
  stop(): void {
    this.#stopped = true;
    this.#holds.clear();
    this.#clearTimer();
  }

  #wakeTime(hold: Hold): number {
    const due = hold.renews && !hold.renewing && !hold.releasing ? Math.min(hold.nextRenewAt, hold.deadline) : hold.deadline;
    return hold.warned ? due : Math.min(due, hold.warnAt);
  }

  #clearTimer(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#timerAt = Infinity;
  }

  #scheduleAt(at: number): void {
    if (this.#stopped || at >= this.#timerAt) return;
    this.#clearTimer();
    this.#timerAt = at;
    this.#timer = setTimeout(() => this.#tick(), Math.max(0, Math.ceil(at - monotonicNow())));
    // The lock's own connection keeps a process alive while it works; a renewal timer must not.
    this.#timer.unref();
  }

  #tick(): void {
    this.#timer = undefined;
    this.#timerAt = Infinity;
    const now = monotonicNow();
    const due = new Map<string, Hold[]>();
    let next = Infinity;
    for (const hold of this.#holds) {
      if (now >= hold.deadline) {
        this.#holds.delete(hold);
        this.host.lost(hold, 'expired');
        continue;
      }
      if (!hold.warned && now >= hold.warnAt) {
        hold.warned = true;
        this.host.warn(hold);
      }
      // Renew what is due now and what would be due within half an interval, so one call serves many.
      // A hold being released is not renewed: a renewal crossing the release would find the lock
      // gone, and the holder would be told "taken" in the middle of letting it go.
      if (hold.renews && !hold.renewing && !hold.releasing && hold.nextRenewAt - hold.renewEveryMs / 2 <= now) {
        const group = this.host.groupOf(hold);
        const list = due.get(group);
        if (list === undefined) due.set(group, [hold]);
        else list.push(hold);
        hold.renewing = true;
        next = Math.min(next, this.#wakeTime(hold));
      } else {
        next = Math.min(next, this.#wakeTime(hold));
      }
    }
    for (const holds of due.values()) void this.#renew(holds, now);
    if (next < Infinity) this.#scheduleAt(next);
  }

  async #renew(holds: readonly Hold[], sentAt: number): Promise<void> {
    let remaining: readonly (number | undefined)[] | undefined;
    let failure: unknown;
    try {
      remaining = await this.host.renew(holds);
    } catch (error) {
      failure = error;
    }
    for (const [i, hold] of holds.entries()) {
      hold.renewing = false;
      if (!this.#holds.has(hold) || hold.state !== 'held') continue;
      const pttl = remaining?.[i];
      if (hold.releasing) {
        // Sent before the release began: what it found is the release's to decide.
        this.#scheduleAt(this.#wakeTime(hold));
        continue;
      }
      if (pttl === undefined) {
        // Unreachable or refused: try again soon; the deadline still stands.
        hold.nextRenewAt = monotonicNow() + Math.max(10, hold.renewEveryMs / 4);
      } else if (pttl <= 0) {
        this.#holds.delete(hold);
        this.host.lost(hold, 'taken');
        continue;
      } else if (monotonicNow() >= hold.deadline) {
        // The reply came after the deadline had passed: the hold was already given up as lost.
        this.#holds.delete(hold);
        this.host.lost(hold, 'expired');
        continue;
      } else {
        hold.renewed(sentAt, pttl);
        this.host.renewed(hold);
      }
      this.#scheduleAt(this.#wakeTime(hold));
    }
    if (failure !== undefined) this.host.failed(failure);
  }
}
