/**
 * The hint for the one silent trap of a fixed lease: `withLock(fn, { leaseMs })` without
 * `autoExtend` is not renewed, so work that outlasts `leaseMs` loses its lock mid-way (a port from
 * redis-semaphore, whose `lockTimeout` renews, meets it first). When such a lease runs out while its
 * `withLock` function still runs, padlock says so once per process (`process.emitWarning`, code
 * {@link FIXED_LEASE_WARNING}). Nothing is said for a lease that renews, for a fixed lease whose
 * function ended in time, or for `acquire()` (whose holder may well have meant its lease to lapse).
 */
import { LockLostError } from '../errors.js';
import type { Hold } from '../hold.js';
import type { Lease } from '../lease.js';

/** The warning's code. */
export const FIXED_LEASE_WARNING = 'PADLOCK_FIXED_LEASE_EXPIRED';

let warned = false;

/** The holds behind a lease (a multi-lock's lease has several). */
function holdsOf(lease: Lease): readonly Hold[] {
  return 'holds' in lease ? (lease.holds as readonly Hold[]) : [lease.hold];
}

/**
 * Watches a `withLock` lease while its function runs: if it is a fixed lease and it runs out, warns
 * (once per process). Returns the function that stops watching. Costs nothing for a renewed lease.
 */
export function watchFixedLease(lease: Lease): () => void {
  if (warned) return noWatch;
  const holds = holdsOf(lease);
  if (holds.some((hold) => hold.autoExtend)) return noWatch;
  const signal = lease.signal;
  const expired = (): void => {
    const reason: unknown = signal.reason;
    if (warned || !(reason instanceof LockLostError) || reason.reason !== 'expired') return;
    warned = true;
    const leaseMs = Math.max(...holds.map((hold) => hold.leaseMs));
    process.emitWarning(
      `withLock("${lease.name}"): its fixed lease of ${leaseMs} ms (leaseMs without autoExtend: true) ran out while the function still ran, ` +
        'so the lock was lost mid-work. If the work may take longer, pass autoExtend: true to renew the lease while it runs, or leave leaseMs out (the default lease renews itself)',
      { type: 'PadlockWarning', code: FIXED_LEASE_WARNING },
    );
  };
  signal.addEventListener('abort', expired, { once: true });
  return () => signal.removeEventListener('abort', expired);
}

function noWatch(): void {}
