/**
 * The bounds of one acquire call: the caller's `signal`, the Padlock closing, and the `waitMs`
 * deadline. `stop` folds all three (for sleeping); `race` bounds one call to the store, also by
 * padlock's reply time-out. Both are {@link Interrupt}s, not AbortControllers: a scope is made per
 * acquisition (interrupt.ts says why).
 */
import { bound, monotonicNow } from './clock.js';
import { LockTimeoutError, PadlockClosedError, type StoreUnavailableError } from './errors.js';
import { Deadline } from './deadlines.js';
import { Interrupt, type Abortable } from './interrupt.js';

/**
 * Every call to the store within a wait gets at least this long to answer, even past `waitMs` (so a
 * short wait never fails a free lock for want of time); past both, a silent store is reported as
 * unavailable. A wait therefore ends at most this long after its `waitMs`.
 */
export const REPLY_GRACE_MS = 1_000;

export class WaitScope {
  /** Aborted by the caller's signal or by close(). */
  readonly #interrupt = new Interrupt();
  /** Aborted by an interruption or by the deadline. */
  readonly #stop = new Interrupt();
  readonly #started = monotonicNow();
  /** The `waitMs` deadline (on the shared timer, deadlines.ts); it keeps the process alive, as the wait does. */
  readonly #deadline: Deadline | undefined;
  /** The caller's signal and the listener on it (only when one was given). */
  readonly #userSignal: AbortSignal | undefined;
  readonly #onUser: (() => void) | undefined;
  /** Stops listening to close(). */
  readonly #stopClose: () => void;

  constructor(
    readonly lock: string,
    /** How long the call may wait: 0 means one attempt. */
    readonly waitMs: number,
    userSignal: AbortSignal | undefined,
    closing: Abortable,
    /** The longest any one call may wait for the store's reply. */
    readonly replyTimeoutMs: number,
    /** What a call may take beyond the store's own answer (a WAIT for replicas): added to the grace. */
    readonly extraReplyMs: number,
    /** Makes the error for a call with no reply within the given ms. */
    private readonly noReply: (lock: string, ms: number) => StoreUnavailableError,
  ) {
    // Made per acquisition: only the listeners it needs (one on close(), one on a signal if given).
    if (userSignal !== undefined) {
      const onUser = (): void => this.#interruptWith(userSignal.reason);
      userSignal.addEventListener('abort', onUser, { once: true });
      this.#userSignal = userSignal;
      this.#onUser = onUser;
    }
    this.#stopClose = closing.onAbort(() => this.#interruptWith(new PadlockClosedError(lock)));
    if (userSignal?.aborted === true) this.#interruptWith(userSignal.reason);
    else if (closing.aborted) this.#interruptWith(new PadlockClosedError(lock));
    if (waitMs > 0 && waitMs !== Infinity) {
      this.#deadline = new Deadline(waitMs, () => this.#stop.abort(this.timeout()), true);
    }
  }

  /** Aborted when the call must stop waiting; `reason` is the error to reject with. */
  get stop(): Abortable {
    return this.#stop;
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
    // Node's timers may fire a fraction of a millisecond before the monotonic clock says waitMs passed.
    return new LockTimeoutError(this.lock, this.waitMs === Infinity ? this.waitedMs : Math.max(this.waitedMs, this.waitMs));
  }

  /** Throws the abort reason if the scope is over. */
  check(): void {
    this.#stop.throwIfAborted();
  }

  /**
   * How long the next call to the store may wait for its reply: padlock's reply time-out, and within a
   * finite wait no later than the deadline — but always {@link REPLY_GRACE_MS} at least (capped by
   * the reply time-out), so a short wait never fails a free lock for want of time. So a wait ends
   * at most one grace after its `waitMs`.
   */
  get replyBoundMs(): number {
    const grace = Math.min(REPLY_GRACE_MS + this.extraReplyMs, this.replyTimeoutMs);
    return Math.min(this.replyTimeoutMs, Math.max(this.remainingMs, grace));
  }

  /**
   * Waits for a call to the store unless the caller gives up or padlock closes (at once), or the store stays
   * silent past {@link replyBoundMs} (`StoreUnavailableError`: on Redis, `RedisUnavailableError`). If the wait ends first, the call
   * keeps running and `abandon` receives its value, so that whatever it obtained can be given back.
   */
  race<T>(call: Promise<T>, abandon?: (value: T) => void): Promise<T> {
    const ms = this.replyBoundMs;
    return bound(call, { ms, interrupt: this.#interrupt, late: abandon, timeout: () => this.noReply(this.lock, ms) });
  }

  /** Monotonic time of the first attempt that found the lock held by another owner, if any. */
  firstHeldAt: number | undefined;
  /** Told of each attempt that found the lock held (`first`: the scope's first); set by the metrics. */
  onHeld: ((first: boolean) => void) | undefined;

  /** An attempt found the lock held by another owner (the lock kind reports it, for metrics). */
  foundHeld(): void {
    const first = this.firstHeldAt === undefined;
    this.firstHeldAt ??= monotonicNow();
    this.onHeld?.(first);
  }

  /** Cancels the deadline and the listeners. */
  dispose(): void {
    this.#deadline?.cancel();
    if (this.#onUser !== undefined) this.#userSignal?.removeEventListener('abort', this.#onUser);
    this.#stopClose();
  }

  #interruptWith(reason: unknown): void {
    this.#interrupt.abort(reason);
    this.#stop.abort(reason);
  }
}

/**
 * `error`, with a time-out's stack taken again where the acquire call rethrows it. A timer made the
 * error, and a timer's stack has none of the caller's frames; here V8's async stack holds every
 * caller that awaits the call. (Capturing the caller's frames when each call starts, in case it
 * times out, cost ~30 µs of CPU per acquisition: 13 % of an uncontended acquire+release.)
 */
export function withCallersStack(error: unknown): unknown {
  if (error instanceof LockTimeoutError) Error.captureStackTrace(error, withCallersStack);
  return error;
}
