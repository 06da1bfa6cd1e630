/**
 * One acquisition size of a semaphore: a lock whose holds are leases of `permits` permits each. It
 * waits as every queued kind does (queued-lock.ts): its scripts hand a waiter its permits outright
 * when they free up (release, expiry noticed by a script, `setPermits` up), so a message naming it
 * is a grant (`handedOver`). The semaphore (semaphore.ts) makes one per call, for the permits asked;
 * they all share the semaphore's keys, so a hold re-enters whichever size asks.
 */
import { monotonicNow } from '../../../clock.js';
import { PermitLimitError } from '../../../errors.js';
import type { Hold } from '../../../hold.js';
import type { Shared } from '../../../shared.js';
import type { RedisContext } from '../redis-store.js';
import type { LockKindName } from '../../../store.js';
import type { ScriptCall } from '../topology/topology.js';
import type { Grant } from '../../../locks/lock.js';
import { QueuedLock, type QueueProtocol } from './queued-lock.js';
import { refusalError } from './refusals.js';
import { semaphoreKeys, SemaphoreProtocol } from './semaphore-protocol.js';

export class SemaphorePermits extends QueuedLock {
  readonly family = 'semaphore';
  readonly kind: LockKindName = 'semaphore';
  protected readonly protocol: QueueProtocol;

  constructor(
    shared: Shared,
    redis: RedisContext,
    name: string,
    private readonly semaphore: SemaphoreProtocol,
    /** The permits each acquisition through this lock takes (an integer ≥ 1, checked by the caller). */
    readonly permits: number,
  ) {
    super(shared, redis, name, semaphoreKeys);
    this.protocol = {
      waiterChannel: semaphore.waiterChannel,
      attempt: (owner, leaseMs, mode, heartbeatMs, _ticket, place) => semaphore.attempt(owner, permits, leaseMs, mode, heartbeatMs, place),
      leave: (owner) => semaphore.leave(owner),
    };
  }

  renewCall(holds: readonly Hold[], ms?: number): ScriptCall<number[]> {
    return SemaphoreProtocol.renew(holds, ms);
  }

  async releaseInStore(hold: Hold, count: number): Promise<number> {
    const reply = await this.redis.topology.run(this.semaphore.release(hold.owner, count));
    if (reply.status !== 'released') throw refusalError(reply.status, this.name, hold.owner, 'release');
    return reply.remaining;
  }

  /** Any permit held by a live holder. */
  async isLocked(): Promise<boolean> {
    this.shared.runtime.assertOpen(this.name);
    const state = await this.redis.topology.run(this.semaphore.inspect());
    return state.used > 0;
  }

  async forceRelease(): Promise<boolean> {
    this.shared.runtime.assertOpen(this.name);
    return this.tellHolders(await this.redis.topology.run(this.semaphore.forceRelease()));
  }

  protected override grantFrom(message: string, lastSentAt: number): Grant | null {
    return this.handedOver(message, lastSentAt);
  }

  protected override overLimit(limit: number): Error {
    return new PermitLimitError(this.name, this.permits, limit);
  }

  protected async reenterOnce(owner: string, leaseMs: number): Promise<Grant | null> {
    // A re-entry adds this client to the hold's clients: its liveness key must exist first.
    await this.redis.liveness.ensure();
    const sentAt = monotonicNow();
    const reply = await this.redis.topology.send(this.semaphore.reenter(owner, leaseMs));
    return reply.status === 'acquired' ? { ...reply, sentAt } : null;
  }
}
