/**
 * The semaphore on PostgreSQL: one `permit` row per participant, naming the permits it takes; by
 * ticket, a participant holds when the permits of every row up to and including its own fit the
 * limit (FIFO: a large request is not overtaken by small ones). A release wakes, in order, the
 * waiters that now fit, and stops at the first that does not.
 *
 * The stored limit (`setPermits`) is a row of the `limits` table that replaces the creation value
 * for one hour after the last `setPermits` (as on etcd), read in the same statement as the queue on
 * every take; a raise wakes the waiters it admits.
 */
import { checkPermits } from '../../locks/semaphore-lock.js';
import { SizedSemaphore } from '../../locks/sized-semaphore.js';
import type { Shared } from '../../shared.js';
import type { LockKindName } from '../../store.js';
import { PostgresKind } from './postgres-kind.js';
import type { PostgresStore } from './postgres-store.js';

/** One acquisition size of a semaphore: its holds are leases of `permits` permits each. */
class PostgresPermits extends PostgresKind {
  readonly kind: LockKindName = 'semaphore';

  constructor(shared: Shared, pg: PostgresStore, name: string, permits: number, limit: number) {
    super(shared, pg, name, 'semaphore', 'permit', permits, limit);
  }

  /** The limit in force and the permits held. */
  async state(): Promise<{ limit: number; used: number }> {
    this.shared.runtime.assertOpen(this.name);
    return this.pg.call(this.name, () => this.pg.ops.state(this.ref, undefined, this.limit));
  }
}

export class PostgresSemaphore extends SizedSemaphore<PostgresPermits> {
  readonly #shared: Shared;
  readonly #pg: PostgresStore;

  constructor(shared: Shared, pg: PostgresStore, name: string, permits: unknown) {
    super(name, permits);
    this.#shared = shared;
    this.#pg = pg;
  }

  protected state(): Promise<{ limit: number; used: number }> {
    return this.sized(1).state();
  }

  async setPermits(permits: number): Promise<void> {
    const limit = checkPermits('permits', permits);
    this.#shared.runtime.assertOpen(this.name);
    await this.#pg.call(this.name, () => this.#pg.ops.setLimit(this.#shared.prefix, this.name, limit));
  }

  protected sized(n: number): PostgresPermits {
    return new PostgresPermits(this.#shared, this.#pg, this.name, n, this.permits);
  }
}
