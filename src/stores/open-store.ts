/**
 * Opens the store a Padlock's options name (exactly one, checked by options.ts). The consensus
 * clients were checked by shape there; here they become the library types their stores call.
 */
import type { ResolvedPadlockOptions, StoreOption } from '../options.js';
import type { Store, StoreHost } from '../store.js';
import type { Etcd3 } from 'etcd3';
import type { Client as ZooKeeperClient } from 'node-zookeeper-client';
import { EtcdStore } from './etcd/etcd-store.js';
import type { Pool as PostgresPool } from 'pg';
import { PostgresStore } from './postgres/postgres-store.js';
import { RedisStore } from './redis/redis-store.js';
import { ZooKeeperStore } from './zookeeper/zookeeper-store.js';

/** The store for `options` (resolved), reporting to `host`. */
export function openStore(options: ResolvedPadlockOptions & { readonly store: StoreOption }, host: StoreHost): Store {
  switch (options.store.kind) {
    case 'redis':
      return new RedisStore({ ...options, redis: options.store.redis }, host);
    case 'zookeeper':
      return new ZooKeeperStore({ client: options.store.client as unknown as ZooKeeperClient, factory: options.store.factory, prefix: options.prefix, replyTimeoutMs: options.replyTimeoutMs }, host);
    case 'etcd':
      return new EtcdStore({ ...options, client: options.store.client as unknown as Etcd3 }, host);
    case 'postgres':
      return new PostgresStore({ pool: options.store.pool as unknown as PostgresPool, prefix: options.prefix, schema: options.store.schema, createSchema: options.store.createSchema, replyTimeoutMs: options.replyTimeoutMs }, host);
  }
}
