/**
 * The bounds of one acquire call: the caller's `signal`, the Padlock closing, and the `waitMs`
 * deadline, folded into one AbortSignal whose reason is the error the call rejects with.
 */
import { monotonicNow } from './clock.js';
import { LockTimeoutError, PadlockClosedError, RedisUnavailableError } from './errors.js';

export class WaitScope {
  readonly #controller = new AbortController();
  readonly #started = monotonicNow();
  readonly #timer: NodeJS.Timeout | undefined;
  readonly #unlink: () => void;

  constructor(
    readonly lock: string,
    /** How long the call may wait; 0 means one attempt, which is never cut short by the deadline. */
    readonly waitMs: number,
    userSignal: AbortSignal | undefined,
    closing: AbortSignal,
  ) {
    const onUser = (): void => this.#controller.abort(userSignal?.reason);
    const onClose = (): void => this.#controller.abort(new PadlockClosedError(lock));
    userSignal?.addEventListener('abort', onUser, { once: true });
    closing.addEventListener('abort', onClose, { once: true });
    this.#unlink = () => {
      userSignal?.removeEventListener('abort', onUser);
      closing.removeEventListener('abort', onClose);
    };
    if (userSignal?.aborted) onUser();
    else if (closing.aborted) onClose();
    if (waitMs > 0 && waitMs !== Infinity) {
      this.#timer = setTimeout(() => this.#controller.abort(this.timeout()), waitMs);
    }
  }

  /** Aborted when the call must give up; `reason` is the error to reject with. */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** Milliseconds since the call started. */
  get waitedMs(): number {
    return monotonicNow() - this.#started;
  }

  /** Milliseconds left to wait (Infinity when unbounded). */
  get remainingMs(): number {
    return this.waitMs === Infinity ? Infinity : Math.max(0, this.waitMs - this.waitedMs);
  }

  /** The error for running out of time. */
  timeout(): LockTimeoutError {
    return new LockTimeoutError(this.lock, this.waitedMs);
  }

  /** Throws the abort reason if the scope is over. */
  check(): void {
    this.signal.throwIfAborted();
  }

  /**
   * Waits for `promise` unless the scope ends first. If it does, the promise keeps running and
   * `abandon` receives its value, so that whatever it obtained can be given back.
   */
  race<T>(promise: Promise<T>, abandon?: (value: T) => void): Promise<T> {
    const signal = this.signal;
    if (signal.aborted) {
      promise.then(abandon, () => undefined);
      return Promise.reject(this.#unanswered(signal.reason));
    }
    return new Promise<T>((resolve, reject) => {
      let settled = false;
      const onAbort = (): void => {
        settled = true;
        reject(this.#unanswered(signal.reason));
      };
      signal.addEventListener('abort', onAbort, { once: true });
      promise.then(
        (value) => {
          signal.removeEventListener('abort', onAbort);
          if (settled) abandon?.(value);
          else resolve(value);
        },
        (error: unknown) => {
          signal.removeEventListener('abort', onAbort);
          if (!settled) reject(error);
        },
      );
    });
  }

  /**
   * The wait ran out while Redis had not answered a call: that is Redis being unreachable or
   * frozen, not the lock being busy, so say so (the time-out is the cause).
   */
  #unanswered(reason: unknown): unknown {
    return reason instanceof LockTimeoutError ? new RedisUnavailableError(this.lock, reason, 'no reply before the wait ran out') : reason;
  }

  /** Clears the timer and listeners. */
  dispose(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#unlink();
  }
}
