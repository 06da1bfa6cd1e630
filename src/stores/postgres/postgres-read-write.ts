/**
 * The read/write lock on PostgreSQL: both sides queue in one family, the writer as a `lock` row,
 * each reader as a `read` row, in one FIFO order by ticket. A reader holds when no other owner's
 * writer is before it; a writer when it is first. So it is writer-preferring: a reader arriving after
 * a queued writer waits behind it, and the readers behind a writer are woken together when it leaves.
 *
 * Downgrade: a writer may take the read lock (in the write hold's async context, or passing its owner
 * token): its read row passes its own writer, so it holds at once; it may then release the write lock
 * and read on. Upgrade, a reader asking for the write lock, is refused at once with
 * `LockUpgradeError` (it would wait for its own read hold). As on etcd and ZooKeeper.
 */
import { LockUpgradeError } from '../../errors.js';
import type { Grant } from '../../locks/lock.js';
import type { ReadWriteLock } from '../../locks/read-write-lock.js';
import type { ResolvedAcquireOptions } from '../../options.js';
import type { Shared } from '../../shared.js';
import type { LockKindName } from '../../store.js';
import type { WaitScope } from '../../wait-scope.js';
import { PostgresKind } from './postgres-kind.js';
import type { Role } from './postgres-ops.js';
import type { PostgresStore } from './postgres-store.js';

/** One side of the read/write lock. */
abstract class PostgresSide extends PostgresKind {
  readonly kind: LockKindName = 'readWrite';
  /** The other side (set once both exist). */
  other!: PostgresSide;

  protected override get countedRole(): Role {
    return this.role;
  }

  /** Whether `owner` has a row of role `role` (held, or `held` false: waiting too) now. */
  protected async has(owner: string, role: Role, heldOnly: boolean): Promise<boolean> {
    const rows = await this.pg.call(this.name, () => this.pg.ops.rolesOf(this.ref, owner));
    return rows.some((row) => row.role === role && (row.held || !heldOnly));
  }
}

class PostgresReadSide extends PostgresSide {
  constructor(shared: Shared, pg: PostgresStore, name: string) {
    super(shared, pg, name, 'rw', 'read');
  }

  /** A read under an owner token: its read hold re-entered, or a downgrade if it holds the write lock. */
  protected override async reenterOnce(owner: string, leaseMs: number): Promise<Grant | null> {
    const grant = await super.reenterOnce(owner, leaseMs);
    if (grant !== null) return grant;
    if (!(await this.has(owner, 'lock', true))) return null;
    // Its read row passes its own writer: held at once, no wait.
    return this.takeOnce(owner, leaseMs, owner);
  }

  protected override async obtain(owner: string, options: ResolvedAcquireOptions, scope: WaitScope): Promise<Grant> {
    // A downgrade: inside the write hold's context the read is the writer's own, and passes its row.
    const writer = this.shared.runtime.contextHold(this.other.identity);
    if (writer !== undefined) {
      const grant = await scope.race(this.takeOnce(owner, options.leaseMs, writer.owner));
      if (grant !== null) return grant;
      // The write hold is gone (lost meanwhile): an ordinary read.
    }
    return super.obtain(owner, options, scope);
  }
}

class PostgresWriteSide extends PostgresSide {
  constructor(shared: Shared, pg: PostgresStore, name: string) {
    super(shared, pg, name, 'rw', 'lock');
  }

  protected override obtain(owner: string, options: ResolvedAcquireOptions, scope: WaitScope): Promise<Grant> {
    // An upgrade would wait for this context's own read hold to end: refused before anything is sent.
    if (this.shared.runtime.contextHold(this.other.identity) !== undefined) return Promise.reject(new LockUpgradeError(this.name));
    return super.obtain(owner, options, scope);
  }

  protected override async reenterOnce(owner: string, leaseMs: number): Promise<Grant | null> {
    const grant = await super.reenterOnce(owner, leaseMs);
    if (grant === null && (await this.has(owner, 'read', false))) throw new LockUpgradeError(this.name, owner);
    return grant;
  }
}

/** Both sides of the read/write lock `name`. */
export function postgresReadWrite(shared: Shared, pg: PostgresStore, name: string): ReadWriteLock {
  const read = new PostgresReadSide(shared, pg, name);
  const write = new PostgresWriteSide(shared, pg, name);
  read.other = write;
  write.other = read;
  return { name: write.name, read, write };
}
