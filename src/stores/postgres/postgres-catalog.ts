/**
 * An operator's read of the PostgreSQL store (catalog.ts): every lock in use under the prefix, from
 * one statement over padlock's `participants` table (and its stored limits) in the Padlock's schema.
 * The table says who holds outright: a granted row has a fence, a waiting one has none. Rows whose
 * lease ran out by the server's clock are left out, as the next take on their lock purges them. The
 * lease left is the server's too (`expires_at` against `clock_timestamp()`); a waiter's time in the
 * queue is not kept (its row has no join time), so it is not shown.
 */
import { bound } from '../../clock.js';
import { byNameThenKind, type CatalogEntry, type CatalogLock, type LockCatalog } from '../../catalog.js';
import { PostgresUnavailableError } from '../../errors.js';
import type { LockKind } from '../../lock-state.js';
import { unavailable } from './postgres-errors.js';
import type { ParticipantRow, PostgresOps } from './postgres-ops.js';

/** The kind of each family (the mutex and the fair mutex share `mutex`). */
const KINDS: Readonly<Record<ParticipantRow['family'], LockKind>> = { mutex: 'mutex', rw: 'readWrite', semaphore: 'semaphore' };

/** SQLSTATEs of a schema without padlock's objects: no such table, function or schema. */
const NOT_INSTALLED = new Set(['42P01', '42883', '3F000']);

export class PostgresCatalog implements LockCatalog {
  constructor(
    private readonly ops: PostgresOps,
    private readonly prefix: string,
    private readonly replyTimeoutMs: number,
    readonly description: string,
  ) {}

  async locks(): Promise<CatalogLock[]> {
    const rows = await bound(
      this.ops.participants(this.prefix).catch((error: unknown) => {
        throw this.#failure(error);
      }),
      { ms: this.replyTimeoutMs, timeout: () => new PostgresUnavailableError(undefined, undefined, `no reply within ${this.replyTimeoutMs} ms`) },
    );
    const groups = new Map<string, ParticipantRow[]>();
    for (const row of rows) {
      const id = `${row.family}/${row.name}`;
      const group = groups.get(id);
      if (group === undefined) groups.set(id, [row]);
      else group.push(row);
    }
    const locks: CatalogLock[] = [];
    for (const queue of groups.values()) locks.push(lockOf(queue));
    return locks.sort(byNameThenKind);
  }

  async close(): Promise<void> {}

  /** A schema padlock never installed named as such (a wrong schema, or padlock never ran there); anything else as unavailability. */
  #failure(error: unknown): unknown {
    const code = (error as { code?: unknown } | null)?.code;
    if (typeof code === 'string' && NOT_INSTALLED.has(code)) {
      return new PostgresUnavailableError(undefined, error, `schema "${this.ops.schema}" has no padlock tables (padlock never ran on this database with this schema)`);
    }
    return unavailable(undefined, error);
  }
}

/** One lock's rows (one family and name, in queue order), as the catalog gives them. */
function lockOf(queue: readonly ParticipantRow[]): CatalogLock {
  const [first] = queue as [ParticipantRow, ...ParticipantRow[]];
  const kind = KINDS[first.family];
  const entries: CatalogEntry[] = queue.map((row) => ({
    role: row.role === 'read' && row.passes !== null ? 'down' : row.role,
    owner: row.owner,
    permits: row.permits,
    // A holder's place is its fence; a waiter's, its ticket (it has no fence yet).
    order: Number(row.fence ?? row.ticket),
    count: row.hold_count,
    holds: row.fence !== null,
    client: row.channel,
    leaseMs: row.fence === null ? undefined : row.remaining_ms,
  }));
  const holders = queue.filter((row) => row.fence !== null);
  const stored = kind === 'semaphore' ? first.stored_limit : null;
  return {
    kind,
    name: first.name,
    entries,
    limit: stored,
    // With no stored limit, the one the holder's code passed (a waiter's, while nobody holds).
    codeLimit: kind === 'semaphore' && stored === null ? (holders[0] ?? first).lock_limit : null,
    leaseMs: holders.length === 0 ? null : Math.max(...holders.map((row) => row.remaining_ms)),
  };
}
