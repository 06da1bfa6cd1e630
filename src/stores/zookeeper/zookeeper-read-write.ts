/**
 * The read/write lock on ZooKeeper: one znode, `lock` children for writers and `read` children for
 * readers. A writer holds as the first child; a reader while no writer's child comes before its own,
 * so once a writer waits, readers after it wait too (writer-preferring), and the readers behind a
 * writer are let in together when it leaves (each watches that writer).
 *
 * Downgrade: a writer that holds may take the read lock (in the write hold's async context, or by
 * passing its owner token): its read is a `down` child, granted at once beside the writer, which
 * keeps out the writers queued behind until it ends (znode-queue.ts). Upgrade, a reader asking for
 * the write lock, is refused at once with `LockUpgradeError`: it would wait for its own read hold.
 */
import { LockUpgradeError } from '../../errors.js';
import type { ReadWriteLock } from '../../locks/read-write-lock.js';
import type { ResolvedAcquireOptions } from '../../options.js';
import type { Shared } from '../../shared.js';
import type { WaitScope } from '../../wait-scope.js';
import { ZooKeeperKind, zooKeeperIdentity } from './zookeeper-kind.js';
import type { ZooKeeperGrant } from './zookeeper-lock.js';
import type { ZooKeeperStore } from './zookeeper-store.js';

const FAMILY = 'readWrite';
const READ_ROLES = ['read', 'down'] as const;

/** The read side: shared among readers. */
export class ZooKeeperReadLock extends ZooKeeperKind {
  /** The write side's identity: a hold of it in this async context makes a read a downgrade. */
  readonly #writer: string;

  constructor(shared: Shared, store: ZooKeeperStore, name: string) {
    super(shared, store, name, FAMILY, 'readWrite', 'read', READ_ROLES);
    this.#writer = zooKeeperIdentity(store, FAMILY, 'lock', this.name);
  }

  protected override async take(owner: string, options: ResolvedAcquireOptions, scope: WaitScope): Promise<ZooKeeperGrant | null> {
    const writer = this.shared.runtime.contextHold(this.#writer);
    if (writer !== undefined) {
      const grant = await this.recipe.takeDowngrade(owner, writer.owner, (call) => scope.race(call));
      if (grant !== null) return grant;
      // The write hold is gone (lost meanwhile): an ordinary read.
    }
    return super.take(owner, options, scope);
  }

  /** A re-entry by owner; a writer's owner token re-enters as a downgrade. */
  protected override async reenterChild(owner: string): Promise<ZooKeeperGrant | null> {
    return (await this.recipe.reenter(owner, READ_ROLES)) ?? (await this.recipe.takeDowngrade(owner, owner, (call) => call));
  }
}

/** The write side: one owner, no readers. */
export class ZooKeeperWriteLock extends ZooKeeperKind {
  readonly #reader: string;

  constructor(shared: Shared, store: ZooKeeperStore, name: string) {
    super(shared, store, name, FAMILY, 'readWrite', 'lock', ['lock']);
    this.#reader = zooKeeperIdentity(store, FAMILY, 'read', this.name);
  }

  protected override take(owner: string, options: ResolvedAcquireOptions, scope: WaitScope): Promise<ZooKeeperGrant | null> {
    // An upgrade would wait for this context's own read hold: refused before anything is sent.
    if (this.shared.runtime.contextHold(this.#reader) !== undefined) return Promise.reject(new LockUpgradeError(this.name));
    return super.take(owner, options, scope);
  }

  /** A re-entry by owner; an owner that reads is refused (an upgrade). */
  protected override async reenterChild(owner: string): Promise<ZooKeeperGrant | null> {
    const grant = await this.recipe.reenter(owner, ['lock']);
    if (grant === null && (await this.recipe.has(owner, READ_ROLES))) throw new LockUpgradeError(this.name, owner);
    return grant;
  }
}

/** Both sides of the read/write lock `name`. */
export function zooKeeperReadWrite(shared: Shared, store: ZooKeeperStore, name: string): ReadWriteLock {
  const write = new ZooKeeperWriteLock(shared, store, name);
  return { name: write.name, read: new ZooKeeperReadLock(shared, store, name), write };
}
