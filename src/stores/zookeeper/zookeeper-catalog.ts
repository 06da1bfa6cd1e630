/**
 * An operator's read of the ZooKeeper store (catalog.ts): every lock in use under the prefix, from
 * the children of each family's znode and of each lock's, each lock's queue judged by the same rules
 * its waiters use (znode-queue.ts). A holder's fence is its child's creation zxid; its lease is its
 * session, of which nothing can be said from outside (`leaseMs` null). A waiter's wait is timed from
 * its child's creation (`ctime`, the ensemble's clock against this process's: as close as they agree).
 */
import { byNameThenKind, decodeName, type CatalogEntry, type CatalogLock, type LockCatalog } from '../../catalog.js';
import type { LockKind } from '../../lock-state.js';
import { creationTime, creationZxid, type ZooKeeperOps } from './zookeeper-client.js';
import { countIn, limitIn } from './zookeeper-lock.js';
import { queueOf, turnOf } from './znode-queue.js';

/** The kind of each family znode, and its name under the prefix (the mutex and the fair mutex share `mutex`). */
export const FAMILIES: readonly LockKind[] = ['mutex', 'readWrite', 'semaphore'];

export class ZooKeeperCatalog implements LockCatalog {
  constructor(
    private readonly ops: ZooKeeperOps,
    /** `/<prefix>`. */
    private readonly root: string,
    readonly description: string,
  ) {}

  async locks(): Promise<CatalogLock[]> {
    const locks: CatalogLock[] = [];
    for (const kind of FAMILIES) {
      const family = `${this.root}/${kind}`;
      const names = (await this.ops.children(family)) ?? [];
      const read = await Promise.all(names.map((segment) => this.#lock(kind, `${family}/${segment}`, decodeName(segment))));
      for (const lock of read) if (lock !== undefined) locks.push(lock);
    }
    return locks.sort(byNameThenKind);
  }

  /** One lock's queue, read; `undefined` when it is gone or has nobody in it. */
  async #lock(kind: LockKind, path: string, name: string): Promise<CatalogLock | undefined> {
    const [children, znode] = await Promise.all([this.ops.children(path), kind === 'semaphore' ? this.ops.data(path) : Promise.resolve(undefined)]);
    const queue = queueOf(children ?? []);
    if (queue.length === 0) return undefined;
    const stored = limitIn(znode?.data);
    const limit = stored ?? queue.find((p) => p.limit !== undefined)?.limit ?? 1;
    const read = await Promise.all(queue.map((p) => this.ops.data(`${path}/${p.name}`)));
    const entries: CatalogEntry[] = [];
    queue.forEach((p, i) => {
      const child = read[i];
      if (child === undefined) return; // left between the two reads
      entries.push({
        role: p.role,
        owner: p.owner,
        permits: p.role === 'down' ? 1 : p.permits,
        order: creationZxid(child.stat),
        count: countIn(child.data),
        holds: turnOf(queue, p.name, limit)?.holds === true,
        client: sessionOf(child.stat),
        since: creationTime(child.stat),
      });
    });
    return { kind, name, entries, limit: stored ?? null, codeLimit: stored === undefined && kind === 'semaphore' ? (queue.find((p) => p.limit !== undefined)?.limit ?? null) : null, leaseMs: null };
  }

  async close(): Promise<void> {}
}

/** The session an ephemeral child lives by, as ZooKeeper's tools print it (hex). */
function sessionOf(stat: { readonly ephemeralOwner: Buffer }): string | null {
  const hex = stat.ephemeralOwner.toString('hex');
  return /^0+$/.test(hex) ? null : `0x${hex.replace(/^0+/, '')}`;
}
