/** Opens the store a Padlock's options name (exactly one, checked by options.ts). */
import type { ResolvedPadlockOptions, StoreOption } from '../options.js';
import type { Store, StoreHost } from '../store.js';
import { asEtcd3 } from './etcd/etcd-client-check.js';
import { EtcdStore } from './etcd/etcd-store.js';
import { RedisStore } from './redis-store.js';
import { asZooKeeperClient } from './zookeeper/check-client.js';
import { ZooKeeperStore } from './zookeeper/zookeeper-store.js';

/** The store for `options` (resolved), reporting to `host`. */
export function openStore(options: ResolvedPadlockOptions & { readonly store: StoreOption }, host: StoreHost): Store {
  switch (options.store.kind) {
    case 'redis':
      return new RedisStore({ ...options, redis: options.store.redis }, host);
    case 'zookeeper':
      return new ZooKeeperStore({ client: asZooKeeperClient(options.store.client), prefix: options.prefix, replyTimeoutMs: options.replyTimeoutMs }, host);
    case 'etcd':
      return new EtcdStore({ ...options, client: asEtcd3(options.store.client) }, host);
  }
}
