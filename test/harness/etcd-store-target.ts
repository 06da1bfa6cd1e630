/**
 * etcd as a store under test (./store-target.ts): one real member on loopback
 * (./etcd-servers.ts; {@link StartedStore.stop} stops it, and every member is killed when the
 * process ends whatever happened), a client of its own per Padlock, what is left read as keys under
 * the prefix.
 */
import { Etcd3 } from 'etcd3';
import { Padlock } from '../../src/index.js';
import { startCluster } from './etcd-servers.js';
import type { StartedStore, StoreFreeOptions, StoreTarget } from './store-target.js';

export const etcdSingle: StoreTarget = {
  name: 'etcd (one member)',
  async start(): Promise<StartedStore> {
    const cluster = await startCluster(1);
    const clients: Etcd3[] = [];
    const client = (): Etcd3 => {
      const made = new Etcd3({ hosts: cluster.hosts, dialTimeout: 2_000 });
      clients.push(made);
      return made;
    };
    const reader = client();
    return {
      // eslint-disable-next-line @typescript-eslint/require-await
      async padlock(options?: StoreFreeOptions): Promise<Padlock> {
        return new Padlock({ ...options, etcd: client() });
      },
      leftovers(prefix: string): Promise<string[]> {
        return reader.getAll().prefix(`${prefix}/`).keys();
      },
      async stop(): Promise<void> {
        for (const made of clients) made.close();
        await cluster.stop();
      },
    };
  },
};
