/**
 * What every lock kind on ZooKeeper shares: a {@link Lock} whose hold is one ephemeral sequential
 * child of the lock's znode (zookeeper-lock.ts). A kind says which role its children take and which
 * roles count as its own (a read/write lock's two sides share one znode).
 */
import { monotonicNow } from '../../clock.js';
import { LockNotHeldError } from '../../errors.js';
import type { Hold } from '../../hold.js';
import type { LockKeys } from '../../keys.js';
import { Lock, type Grant } from '../../locks/lock.js';
import type { ResolvedAcquireOptions } from '../../options.js';
import type { Shared } from '../../shared.js';
import type { LockKindName } from '../../store.js';
import type { WaitScope } from '../../wait-scope.js';
import type { Role } from './znode-queue.js';
import { zkCode, ZK } from './zookeeper-client.js';
import { lockPath, type ZooKeeperGrant, type ZooKeeperLock } from './zookeeper-lock.js';
import type { ZooKeeperStore } from './zookeeper-store.js';

/** A ZooKeeper lock's identity in the hold registry and the async context (one per side of a lock). */
export function zooKeeperIdentity(store: ZooKeeperStore, family: string, side: string, name: string): string {
  return `zookeeper ${side} ${lockPath(store.root, family, name)}`;
}

function zooKeeperKeys(store: ZooKeeperStore, family: string, side: string): (prefix: string, name: string) => LockKeys {
  return (_prefix, name) => ({ name, lock: zooKeeperIdentity(store, family, side, name), queue: '', released: '' });
}

export abstract class ZooKeeperKind extends Lock {
  /** The lock's recipe (shared with every kind this store made for the same lock). */
  readonly recipe: ZooKeeperLock;

  constructor(
    shared: Shared,
    protected readonly store: ZooKeeperStore,
    name: string,
    readonly family: string,
    readonly kind: LockKindName,
    /** The role of the children this kind creates. */
    protected readonly role: Role,
    /** The roles of the children that are this kind's holds. */
    protected readonly roles: readonly Role[],
    /** The permits each acquisition takes (1 but for the semaphore). */
    protected readonly permits = 1,
    /** The semaphore's limit while none is stored (1 for other kinds). */
    limit = 1,
  ) {
    super(shared, name, zooKeeperKeys(store, family, role));
    this.recipe = store.recipe(family, this.name, limit);
  }

  /** `owner`'s child for this kind, if it has one. */
  childOf(owner: string): Promise<string | undefined> {
    return this.recipe.childPath(owner, this.roles);
  }

  renew(holds: readonly Hold[], ms?: number): Promise<number[]> {
    return this.store.renew(holds, ms);
  }

  async releaseInStore(hold: Hold, count: number): Promise<number> {
    let child: string | undefined;
    const final = count >= hold.count;
    return this.store
      .call(this.name, async () => {
        child = await this.childOf(hold.owner);
        let left: number;
        try {
          left = await this.recipe.release(hold.owner, count, this.roles);
        } catch (error) {
          if (zkCode(error) !== ZK.connectionLoss) throw error;
          // The answer was lost, not the call (a server died, a leader changed): asked again once
          // connected, a child already gone was this release's own delete, not another's take.
          left = await this.store.ops.whileConnectionLost(() => this.recipe.release(hold.owner, count, this.roles)).catch((again: unknown) => {
            if (again instanceof LockNotHeldError) return 0;
            throw again;
          });
        }
        if (left === 0 && child !== undefined) this.store.unfixLease(child);
        return left;
      })
      .catch((error: unknown) => {
        // The common lock drops a hold whose release failed, expecting its lease to run out; the
        // session keeps the child while it lives, so the child is deleted here, in the background.
        if (!(error instanceof LockNotHeldError) && final && child !== undefined) this.store.abandon(this.recipe, child);
        throw error;
      });
  }

  protected async reenterOnce(owner: string, leaseMs: number): Promise<Grant | null> {
    return this.store.call(this.name, async () => {
      const sentAt = monotonicNow();
      const grant = await this.reenterChild(owner);
      if (grant === null) return null;
      // A fixed lease re-entered lasts at least `leaseMs` more, as on Redis (never shortened).
      this.store.moveFixedLease(this.recipe, grant.path, sentAt + leaseMs);
      return this.#grant(grant, sentAt, leaseMs, undefined);
    });
  }

  /** Re-enters `owner`'s child of this kind: one hold more. */
  protected reenterChild(owner: string): Promise<ZooKeeperGrant | null> {
    return this.recipe.reenter(owner, this.roles);
  }

  protected async obtain(owner: string, options: ResolvedAcquireOptions, scope: WaitScope): Promise<Grant> {
    try {
      await scope.race(this.store.ready(this.name));
      const sentAt = monotonicNow();
      const grant = await this.take(owner, options, scope);
      if (grant === null) throw scope.timeout();
      return this.#grant(grant, sentAt, options.leaseMs, options.autoExtend ? undefined : monotonicNow() + options.leaseMs);
    } catch (error) {
      throw this.store.unavailable(this.name, error);
    }
  }

  /** Takes a fresh child for `owner` (waiting when `waitMs` > 0); `null` when held and not waiting. */
  protected take(owner: string, options: ResolvedAcquireOptions, scope: WaitScope): Promise<ZooKeeperGrant | null> {
    return this.recipe.take({ role: this.role, owner, permits: this.permits }, scope, options.waitMs > 0);
  }

  async isLocked(): Promise<boolean> {
    this.shared.runtime.assertOpen(this.name);
    const state = await this.store.call(this.name, () => this.recipe.inspect());
    return state.holders.some((p) => this.roles.includes(p.role));
  }

  async forceRelease(): Promise<boolean> {
    this.shared.runtime.assertOpen(this.name);
    return this.store.call(this.name, () => this.recipe.forceRelease());
  }

  /**
   * A grant as the common lock reads it: its lease is the session's conservative deadline (and, for a
   * fixed lease ending at `fixedEnd`, no later than that end, when this client deletes the child).
   */
  #grant(grant: ZooKeeperGrant, sentAt: number, leaseMs: number, fixedEnd: number | undefined): Grant {
    if (fixedEnd !== undefined) this.store.fixLease(this.recipe, grant.path, fixedEnd);
    return { fence: grant.fence, holdCount: grant.holdCount, pttl: this.store.leaseFrom(sentAt, leaseMs, grant.path), sentAt };
  }
}
