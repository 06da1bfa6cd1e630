/**
 * The read/write lock on etcd: both sides queue under one prefix, the writer as a `lock` key, each
 * reader as a `read` key, in one FIFO order by create revision. A reader holds when no other owner's
 * `lock` key is before it; a writer when it is first. So it is writer-preferring: a reader arriving
 * after a queued writer waits behind it, and the readers behind a writer are let in together when it
 * leaves (each watches the nearest writer before it).
 *
 * Downgrade: a writer may take the read lock (in the write hold's async context, or passing its
 * owner token): its `read` key has only its own `lock` key before it, so it holds at once; it may
 * then release the write lock and read on. Upgrade, a reader asking for the write lock, is refused
 * at once with `LockUpgradeError` (it would wait for its own read hold).
 */
import { LockUpgradeError } from '../../errors.js';
import type { Grant } from '../../locks/lock.js';
import type { ReadWriteLock } from '../../locks/read-write-lock.js';
import type { ResolvedAcquireOptions } from '../../options.js';
import type { Shared } from '../../shared.js';
import type { LockKindName } from '../../store.js';
import type { WaitScope } from '../../wait-scope.js';
import type { EtcdLockState } from './etcd-lock.js';
import { EtcdKind } from './etcd-kind.js';
import type { EtcdStore } from './etcd-store.js';

/** One side of the read/write lock. */
abstract class EtcdSide extends EtcdKind {
  readonly kind: LockKindName = 'readWrite';
  /** The other side (set once both exist). */
  other!: EtcdSide;

  /** The identity of the other side in the registry and async context. */
  protected get otherIdentity(): string {
    return this.other.identity;
  }

  protected override holdersOf(state: EtcdLockState): number {
    return state.holders.filter((p) => p.role === this.role).length;
  }

  /** Whether `owner` has a key of role `role` in the queue now. */
  protected async has(owner: string, role: 'lock' | 'read'): Promise<boolean> {
    const { holders, waiters } = await this.inspect();
    return [...holders, ...waiters].some((p) => p.owner === owner && p.role === role);
  }
}

class EtcdReadSide extends EtcdSide {
  constructor(shared: Shared, etcd: EtcdStore, name: string) {
    super(shared, etcd, name, 'rw', 'read');
  }

  /** A read under an owner token: its read hold re-entered, or a downgrade if it holds the write lock. */
  protected override async reenterOnce(owner: string, leaseMs: number): Promise<Grant | null> {
    const grant = await super.reenterOnce(owner, leaseMs);
    if (grant !== null) return grant;
    const { holders } = await this.inspect();
    if (!holders.some((p) => p.owner === owner && p.role === 'lock')) return null;
    // Its read key has only its own write key before it: held at once, no wait.
    return this.takeOnce(owner);
  }

  protected override async obtain(owner: string, options: ResolvedAcquireOptions, scope: WaitScope): Promise<Grant> {
    // A downgrade: inside the write hold's context the read is the writer's own, and passes its key
    // (it would otherwise wait for its own writer).
    const writer = this.shared.runtime.contextHold(this.otherIdentity);
    if (writer !== undefined) {
      const grant = await scope.race(this.takeOnce(owner, writer.owner));
      if (grant !== null) return grant;
      // The write hold is gone (lost meanwhile): an ordinary read.
    }
    return super.obtain(owner, options, scope);
  }
}

class EtcdWriteSide extends EtcdSide {
  constructor(shared: Shared, etcd: EtcdStore, name: string) {
    super(shared, etcd, name, 'rw', 'lock');
  }

  protected override obtain(owner: string, options: ResolvedAcquireOptions, scope: WaitScope): Promise<Grant> {
    // An upgrade would wait for this context's own read hold to end: refused before anything is sent.
    if (this.shared.runtime.contextHold(this.otherIdentity) !== undefined) return Promise.reject(new LockUpgradeError(this.name));
    return super.obtain(owner, options, scope);
  }

  protected override async reenterOnce(owner: string, leaseMs: number): Promise<Grant | null> {
    const grant = await super.reenterOnce(owner, leaseMs);
    if (grant === null && (await this.has(owner, 'read'))) throw new LockUpgradeError(this.name, owner);
    return grant;
  }
}

/** Both sides of the read/write lock `name`. */
export function etcdReadWrite(shared: Shared, etcd: EtcdStore, name: string): ReadWriteLock {
  const read = new EtcdReadSide(shared, etcd, name);
  const write = new EtcdWriteSide(shared, etcd, name);
  read.other = write;
  write.other = read;
  return { name: write.name, read, write };
}
