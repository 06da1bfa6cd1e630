/**
 * What every etcd lock kind shares: its place in etcd (a key prefix per lock, a key per participant
 * of one role, etcd-lock.ts), and the store-neutral lock's few members (locks/lock.ts) done with
 * the recipe: take and wait, re-enter by owner, release, renew through the store's lease, inspect.
 */
import { monotonicNow } from '../../clock.js';
import { LockNotHeldError } from '../../errors.js';
import type { Hold } from '../../hold.js';
import type { LockKeys } from '../../keys.js';
import { Lock, type Grant } from '../../locks/lock.js';
import type { ResolvedAcquireOptions } from '../../options.js';
import type { Shared } from '../../shared.js';
import { WaitScope } from '../../wait-scope.js';
import { EtcdLock, leaseIdOfKey, lockPrefix, type EtcdGrant, type EtcdLockState } from './etcd-lock.js';
import type { Role } from './etcd-queue.js';
import { unavailable } from './etcd-errors.js';
import type { EtcdStore } from './etcd-store.js';

/** A lock's identity in the hold registry and async context: its etcd prefix and the role taken. */
function etcdKeys(prefix: string, role: Role): (root: string, name: string) => LockKeys {
  return (_root, name) => ({ name, lock: `${prefix}${role}`, queue: prefix, released: prefix });
}

/** How many times one wait starts again under a fresh lease after losing its own. */
const MAX_LEASE_RETRIES = 3;

export abstract class EtcdKind extends Lock {
  /** One lease renews every hold: one family. */
  readonly family = 'etcd';
  /** The recipe for this lock's name and role. */
  protected readonly recipe: EtcdLock;

  constructor(
    shared: Shared,
    protected readonly etcd: EtcdStore,
    name: string,
    /** The key family: `mutex`, `fair`, `rw`, `semaphore` (one prefix per kind, so kinds of one name never meet). */
    keyFamily: string,
    /** The role of this lock's keys. */
    protected readonly role: Role,
    /** The permits each take asks (1 but for a semaphore). */
    protected readonly permits = 1,
    /** The limit (1 but for a semaphore), and where a stored one lives. */
    limit = 1,
    limitKey?: string,
  ) {
    const prefix = lockPrefix(shared.prefix, keyFamily, name);
    super(shared, name, etcdKeys(prefix, role));
    this.recipe = new EtcdLock(etcd.ops, () => etcd.lease(), prefix, this.name, limit, limitKey === undefined ? { role } : { role, limitKey });
  }

  /** @internal The key `owner` holds this lock by, if this instance took or re-entered it. */
  keyOf(owner: string): string | undefined {
    return this.recipe.keyOf(owner);
  }

  /** @internal The lease (decimal id) `owner`'s key lives by, if known. */
  leaseOf(owner: string): string | undefined {
    return this.recipe.leaseOf(owner);
  }

  renew(holds: readonly Hold[], ms?: number): Promise<number[]> {
    return this.etcd.renew(holds, ms);
  }

  /** A read: etcd's renewal without `ms` lengthens nothing (a renewal with `ms` would move a fixed lease's end). */
  override check(holds: readonly Hold[]): Promise<number[]> {
    return this.etcd.renew(holds);
  }

  async releaseInStore(hold: Hold, count: number): Promise<number> {
    const key = this.recipe.keyOf(hold.owner);
    const left = await this.etcd.call(this.name, this.recipe.release(hold.owner, count)).catch((error: unknown) => {
      // The common lock drops a hold whose release failed, expecting its lease to run out; this
      // Padlock's lease is kept alive, so the key is deleted here, in the background, instead.
      if (!(error instanceof LockNotHeldError) && count >= hold.count && key !== undefined) this.recipe.abandonKey(key);
      throw error;
    });
    if (left === 0 && key !== undefined) this.etcd.unexpire(key);
    return left;
  }

  protected async reenterOnce(owner: string, _leaseMs: number): Promise<Grant | null> {
    const sentAt = monotonicNow();
    const grant = await this.etcd.call(this.name, this.recipe.reenter(owner));
    return grant === null ? null : this.#grantOf(grant, sentAt);
  }

