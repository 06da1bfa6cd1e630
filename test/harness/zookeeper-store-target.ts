/**
 * ZooKeeper as a store under test (store-target.ts): a standalone server from the ZooKeeper
 * harness, a `node-zookeeper-client` client per Padlock (its own session, as separate processes
 * would have), and the lock znodes left under a prefix.
 */
import zookeeper from 'node-zookeeper-client';
import type { Client } from 'node-zookeeper-client';
import { Padlock } from '../../src/index.js';
import type { StartedStore, StoreFreeOptions, StoreTarget } from './store-target.js';
import { startZooKeeper, type Ensemble } from './zookeeper.js';

/** The session time-out the test clients ask for: short, so a dead holder is noticed quickly. */
export const TEST_SESSION_TIMEOUT_MS = 4_000;

/** Clients whose session expired: node-zookeeper-client's `close()` would reconnect them to send a close nobody needs, forever. */
const expired = new WeakSet<Client>();

/** A client of `ensemble` (not yet connected: it connects as a Padlock's client may). */
export function zooKeeperClient(ensemble: Ensemble, sessionTimeout = TEST_SESSION_TIMEOUT_MS): Client {
  const client = zookeeper.createClient(ensemble.connectString, { sessionTimeout, spinDelay: 100 });
  client.once('expired', () => expired.add(client));
  client.connect();
  return client;
}

/** Closes `client`, unless its session expired (then it is closed already). */
export function closeClient(client: Client): void {
  if (!expired.has(client)) client.close();
}

/** The lock znodes (and their children) under `/<prefix>`: a family's own znode (`/<prefix>/mutex`) is not a lock's. */
export async function zooKeeperLeftovers(client: Client, prefix: string): Promise<string[]> {
  const children = (path: string): Promise<string[]> =>
    new Promise((resolve, reject) => client.getChildren(path, (error, names) => (error ? (error instanceof zookeeper.Exception && error.getCode() === zookeeper.Exception.NO_NODE ? resolve([]) : reject(error)) : resolve(names))));
  const left: string[] = [];
  for (const family of await children(`/${prefix}`)) {
    for (const lock of await children(`/${prefix}/${family}`)) {
      left.push(`/${prefix}/${family}/${lock}`);
      for (const child of await children(`/${prefix}/${family}/${lock}`)) left.push(`/${prefix}/${family}/${lock}/${child}`);
    }
  }
  return left;
}

/** Waits for `client`'s first connection. */
export function connected(client: Client): Promise<void> {
  if (client.getState().name === 'SYNC_CONNECTED') return Promise.resolve();
  return new Promise((resolve) => client.once('connected', () => resolve()));
}

/** A running ZooKeeper store on `ensemble`. */
export function zooKeeperStore(ensemble: Ensemble): StartedStore {
  const clients: Client[] = [];
  const reader = zooKeeperClient(ensemble);
  clients.push(reader);
  return {
    padlock(options?: StoreFreeOptions) {
      const client = zooKeeperClient(ensemble);
      clients.push(client);
      return Promise.resolve(new Padlock({ ...options, zookeeper: client }));
    },
    async leftovers(prefix) {
      await connected(reader);
      return zooKeeperLeftovers(reader, prefix);
    },
    async stop() {
      for (const client of clients) closeClient(client);
      await ensemble.stop();
    },
  };
}

/** A standalone ZooKeeper server. */
export const zookeeperStandalone: StoreTarget = {
  name: 'ZooKeeper (standalone)',
  async start() {
    return zooKeeperStore(await startZooKeeper(1));
  },
};
