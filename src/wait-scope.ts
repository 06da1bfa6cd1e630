/**
 * The bounds of one acquire call: the caller's `signal`, the Padlock closing, and the `waitMs`
 * deadline. `signal` folds all three (for sleeping); `race` bounds one call to Redis.
 */
import { monotonicNow } from './clock.js';
import { LockTimeoutError, PadlockClosedError, RedisUnavailableError } from './errors.js';

/**
 * Every call to Redis gets at least this long to answer, even past `waitMs` (so a short wait never
 * fails a free lock for want of time); past both, a silent Redis is reported as unavailable.
 */
export const REPLY_GRACE_MS = 1_000;

export class WaitScope {
  /** Aborted by the caller's signal or by close(). */
  readonly #interrupt = new AbortController();
  /** Aborted by an interruption or by the deadline. */
  readonly #controller = new AbortController();
  readonly #started = monotonicNow();
  readonly #timer: NodeJS.Timeout | undefined;
  readonly #unlink: () => void;

  constructor(
    readonly lock: string,
    /** How long the call may wait: 0 means one attempt. */
    readonly waitMs: number,
    userSignal: AbortSignal | undefined,
    closing: AbortSignal,
  ) {
    const interrupt = (reason: unknown): void => {
      this.#interrupt.abort(reason);
      this.#controller.abort(reason);
    };
    const onUser = (): void => interrupt(userSignal?.reason);
    const onClose = (): void => interrupt(new PadlockClosedError(lock));
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

  /** Aborted when the call must stop waiting; `reason` is the error to reject with. */
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
   * Waits for a call to Redis unless the caller gives up or padlock closes, or — with a finite
   * `waitMs` — Redis stays silent past both the deadline and {@link REPLY_GRACE_MS}. If the wait
   * ends first, the call keeps running and `abandon` receives its value, so that whatever it
   * obtained can be given back.
   */
  race<T>(promise: Promise<T>, abandon?: (value: T) => void): Promise<T> {
    const interrupt = this.#interrupt.signal;
    if (interrupt.aborted) {
      promise.then(abandon, () => undefined);
      return Promise.reject(interrupt.reason);
    }
    return new Promise<T>((resolve, reject) => {
      let settled = false;
      const giveUp = (error: unknown): void => {
        if (settled) return;
        settled = true;
        cleanup();
        reject(error);
      };
      const onInterrupt = (): void => giveUp(interrupt.reason);
      const silence =
        this.waitMs === Infinity
          ? undefined
          : setTimeout(
              () => giveUp(new RedisUnavailableError(this.lock, this.timeout(), `no reply within ${Math.round(this.waitedMs)} ms`)),
              Math.max(this.remainingMs, REPLY_GRACE_MS),
            );
      const cleanup = (): void => {
        interrupt.removeEventListener('abort', onInterrupt);
        if (silence !== undefined) clearTimeout(silence);
      };
      interrupt.addEventListener('abort', onInterrupt, { once: true });
      promise.then(
        (value) => {
          if (settled) abandon?.(value);
          else {
            settled = true;
            cleanup();
            resolve(value);
          }
        },
        (error: unknown) => giveUp(error),
      );
    });
  }

  /** Clears the timer and listeners. */
  dispose(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#unlink();
  }
}