  protected async obtain(owner: string, options: ResolvedAcquireOptions, scope: WaitScope): Promise<Grant> {
    const [grant] = await EtcdKind.takeAll([this], owner, options, scope);
    if (grant === undefined) throw scope.timeout();
    return grant;
  }

  /**
   * Takes a fresh hold of every one of `kinds` (locks of one store) for `owner`, all or none: their
   * keys are created in one transaction and held once each is at the front of its queue
   * (`EtcdLock.takeAll`), waiting within `scope`. A wait whose lease was lost (its keys are gone with
   * it) goes on under a fresh lease, at the back of the queues, while it has time.
   */
  static async takeAll(kinds: readonly EtcdKind[], owner: string, options: ResolvedAcquireOptions, scope: WaitScope): Promise<Grant[]> {
    const [first] = kinds;
    if (first === undefined) return [];
    let sentAt = monotonicNow();
    let grants: EtcdGrant[] | null;
    for (let attempt = 1; ; attempt++) {
      try {
        grants = await EtcdLock.takeAll(kinds.map((kind) => ({ lock: kind.recipe, request: { role: kind.role, owner, permits: kind.permits } })), scope, scope.waitMs > 0);
        break;
      } catch (error) {
        if (!(error instanceof LockNotHeldError) || attempt >= MAX_LEASE_RETRIES || first.etcd.currentLease?.alive === true) throw unavailable(first.name, error);
        scope.check();
        sentAt = monotonicNow();
      }
    }
    if (grants === null) throw scope.timeout();
    if (!options.autoExtend) for (const grant of grants) first.etcd.expire(grant.key, options.leaseMs);
    return Promise.all(grants.map((grant, i) => (kinds[i] ?? first).#grantOf(grant, sentAt)));
  }

  /**
   * One attempt to take a hold for `owner` (`passes`: see etcd-queue.ts), outside any wait: a grant,
   * or `null` when it is not free now. Bounded by the reply time-out; stopped by close().
   */
  protected async takeOnce(owner: string, passes?: string): Promise<Grant | null> {
    const { runtime, store } = this.shared;
    const scope = new WaitScope(this.name, 0, undefined, runtime.releasing, store.replyTimeoutMs, store.extraReplyMs, (lock, ms) => store.noReply(lock, ms));
    const sentAt = monotonicNow();
    try {
      const request = passes === undefined ? { role: this.role, owner, permits: this.permits } : { role: this.role, owner, permits: this.permits, passes };
      const grant = await this.recipe.take(request, scope, false);
      return grant === null ? null : await this.#grantOf(grant, sentAt);
    } catch (error) {
      throw unavailable(this.name, error);
    } finally {
      scope.dispose();
    }
  }

  async isLocked(): Promise<boolean> {
    this.shared.runtime.assertOpen(this.name);
    return this.holdersOf(await this.inspect()) > 0;
  }

  async forceRelease(): Promise<boolean> {
    this.shared.runtime.assertOpen(this.name);
    return this.etcd.call(this.name, this.recipe.forceRelease((leases) => this.etcd.tellHolders(this.name, leases)));
  }

  /** Who holds and waits now (with the limit in force). */
  protected inspect(): Promise<EtcdLockState> {
    return this.etcd.call(this.name, this.recipe.inspect());
  }

  /** How many of `state`'s holders count for {@link isLocked} (a read/write side counts its own role). */
  protected holdersOf(state: EtcdLockState): number {
    return state.holders.length;
  }

  /** A recipe's grant as the lock's: its remaining lease by this client's clock, from `sentAt`. */
  async #grantOf(grant: EtcdGrant, sentAt: number): Promise<Grant> {
    const leaseId = leaseIdOfKey(grant.key) ?? '0';
    const clock = this.etcd.currentLease;
    // A re-entry by owner of a hold taken elsewhere lives by that client's lease: etcd says how long.
    const pttl = clock?.id === leaseId ? this.etcd.remainingFrom(grant.key, clock, sentAt) : await this.etcd.call(this.name, this.etcd.ops.leaseRemainingMs(leaseId));
    return { fence: grant.fence, holdCount: grant.holdCount, pttl, sentAt };
  }
}
