/**
 * The reentrant mutex: one owner at a time, barging allowed. Waiters sleep on the lock's release
 * channel and are woken one per process per release, with a fallback timer bounded by the holder's
 * remaining lease for a holder that died without publishing anything.
 */
import { monotonicNow } from '../clock.js';
import { MAX_MS, type ResolvedAcquireOptions } from '../options.js';
import { acquireScript, type AcquireReply } from '../scripts/index.js';
import type { Watch } from '../subscriber.js';
import { newRequestId } from '../tokens.js';
import type { WaitScope } from '../wait-scope.js';
import { Lock, type Grant } from './lock.js';

/** Sleep this long when the holder's remaining lease is unknown (no expiry on the key). */
const UNKNOWN_LEASE_FALLBACK_MS = 1_000;

export class Mutex extends Lock {
  #attempt(owner: string, leaseMs: number, reentryOnly: boolean): Promise<AcquireReply> {
    return this.runtime.runner.run(
      acquireScript,
      [this.keys.lock, this.keys.fence],
      [owner, leaseMs, newRequestId(), reentryOnly ? '1' : '0'],
      this.name,
    );
  }

  protected async reenterOnce(owner: string, leaseMs: number): Promise<Grant | null> {
    const sentAt = monotonicNow();
    const reply = await this.#attempt(owner, leaseMs, true);
    return reply.status === 'acquired' ? { ...reply, sentAt } : null;
  }

  protected async obtain(owner: string, options: ResolvedAcquireOptions, scope: WaitScope): Promise<Grant> {
    // While this process already listens on the lock (other local waiters), start from there:
    // then one attempt suffices before sleeping.
    let watch: Watch | undefined = this.runtime.subscriber.isSubscribed(this.keys.released) ? this.runtime.subscriber.watch(this.keys.released) : undefined;
    const abandon = (late: AcquireReply): void => {
      if (late.status === 'acquired') this.giveBack(owner, late.holdCount);
    };
    try {
      if (watch !== undefined) await scope.race(watch.ready);
      for (;;) {
        const generation = watch?.generation;
        const sentAt = monotonicNow();
        const reply = await scope.race(this.#attempt(owner, options.leaseMs, false), abandon);
        if (reply.status === 'acquired') return { ...reply, sentAt };
        if (reply.status === 'not-held' || scope.waitMs === 0) throw scope.timeout();
        scope.check();
        if (watch === undefined) {
          // Subscribe, then try again: a release between the first attempt and the subscription
          // would otherwise go unseen.
          watch = this.runtime.subscriber.watch(this.keys.released);
          await scope.race(watch.ready);
          continue;
        }
        if (watch.generation !== generation) continue; // a release came while the attempt was in flight
        const fallback = reply.pttl > 0 ? reply.pttl + 1 : reply.pttl === -2 ? 0 : UNKNOWN_LEASE_FALLBACK_MS;
        await watch.sleep(Math.min(fallback, scope.remainingMs, MAX_MS), scope.signal);
      }
    } finally {
      watch?.close();
    }
  }
}
