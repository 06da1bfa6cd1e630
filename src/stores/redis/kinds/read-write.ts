/**
 * The read/write lock: many readers or one writer, each side a lock with the common API, both
 * reentrant per owner. Its waiters queue in Redis and wait as every queued kind does (queued-lock.ts);
 * the scripts admit them (direct handoff), writer-preferring: once a writer waits, new readers queue
 * behind it, and the readers queued behind a writer are admitted together when it leaves.
 *
 * Downgrade: a writer may take the read lock (in the write hold's async context, or passing its
 * owner token) and then release the write lock, reading on. Upgrade, a reader asking for the write
 * lock, is refused at once with `LockUpgradeError`: it would wait for its own read hold.
 */
import { monotonicNow } from '../../../clock.js';
import { LockUpgradeError } from '../../../errors.js';
import type { Hold } from '../../../hold.js';
import type { ResolvedAcquireOptions } from '../../../options.js';
import type { AcquireReply } from '../scripts/index.js';
import type { Shared } from '../../../shared.js';
import type { RedisContext } from '../redis-store.js';
import type { LockKindName } from '../../../store.js';
import type { ScriptCall } from '../topology/topology.js';
import type { WaitScope } from '../../../wait-scope.js';
import type { Grant } from '../../../locks/lock.js';
import type { ReadWriteLock } from '../../../locks/read-write-lock.js';
import { QueuedLock } from './queued-lock.js';
import { ReadWriteProtocol, readWriteKeys, type ReadWriteKeys, type ReadWriteSide } from './read-write-protocol.js';
import { refusalError } from './refusals.js';

/** One side of a read/write lock. */
abstract class ReadWriteSideLock extends QueuedLock {
  readonly family = 'readWrite';
  readonly kind: LockKindName = 'readWrite';
  protected readonly protocol: ReadWriteProtocol;
  /** The other side's keys: its `lock` names it in the hold registry and async context. */
  protected readonly other: ReadWriteKeys;

  constructor(shared: Shared, redis: RedisContext, name: string, side: ReadWriteSide) {
    super(shared, redis, name, readWriteKeys(side));
    this.protocol = new ReadWriteProtocol(readWriteKeys(side)(shared.prefix, this.name), redis.clientId, redis.topology.shardedPubSub);
    this.other = readWriteKeys(side === 'read' ? 'write' : 'read')(shared.prefix, this.name);
  }

  renewCall(holds: readonly Hold[], ms?: number): ScriptCall<number[]> {
    return ReadWriteProtocol.renew(holds, ms);
  }

  async releaseInStore(hold: Hold, count: number): Promise<number> {
    const reply = await this.redis.topology.run(this.protocol.release(hold.owner, count));
    if (reply.status !== 'released') throw refusalError(reply.status, this.name, hold.owner, 'release');
    return reply.remaining;
  }

  async forceRelease(): Promise<boolean> {
    this.shared.runtime.assertOpen(this.name);
    return this.tellHolders(await this.redis.topology.run(this.protocol.forceRelease()));
  }

  /** Admitted from the queue: the script handed the hold over, `"<owner> <fence> <pttl> <expiry>"`. */
  protected override grantFrom(message: string, lastSentAt: number): Grant | null {
    return this.handedOver(message, lastSentAt);
  }

  protected async reenterOnce(owner: string, leaseMs: number): Promise<Grant | null> {
    const sentAt = monotonicNow();
    const reply = await this.redis.topology.send(this.protocol.reenter(owner, leaseMs));
    if (reply.status === 'upgrade') throw new LockUpgradeError(this.name, owner);
    return reply.status === 'acquired' ? { ...reply, sentAt } : null;
  }
}

/** The read side: shared among readers. */
export class ReadLock extends ReadWriteSideLock {
  constructor(shared: Shared, redis: RedisContext, name: string) {
    super(shared, redis, name, 'read');
  }

  async isLocked(): Promise<boolean> {
    this.shared.runtime.assertOpen(this.name);
    return (await this.redis.topology.run(this.protocol.inspect())).readers > 0;
  }

  protected override async obtain(owner: string, options: ResolvedAcquireOptions, scope: WaitScope): Promise<Grant> {
    // A downgrade: inside the write hold's context, the read is the writer's own and never waits
    // behind the queue (it would wait for its own writer).
    const writer = this.shared.runtime.contextHold(this.other.lock);
    if (writer !== undefined) {
      const sentAt = monotonicNow();
      const abandon = (late: AcquireReply): void => {
        if (late.status === 'acquired') this.giveBack(owner, late.holdCount);
      };
      const reply = await scope.race(this.redis.topology.send(this.protocol.downgrade(owner, writer.owner, options.leaseMs)), abandon);
      if (reply.status === 'acquired') return { ...reply, sentAt };
      // The write hold is gone (lost meanwhile): an ordinary read.
    }
    return super.obtain(owner, options, scope);
  }
}

/** The write side: one owner, no readers. */
export class WriteLock extends ReadWriteSideLock {
  constructor(shared: Shared, redis: RedisContext, name: string) {
    super(shared, redis, name, 'write');
  }

  async isLocked(): Promise<boolean> {
    this.shared.runtime.assertOpen(this.name);
    return (await this.redis.topology.run(this.protocol.inspect())).writer;
  }

  protected override obtain(owner: string, options: ResolvedAcquireOptions, scope: WaitScope): Promise<Grant> {
    // An upgrade would wait for this context's own read hold to end: refused before anything is sent.
    if (this.shared.runtime.contextHold(this.other.lock) !== undefined) return Promise.reject(new LockUpgradeError(this.name));
    return super.obtain(owner, options, scope);
  }
}

/** Both sides of the read/write lock `name`. */
export function readWriteLock(shared: Shared, redis: RedisContext, name: string): ReadWriteLock {
  const write = new WriteLock(shared, redis, name);
  return { name: write.name, read: new ReadLock(shared, redis, name), write };
}
