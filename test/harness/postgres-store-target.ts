/**
 * PostgreSQL as a store under test (./store-target.ts): one real server on loopback
 * (./postgres-server.ts; {@link StartedStore.stop} stops it, and it is killed when the process ends
 * whatever happened), a pool of its own per Padlock (as separate processes would have), what is
 * left read as rows of padlock's table under the prefix.
 */
import { Padlock } from '../../src/index.js';
import { startPostgresServer } from './postgres-server.js';
import type { StartedStore, StoreFreeOptions, StoreTarget } from './store-target.js';

export const postgresSingle: StoreTarget = {
  name: 'PostgreSQL (one server)',
  async start(): Promise<StartedStore> {
    const server = await startPostgresServer();
    return {
      // eslint-disable-next-line @typescript-eslint/require-await
      async padlock(options?: StoreFreeOptions): Promise<Padlock> {
        return new Padlock({ ...options, postgres: server.pool({ max: 4 }) });
      },
      async leftovers(prefix: string): Promise<string[]> {
        const [table] = await server.query<{ present: boolean }>(`SELECT to_regclass('padlock.participants') IS NOT NULL AS present`);
        if (table?.present !== true) return [];
        const rows = await server.query<{ row: string }>(`SELECT family || '/' || name || '/' || role || '/' || owner AS row FROM padlock.participants WHERE prefix = $1`, [prefix]);
        return rows.map((r) => r.row);
      },
      stop: () => server.stop(),
    };
  },
};
