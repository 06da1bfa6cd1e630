/**
 * The calls padlock makes to PostgreSQL, typed: each is one statement (most a function of
 * postgres-schema.ts), sent as a named prepared statement through the pool, so one round trip.
 */
import type { Pool } from 'pg';

/** A participant's role in a lock's queue (postgres-schema.ts's `may_hold`). */
export type Role = 'lock' | 'read' | 'permit';

/** Which lock: the Padlock's prefix, the kind's family (`mutex` for both mutexes), the name. */
export interface LockRef {
  readonly prefix: string;
  readonly family: 'mutex' | 'rw' | 'semaphore';
  readonly name: string;
}

/** What one take asks. */
export interface TakeRequest {
  readonly role: Role;
  readonly owner: string;
  readonly permits: number;
  /** The semaphore's limit as this Padlock made it (1 for other kinds). */
  readonly limit: number;
  readonly leaseMs: number;
  /** Stay queued when not free now (the caller listens for its wake-up); else leave at once. */
  readonly wait: boolean;
  /** A read taken inside a write hold: the writer's owner, whose place it passes. */
  readonly passes?: string | undefined;
  /** The LISTEN channel this Padlock is woken on. */
  readonly channel: string;
}

/** A take's answer. */
export type TakeResult =
  | { readonly state: 'held'; readonly fence: number; readonly holdCount: number; readonly remainingMs: number }
  | { readonly state: 'waiting'; readonly retryMs: number }
  | { readonly state: 'busy' }
  | { readonly state: 'over'; readonly limit: number };

/** A re-entry's answer. */
export interface Reentry {
  readonly fence: number;
  readonly holdCount: number;
  readonly remainingMs: number;
}

/** A lock as it stands: its holders (of one role, if asked), the permits they hold, the limit in force. */
export interface LockState {
  readonly holders: number;
  readonly used: number;
  readonly limit: number;
}

/** A row of a take's answer (`pg` gives bigints as strings). */
interface TakeRow {
  state: 'held' | 'waiting' | 'busy' | 'over';
  fence: string | null;
  hold_count: number | null;
  remaining_ms: number | null;
  lim: number;
  retry_ms: number | null;
}

/** A row of padlock's `participants` table as an operator reads it (`pg` gives bigints as strings). */
export interface ParticipantRow {
  readonly family: LockRef['family'];
  readonly name: string;
  readonly role: Role;
  readonly owner: string;
  readonly ticket: string;
  readonly permits: number;
  readonly lock_limit: number;
  /** A read taken inside a write hold: the writer's owner. */
  readonly passes: string | null;
  /** Set when granted; `null` while waiting. */
  readonly fence: string | null;
  readonly hold_count: number;
  /** The LISTEN channel of the Padlock that holds or waits. */
  readonly channel: string;
  /** Its lease left (a waiter's: until it must have looked again), by the server's clock. */
  readonly remaining_ms: number;
  /** A semaphore's stored limit in force (`setPermits`); `null` when none, or another kind. */
  readonly stored_limit: number | null;
}

export class PostgresOps {
  constructor(
    private readonly pool: Pool,
    /** The schema padlock's objects live in (checked: a plain identifier). */
    readonly schema: string,
  ) {}

