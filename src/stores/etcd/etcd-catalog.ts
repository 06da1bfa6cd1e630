/**
 * An operator's read of the etcd store (catalog.ts): every lock in use under the prefix, from one
 * linearizable range read of all of padlock's keys, each lock's queue judged by the same rules its
 * waiters use (etcd-queue.ts). A lock's holders' lease time is their lease's TTL as etcd says it.
 */
import { byNameThenKind, decodeName, type CatalogEntry, type CatalogLock, type LockCatalog } from '../../catalog.js';
import type { LockKind } from '../../lock-state.js';
import type { EtcdOps, Entry } from './etcd-client.js';
import { leaseIdOfKey } from './etcd-lock.js';
import { queueOf, turnOf } from './etcd-queue.js';

/** The kind of each key family (the mutex and the fair mutex share `mutex`). */
const KINDS: Readonly<Record<string, LockKind>> = { mutex: 'mutex', rw: 'readWrite', semaphore: 'semaphore' };

export class EtcdCatalog implements LockCatalog {
  constructor(
    private readonly ops: EtcdOps,
    private readonly prefix: string,
    readonly description: string,
  ) {}

  async locks(): Promise<CatalogLock[]> {
    const [view] = await this.ops.queues([`${this.prefix}/`]);
    const groups = new Map<string, { family: string; name: string; entries: Entry[] }>();
    const limits = new Map<string, number>();
    for (const entry of view?.entries ?? []) {
      const [family = '', escaped = '', ...rest] = entry.name.split('/');
      if (family === 'limit' && rest.length === 0) {
        limits.set(decodeName(escaped), Number(entry.value));
        continue;
      }
      if (KINDS[family] === undefined || rest.length !== 1) continue;
      const id = `${family}/${escaped}`;
      let group = groups.get(id);
      if (group === undefined) groups.set(id, (group = { family, name: decodeName(escaped), entries: [] }));
      group.entries.push({ ...entry, name: rest[0] ?? '' });
    }
    const locks: CatalogLock[] = [];
    for (const { family, name, entries } of groups.values()) {
      const kind = KINDS[family] as LockKind;
      const queue = queueOf(entries);
      if (queue.length === 0) continue;
      const stored = kind === 'semaphore' ? limits.get(name) : undefined;
      const limit = stored ?? queue.find((p) => p.limit !== undefined)?.limit ?? 1;
      const entriesOut: CatalogEntry[] = queue.map((p) => ({
        role: p.role === 'read' && p.passes !== undefined ? 'down' : p.role,
        owner: p.owner,
        permits: p.permits,
        order: p.createRevision,
        count: p.count,
        holds: turnOf(queue, p.name, limit)?.holds === true,
        client: leaseIdOfKey(p.name) ?? null,
      }));
      const holder = entriesOut.find((e) => e.holds);
      const leaseMs = holder?.client == null ? null : await this.ops.leaseRemainingMs(holder.client);
      locks.push({ kind, name, entries: entriesOut, limit: stored ?? null, codeLimit: stored === undefined && kind === 'semaphore' ? (queue.find((p) => p.limit !== undefined)?.limit ?? null) : null, leaseMs });
    }
    return locks.sort(byNameThenKind);
  }

  async close(): Promise<void> {}
}
