/**
 * What the `postgres` option must be, by shape, and its check. This file imports nothing of `pg`:
 * padlock's published types reach it (options.ts), and a project without pg must type-check them.
 */
import { PadlockOptionError } from '../../errors.js';

/** A node-postgres `Pool` (`new Pool(config)` of the `pg` package), as padlock checks it. */
export interface PostgresPoolLike {
  /** Runs one statement on an idle client of the pool. */
  query(...args: never[]): unknown;
  /** Checks a client out of the pool (padlock keeps one for its `LISTEN`, while it waits). */
  connect(...args: never[]): unknown;
  /** How many clients the pool has open. */
  readonly totalCount: number;
}

/**
 * `value` as a node-postgres `Pool`: it must run statements (`query`), hand out clients (`connect`)
 * and count them (`totalCount`, which a single `Client` has not: padlock needs a pool, whose
 * statements run side by side, and one connection it keeps for `LISTEN`). Checked by shape, so that
 * a copy of `pg` other than padlock's own passes.
 */
export function checkPostgresPool(value: unknown): PostgresPoolLike {
  const pool = value as Partial<Record<'query' | 'connect' | 'totalCount', unknown>> | null;
  if (typeof value !== 'object' || pool === null || typeof pool.query !== 'function' || typeof pool.connect !== 'function' || typeof pool.totalCount !== 'number') {
    throw new PadlockOptionError('postgres', 'a node-postgres Pool (new Pool({ connectionString }) of the pg package; a single Client is not enough)', value);
  }
  return value as PostgresPoolLike;
}
