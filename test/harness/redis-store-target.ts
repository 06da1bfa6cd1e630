/** Redis on one server, as a {@link StoreTarget} of the store-neutral behaviour suite. */
import { Padlock } from '../../src/index.js';
import { connect, startServer } from './redis.js';
import type { StartedStore, StoreFreeOptions, StoreTarget } from './store-target.js';

export const redisSingle: StoreTarget = {
  name: 'Redis (one server)',
  async start(): Promise<StartedStore> {
    const server = await startServer();
    const clients: ReturnType<typeof connect>[] = [];
    const reader = connect(server);
    return {
      padlock(options: StoreFreeOptions = {}): Promise<Padlock> {
        const client = connect(server);
        clients.push(client);
        return Promise.resolve(new Padlock({ ...options, redis: client }));
      },
      // Keys that expire are left to expire (a fence counter, a queue's last heartbeat): what must be
      // gone is every key without an expiry, and every hold.
      async leftovers(prefix: string): Promise<string[]> {
        const keys = await reader.keys(`${prefix}:*`);
        const lasting = await Promise.all(keys.map(async (key) => ((await reader.pttl(key)) === -1 ? [key] : [])));
        return lasting.flat();
      },
      async stop(): Promise<void> {
        for (const client of [...clients, reader]) client.disconnect();
        await server.stop();
      },
    };
  },
};
