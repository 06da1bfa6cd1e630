/**
 * The fair (FIFO) mutex. A waiter joins a queue in Redis; the release script hands the lock to the
 * queue head itself (direct handoff) and notifies only that waiter's client, which then holds the
 * lock without another round trip. Waiters refresh a heartbeat while they wait; the scripts skip a
 * waiter whose heartbeat ran out (it crashed), never a live one.
 */
import { driftMs, monotonicNow } from '../clock.js';
import { waiterChannel } from '../keys.js';
import { MAX_MS, type ResolvedAcquireOptions } from '../options.js';
import { TOMBSTONE_MS } from '../runtime.js';
import { fairAcquireScript, fairLeaveScript, type AcquireReply } from '../scripts/index.js';
import type { Watch } from '../subscriber.js';
import { newRequestId } from '../tokens.js';
import type { WaitScope } from '../wait-scope.js';
import { Lock, type Grant } from './lock.js';

/** A waiter refreshes its place in the queue at least this often. */
const HEARTBEAT_MS = 1_000;
/** A waiter that missed this many heartbeats in a row is taken for dead and skipped. */
const HEARTBEATS_ALLOWED = 3;
/** How long giving up may wait for Redis to take the waiter out of the queue. */
const LEAVE_TIMEOUT_MS = 2_000;

type Mode = 'try' | 'queue' | 'reenter';

export class FairMutex extends Lock {
  #attempt(owner: string, leaseMs: number, mode: Mode, heartbeatMs: number): Promise<AcquireReply> {
    const keys = this.keys;
    return this.runtime.runner.run(
      fairAcquireScript,
      [keys.lock, keys.fence, keys.queue, keys.waiters],
      [owner, leaseMs, newRequestId(), mode, this.runtime.clientId, heartbeatMs * HEARTBEATS_ALLOWED],
      this.name,
    );
  }

  protected async reenterOnce(owner: string, leaseMs: number): Promise<Grant | null> {
    const sentAt = monotonicNow();
    const reply = await this.#attempt(owner, leaseMs, 'reenter', HEARTBEAT_MS);
    return reply.status === 'acquired' ? { ...reply, sentAt } : null;
  }

  protected async obtain(owner: string, options: ResolvedAcquireOptions, scope: WaitScope): Promise<Grant> {
    // Short leases need frequent heartbeats: a handoff's lease is counted from the last one sent.
    const heartbeatMs = Math.max(5, Math.min(HEARTBEAT_MS, options.leaseMs / 3));
    const channel = waiterChannel(this.keys, this.runtime.clientId);
    let watch: Watch | undefined;
    let queued = false;
    const abandon = (late: AcquireReply): void => {
      if (late.status === 'acquired') this.giveBack(owner, late.holdCount);
    };
    try {
      // While this client already listens on the lock (other local waiters), join the queue at once.
      let mode: Mode = this.runtime.subscriber.isSubscribed(channel) ? 'queue' : 'try';
      for (;;) {
        if (mode === 'queue' && watch === undefined) {
          // Subscribe before joining the queue, so that the handoff message cannot be missed.
          watch = this.runtime.subscriber.watch(channel);
          await scope.race(watch.ready);
        }
        const sentAt = monotonicNow();
        const reply = await scope.race(this.#attempt(owner, options.leaseMs, mode, heartbeatMs), abandon);
        if (reply.status === 'acquired') return { ...reply, sentAt };
        if (scope.waitMs === 0) throw scope.timeout();
        if (mode === 'try') {
          mode = 'queue';
          continue;
        }
        queued = true;
        const message = watch?.take(owner) ?? (await watch?.sleep(Math.min(heartbeatMs, scope.remainingMs, MAX_MS), scope.signal, owner));
        const grant = message === undefined || message === null ? null : handoffGrant(message, sentAt);
        if (grant !== null) return grant;
        scope.check();
      }
    } catch (error) {
      if (queued) await this.#leave(owner);
      throw error;
    } finally {
      watch?.close();
    }
  }

  /** Leaves the queue; a lock handed over meanwhile goes on to the next waiter. Bounded, never throws. */
  async #leave(owner: string): Promise<void> {
    const keys = this.keys;
    const leave = this.runtime.runner.run(
      fairLeaveScript,
      [keys.lock, keys.fence, keys.queue, keys.waiters],
      [owner, keys.released, TOMBSTONE_MS],
      this.name,
    );
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((resolve) => (timer = setTimeout(resolve, LEAVE_TIMEOUT_MS)));
    await Promise.race([leave.then(() => undefined, () => undefined), timeout]);
    clearTimeout(timer);
  }
}

/**
 * Reads a handoff message, `"<owner> <fence> <pttl>"`. The lease began after the waiter's last
 * queue call was sent (the handoff can only follow it), so that call's send time bounds it safely.
 * A lease that would already be nearly over by that bound is confirmed by another attempt instead
 * (which also claims it), so `null` here means "ask Redis".
 */
function handoffGrant(message: string, lastSentAt: number): Grant | null {
  const [, fenceText, pttlText] = message.split(' ');
  const fence = Number(fenceText);
  const pttl = Number(pttlText);
  if (!Number.isInteger(fence) || !Number.isInteger(pttl)) return null;
  const remaining = lastSentAt + pttl - driftMs(pttl) - monotonicNow();
  if (remaining < pttl / 2) return null;
  return { fence, holdCount: 1, pttl, sentAt: lastSentAt };
}
