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
