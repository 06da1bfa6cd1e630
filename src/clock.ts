/** Time as padlock's client side sees it: a monotonic clock, immune to wall-clock jumps. */
import { performance } from 'node:perf_hooks';

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
