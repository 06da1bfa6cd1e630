/**
 * How a wait rides through an outage it has time for: a failover (Cluster, Sentinel), a slot move, a
 * client reconnecting, a database restarting. A call that fails transiently (each store says which
 * failures pass by themselves: src/stores/redis/adapters/transient.ts, src/stores/postgres/postgres-errors.ts)
 * is sent again after a back-off, doubling from {@link FIRST_BACKOFF_MS} to {@link MAX_BACKOFF_MS},
 * each drawn at random in its upper half so that the waiters of many processes do not come back
 * together. An outage is ridden through until the wait's deadline; a wait without one (`waitMs` ∞)
 * rides through at most `replyTimeoutMs` from the first failed call, so a dead store is still
 * reported, not waited on forever. Out of time, the wait fails with the outage's last unavailability
 * error, never a `LockTimeoutError`: that one means the store answered and the lock stayed held.
 */
import { randomInt } from 'node:crypto';
import { bound, monotonicNow } from './clock.js';
import { LockTimeoutError } from './errors.js';
import type { Abortable } from './interrupt.js';
import type { WaitScope } from './wait-scope.js';

/** The first back-off after a failed call. */
export const FIRST_BACKOFF_MS = 50;

/** The longest back-off: as long as a Redis waiter's heartbeat, about a Cluster's node time-out. */
export const MAX_BACKOFF_MS = 1_000;

/**
 * Whether a Padlock's waits have ever had the store answer. Only then is a failing call an outage to
 * ride through (a failover, a reconnect, a restart): a store never reached is down or misconfigured,
 * and the first wait says so at once instead of waiting out its `waitMs`.
 */
export class Contact {
  /** Some call of a wait was answered. */
  made = false;
}

/** One wait's current outage, if any. */
export class Outage {
  /** When the first failed call of the current outage was sent (monotonic); undefined while the store answers. */
  #since: number | undefined;
  #failures = 0;
  #last: Error | undefined;

  constructor(
    private readonly scope: WaitScope,
    private readonly contact: Contact,
    /** Whether a failed call may succeed if sent again a little later (the store's unavailability, not a refusal). */
    private readonly isTransient: (error: unknown) => boolean,
  ) {}

  /** The store answered a call: any outage is over. */
  answered(): void {
    this.contact.made = true;
    this.#since = undefined;
    this.#failures = 0;
    this.#last = undefined;
  }

  /**
   * Bounds a call made during an outage by a wait without a deadline: it may not outlast the
   * outage's allowance (each call's own bound is `replyTimeoutMs`, which could carry the wait a
   * whole reply time-out past it). A value the call brings after that goes to `late`.
   */
  race<T>(call: Promise<T>, late?: (value: T) => void): Promise<T> {
    const { scope } = this;
    const last = this.#last;
    if (this.#since === undefined || last === undefined || scope.waitMs !== Infinity) return call;
    return bound(call, { ms: this.#since + scope.replyTimeoutMs - monotonicNow(), timeout: () => last, late });
  }

  /**
   * A call sent at `sentAt` failed with `error`: waits out the back-off when the failure passes by
   * itself and the wait has time left; otherwise throws `error`. Rejects at once when the wait is
   * stopped meanwhile (its deadline, the caller's signal, close()).
   */
  async pause(error: unknown, sentAt: number): Promise<void> {
    const { scope } = this;
    if (scope.waitMs === 0 || !this.contact.made || !this.isTransient(error)) throw error;
    this.#since ??= sentAt;
    this.#last = error as Error; // transient: the store's unavailability error
    this.#failures++;
    const left = scope.waitMs === Infinity ? this.#since + scope.replyTimeoutMs - monotonicNow() : scope.remainingMs;
    if (left <= 0) throw error;
    const ceiling = Math.min(MAX_BACKOFF_MS, FIRST_BACKOFF_MS * 2 ** (this.#failures - 1));
    // As Redlock's split-vote back-off: randomInt (padlock draws nothing from Math.random).
    await sleep(Math.min(left, randomInt(Math.ceil(ceiling / 2), ceiling + 1)), scope.stop);
  }

  /**
   * What a wait that ends with `error` reports: its deadline passing during an outage is the store's
   * unavailability (the outage's last error), not a lock held too long.
   */
  outcome(error: unknown): unknown {
    return error instanceof LockTimeoutError && this.#since !== undefined ? this.#last : error;
  }
}

/** Resolves after `ms`, or rejects with `stop.reason` once `stop` aborts. Leaves no timer behind. */
function sleep(ms: number, stop: Abortable): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (stop.aborted) {
      reject(stop.reason);
      return;
    }
    const timer = setTimeout(() => {
      stopListening();
      resolve();
    }, ms);
    const stopListening = stop.onAbort(() => {
      clearTimeout(timer);
      reject(stop.reason);
    });
  });
}