  async take(lock: LockRef, request: TakeRequest): Promise<TakeResult> {
    const [row] = await this.#rows<TakeRow>('take', 'SELECT * FROM $S.take($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)', [
      lock.prefix,
      lock.family,
      lock.name,
      request.role,
      request.owner,
      request.permits,
      request.limit,
      request.leaseMs,
      request.wait,
      request.passes ?? null,
      request.channel,
    ]);
    switch (row?.state) {
      case 'held':
        return { state: 'held', fence: Number(row.fence), holdCount: row.hold_count ?? 1, remainingMs: row.remaining_ms ?? 0 };
      case 'waiting':
        return { state: 'waiting', retryMs: row.retry_ms ?? request.leaseMs / 2 };
      case 'over':
        return { state: 'over', limit: row.lim };
      default:
        return { state: 'busy' };
    }
  }

  /** Takes a waiter's row out of the queue (a wait given up). */
  async leave(lock: LockRef, role: Role, owner: string): Promise<void> {
    await this.#rows('leave', 'SELECT $S.leave($1, $2, $3, $4, $5)', [lock.prefix, lock.family, lock.name, role, owner]);
  }

  /** One more hold for `owner`, if it holds; `null` if not. */
  async reenter(lock: LockRef, role: Role, owner: string, leaseMs: number): Promise<Reentry | null> {
    const [row] = await this.#rows<{ fence: string | null; hold_count: number | null; remaining_ms: number | null }>(
      'reenter',
      'SELECT * FROM $S.reenter($1, $2, $3, $4, $5, $6)',
      [lock.prefix, lock.family, lock.name, role, owner, leaseMs],
    );
    if (row?.fence === null || row === undefined) return null;
    return { fence: Number(row.fence), holdCount: row.hold_count ?? 1, remainingMs: row.remaining_ms ?? 0 };
  }

  /** Gives back `count` holds: how many `owner` has left, -1 when it held none. */
  async release(lock: LockRef, role: Role, owner: string, count: number): Promise<number> {
    const [row] = await this.#rows<{ left: number }>('release', 'SELECT $S.release($1, $2, $3, $4, $5, $6) AS left', [lock.prefix, lock.family, lock.name, role, owner, count]);
    return row?.left ?? -1;
  }

  /** Renews every hold by its fence, to at least `ms[i]` from now: each renewed fence's remaining lease. */
  async renew(fences: readonly number[], ms: readonly number[]): Promise<Map<number, number>> {
    const rows = await this.#rows<{ fence: string; remaining_ms: number }>('renew', 'SELECT * FROM $S.renew($1::bigint[], $2::integer[])', [fences.map(String), ms]);
    return new Map(rows.map((row) => [Number(row.fence), row.remaining_ms]));
  }

  /** A read: each fence still held and its remaining lease by the server's clock (a missing fence is gone). */
  async remaining(fences: readonly number[]): Promise<Map<number, number>> {
    const rows = await this.#rows<{ fence: string; remaining_ms: number }>(
      'remaining',
      `SELECT p.fence, $S.ms_until(p.expires_at, clock_timestamp()) AS remaining_ms FROM $S.participants p
         WHERE p.fence = ANY($1::bigint[]) AND p.expires_at > clock_timestamp()`,
      [fences.map(String)],
    );
    return new Map(rows.map((row) => [Number(row.fence), row.remaining_ms]));
  }

  /** Deletes every holder of `lock` and tells each holder's Padlock on its channel: whether someone held. */
  async forceRelease(lock: LockRef): Promise<boolean> {
    const [row] = await this.#rows<{ held: boolean }>('force_release', 'SELECT $S.force_release($1, $2, $3) AS held', [lock.prefix, lock.family, lock.name]);
    return row?.held === true;
  }

  /** Who holds `lock` now (of `role`, when given); `limit` as made when no stored one. */
  async state(lock: LockRef, role: Role | undefined, limit: number): Promise<LockState> {
    const [row] = await this.#rows<{ holders: number; used: number; lim: number }>(
      'state',
      `SELECT count(*)::integer AS holders, coalesce(sum(p.permits), 0)::integer AS used, $S.limit_of($1, $2, $3, $5) AS lim
         FROM $S.participants p WHERE p.prefix = $1 AND p.family = $2 AND p.name = $3 AND p.fence IS NOT NULL
           AND p.expires_at > clock_timestamp() AND ($4::text IS NULL OR p.role = $4)`,
      [lock.prefix, lock.family, lock.name, role ?? null, limit],
    );
    return { holders: row?.holders ?? 0, used: row?.used ?? 0, limit: row?.lim ?? limit };
  }

  /** The roles `owner` has a row of in `lock`'s queue, and whether each holds. */
  async rolesOf(lock: LockRef, owner: string): Promise<{ role: Role; held: boolean }[]> {
    return this.#rows<{ role: Role; held: boolean }>(
      'roles_of',
      `SELECT p.role, p.fence IS NOT NULL AS held FROM $S.participants p
         WHERE p.prefix = $1 AND p.family = $2 AND p.name = $3 AND p.owner = $4 AND p.expires_at > clock_timestamp()`,
      [lock.prefix, lock.family, lock.name, owner],
    );
  }

  /**
   * Every live row under `prefix` (its lease not run out by the server's clock), in queue order per
   * lock, each with its lease left and, on a semaphore's rows, the stored limit in force: one
   * statement, so one snapshot (an operator's read, postgres-catalog.ts).
   */
  async participants(prefix: string): Promise<ParticipantRow[]> {
    return this.#rows<ParticipantRow>(
      'participants',
      `SELECT p.family, p.name, p.role, p.owner, p.ticket, p.permits, p.lock_limit, p.passes, p.fence, p.hold_count, p.channel,
           $S.ms_until(p.expires_at, clock_timestamp()) AS remaining_ms,
           (SELECT l.permits FROM $S.limits l WHERE p.family = 'semaphore' AND l.prefix = p.prefix AND l.name = p.name
              AND l.expires_at > clock_timestamp()) AS stored_limit
         FROM $S.participants p WHERE p.prefix = $1 AND p.expires_at > clock_timestamp()
         ORDER BY p.name, p.family, p.ticket`,
      [prefix],
    );
  }

  async setLimit(prefix: string, name: string, permits: number): Promise<void> {
    await this.#rows('set_limit', 'SELECT $S.set_limit($1, $2, $3)', [prefix, name, permits]);
  }

  /** Deletes what outlived its lease by a minute (locks nobody takes again): how many rows. */
  async sweep(): Promise<number> {
    const [row] = await this.#rows<{ n: number }>('sweep', 'SELECT $S.sweep() AS n', []);
    return row?.n ?? 0;
  }

  /** Sends `payload` on `channel` (the LISTEN connection's self-test). */
  async notify(channel: string, payload: string): Promise<void> {
    await this.pool.query('SELECT pg_notify($1, $2)', [channel, payload]);
  }

  /** Runs the named statement `text` (`$S`: the schema) as a prepared statement: its rows. */
  async #rows<Row>(name: string, text: string, values: unknown[]): Promise<Row[]> {
    const result = await this.pool.query({ name: `padlock.${this.schema}.${name}`, text: text.replaceAll('$S', this.schema), values });
    return result.rows as Row[];
  }
}
