/** Time as padlock's client side sees it: a monotonic clock, immune to wall-clock jumps. */
import { performance } from 'node:perf_hooks';
import { Deadline } from './deadlines.js';
import type { Abortable } from './interrupt.js';

/** Milliseconds on a monotonic clock (for deadlines; never compared with Redis time). */
export function monotonicNow(): number {
  return performance.now();
}

/**
 * The margin kept between a lease and the client's own deadline for it: clock rate differences
 * between client and server, plus a little for scheduling (as in the Redlock algorithm).
 */
export function driftMs(leaseMs: number): number {
  return Math.floor(leaseMs * 0.01) + 2;
}

/**
 * Waits for `work` to settle, but at most `ms`; never rejects. For best-effort clean-up (leaving a
 * queue, releasing on close) that must not hang on an unreachable Redis.
 */
export async function settleWithin(work: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)));
  await Promise.race([work.then(() => undefined, () => undefined), timeout]);
  clearTimeout(timer);
}

/** How {@link bound} limits a promise. */
export interface Bound<T> {
  /** Give up after this many milliseconds (Infinity: never). */
  readonly ms: number;
  /** The error to reject with when `ms` pass first. */
  readonly timeout: () => Error;
  /** Give up at once when this aborts, rejecting with its reason. */
  readonly interrupt?: Abortable | undefined;
  /** Receives the value if it arrives after the caller gave up (so what it obtained can be given back). */
  readonly late?: ((value: T) => void) | undefined;
}

/**
 * Settles like `work`, unless `ms` pass or `interrupt` aborts first. `work` keeps running either way;
 * a value it brings after that goes to `late`, and a late failure is ignored. The bound does not
 * keep the process alive: a bound is a limit, not work.
 */
export function bound<T>(work: Promise<T>, { ms, timeout, interrupt, late }: Bound<T>): Promise<T> {
  if (interrupt?.aborted === true) {
    work.then(late, () => undefined);
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
    // One shared timer serves every bound (deadlines.ts): most are cancelled, the reply came.
    const deadline = ms === Infinity ? undefined : new Deadline(ms, () => giveUp(timeout()));
    const stopListening = interrupt?.onAbort(() => giveUp(interrupt.reason));
    const cleanup = (): void => {
      stopListening?.();
      deadline?.cancel();
    };
    work.then(
      (value) => {
        if (settled) {
          late?.(value);
          return;
        }
        settled = true;
        cleanup();
        resolve(value);
      },
      (error: unknown) => giveUp(error),
    );
  });
}
