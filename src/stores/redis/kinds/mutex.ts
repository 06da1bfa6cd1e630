/**
 * The reentrant mutex. Its waiters queue in Redis (queued-lock.ts); a release wakes the first live
 * waiter of the queue, in the release script itself (one waiter across all processes, no herd),
 * which tries again, though a newcomer may take the lock first (barging). The fair mutex
 * (fair-mutex.ts) hands the lock to that waiter outright instead.
 */
import { monotonicNow } from '../../../clock.js';
import type { Hold } from '../../../hold.js';
import type { Shared } from '../../../shared.js';
import type { RedisContext } from '../redis-store.js';
import type { ScriptCall } from '../topology/topology.js';
import type { Grant } from '../../../locks/lock.js';
import { MutexProtocol, type MutexKind } from './mutex-protocol.js';
import { QueuedLock } from './queued-lock.js';
import { refusalError } from './refusals.js';
import type { LockKindName } from '../../../store.js';

export class Mutex extends QueuedLock {
  readonly family = 'mutex';
  protected readonly protocol: MutexProtocol;

  constructor(shared: Shared, redis: RedisContext, name: string, kind: MutexKind = 'mutex') {
    super(shared, redis, name);
    this.protocol = new MutexProtocol(this.keys, kind, redis.clientId, redis.topology.shardedPubSub);
  }

  get kind(): LockKindName {
    return this.protocol.kind === 'fair' ? 'fairMutex' : 'mutex';
  }

  renewCall(holds: readonly Hold[], ms?: number): ScriptCall<number[]> {
    return MutexProtocol.renew(holds, ms);
  }

  async releaseInStore(hold: Hold, count: number): Promise<number> {
    const reply = await this.redis.topology.run(this.protocol.release(hold.owner, count));
    if (reply.status !== 'released') throw refusalError(reply.status, this.name, hold.owner, 'release');
    return reply.remaining;
  }

  async isLocked(): Promise<boolean> {
    this.shared.runtime.assertOpen(this.name);
    const state = await this.redis.topology.run(this.protocol.inspect());
    return state.fence > 0;
  }

  async forceRelease(): Promise<boolean> {
    this.shared.runtime.assertOpen(this.name);
    return this.tellHolders(await this.redis.topology.run(this.protocol.forceRelease()));
  }

  protected async reenterOnce(owner: string, leaseMs: number): Promise<Grant | null> {
    // A re-entry adds this client to the hold's clients: its liveness key must exist first.
    await this.redis.liveness.ensure();
    const sentAt = monotonicNow();
    const reply = await this.redis.topology.send(this.protocol.reenter(owner, leaseMs));
    return reply.status === 'acquired' ? { ...reply, sentAt } : null;
  }
}
