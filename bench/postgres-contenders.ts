/**
 * The contenders of `npm run bench:postgres`, opened from addresses a worker process can be sent:
 * padlock's mutex on PostgreSQL, the peer `advisory-lock` (session-scoped `pg_advisory_lock`, one
 * new connection per acquisition, as it is written) on the same server, and padlock's mutex on Redis
 * (what a team trades by keeping its locks in the database it already runs).
 */
import advisoryLock from 'advisory-lock';
import { Redis } from 'ioredis';
import pg from 'pg';
import { Padlock } from '../src/index.js';
import type { LoopLock } from './store-padlocks.js';

export const CONTENDERS = ['padlock-postgres', 'advisory-lock', 'padlock-redis'] as const;
export type ContenderName = (typeof CONTENDERS)[number];

export const CONTENDER_LABEL: Record<ContenderName, string> = {
  'padlock-postgres': 'padlock mutex · PostgreSQL',
  'advisory-lock': 'advisory-lock · PostgreSQL',
  'padlock-redis': 'padlock mutex · Redis (1 server)',
};

/** Where the servers listen. */
export interface BenchAddresses {
  /** `postgres://…` of the one PostgreSQL server. */
  readonly postgres: string;
  /** `redis://127.0.0.1:port` of the one redis-server. */
  readonly redis: string;
}

/** The lease padlock's locks are taken with, on both stores. */
export const LEASE_MS = 5_000;

/** A contender's lock by name, and how to close what it opened. */
export interface OpenContender {
  lock(name: string): LoopLock;
  close(): Promise<void>;
}

/** Opens `contender` with clients of its own. */
export function openContender(contender: ContenderName, addresses: BenchAddresses): OpenContender {
  switch (contender) {
    case 'padlock-postgres': {
      const pool = new pg.Pool({ connectionString: addresses.postgres });
      const padlock = new Padlock({ postgres: pool, leaseMs: LEASE_MS });
      return {
        lock: (name) => padlock.mutex(name),
        close: async () => {
          await padlock.close();
          await pool.end();
        },
      };
    }
    case 'advisory-lock': {
      // A CommonJS module whose factory is its `default` export.
      const mutexOf = advisoryLock.default(addresses.postgres);
      return {
        lock: (name) => {
          const mutex = mutexOf(name);
          // Its lock() waits as long as it takes (no time-out to give it) and resolves with the unlock.
          return { acquire: async () => ({ release: await mutex.lock() }) };
        },
        close: () => Promise.resolve(),
      };
    }
    case 'padlock-redis': {
      const client = new Redis(addresses.redis);
      const padlock = new Padlock({ redis: client, leaseMs: LEASE_MS });
      return {
        lock: (name) => padlock.mutex(name),
        close: async () => {
          await padlock.close();
          await client.quit().catch(() => client.disconnect());
        },
      };
    }
  }
}
