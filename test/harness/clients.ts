/**
 * Clients of every library padlock accepts, made as a user would make them, for the behaviour
 * suites' client dimension (./suite.ts): ioredis 5, node-redis 6, 5 and 4, and iovalkey, each to a
 * single server, a Sentinel set or a Cluster where the library offers it. Each is connected before
 * it is handed out (node-redis needs `await connect()`), tracked, and closed after the file's tests.
 *
 * The few things tests do with a client besides giving it to a Padlock (a read on its connection,
 * quitting it) go through {@link opsOf}, which knows each library's way.
 */
import { after } from 'node:test';
import { Cluster as IoredisCluster, Redis as Ioredis } from 'ioredis';
import { Cluster as ValkeyCluster, Redis as Valkey } from 'iovalkey';
import { createClient as createClient6, createCluster as createCluster6, createSentinel as createSentinel6 } from '@redis/client';
import { createClient as createClient5, createCluster as createCluster5, createSentinel as createSentinel5 } from 'redis5';
import { createClient as createClient4, createCluster as createCluster4 } from 'redis4';
import type { RedisServer } from '../../src/devserver/redis-server.js';
import type { RedisClient } from '../../src/index.js';
import { orderOf } from '../../src/stores/redis/adapters/node-redis.js';

/** The client libraries the suites run against, by the name tests show. */
export const CLIENTS = ['ioredis', 'node-redis', 'node-redis 5', 'node-redis 4', 'iovalkey'] as const;
export type ClientName = (typeof CLIENTS)[number];

/** Where a client connects: one server, a Sentinel set (by its sentinels and master name), or a Cluster (by its nodes). */
export type Target =
  | { readonly kind: 'server'; readonly server: RedisServer }
  | { readonly kind: 'sentinel'; readonly sentinels: readonly RedisServer[]; readonly name: string }
  | { readonly kind: 'cluster'; readonly nodes: readonly RedisServer[] };

/** What tests do with a client, whatever its library. */
export interface ClientOps {
  /** `EXISTS key` on the connection that carries the client's calls for `key`. */
  exists(key: string): Promise<number>;
  /** Closes it gracefully (QUIT, or node-redis's `close()`). */
  quit(): Promise<void>;
  /** Drops its sockets at once. */
  disconnect(): void;
}

const ops = new WeakMap<object, ClientOps>();
const made: ClientOps[] = [];

after(() => {
  for (const client of made) client.disconnect();
});

/** The {@link ClientOps} of a client made here. */
export function opsOf(client: RedisClient): ClientOps {
  const found = ops.get(client);
  if (found === undefined) throw new Error('this client was not made by test/harness/clients.ts');
  return found;
}

function register<C extends RedisClient>(client: C, clientOps: ClientOps): C {
  ops.set(client, clientOps);
  made.push(clientOps);
  return client;
}

/** Whether `library` can reach `target` (node-redis 4 has no Sentinel support). */
export function reaches(library: ClientName, target: Target['kind']): boolean {
  return !(library === 'node-redis 4' && target === 'sentinel');
}

/** Structural views of what tests call on each library's objects (their own types are heavy generics). */
interface IoredisFamily {
  exists(key: string): Promise<number>;
  quit(): Promise<unknown>;
  disconnect(): void;
  on(event: 'error', listener: (error: Error) => void): unknown;
}
interface NodeRedisAny {
  on(event: 'error', listener: (error: Error) => void): unknown;
  connect(): Promise<unknown>;
  close?(): Promise<unknown>;
  quit?(): Promise<unknown>;
  destroy?(): unknown;
  disconnect?(): Promise<unknown>;
}
type SendStandalone = (args: string[]) => Promise<unknown>;
type SendCluster = (firstKey: string, isReadonly: boolean, args: string[]) => Promise<unknown>;
type SendSentinel = (isReadonly: boolean, args: string[]) => Promise<unknown>;

function ioredisFamily<C extends IoredisFamily & RedisClient>(client: C): C {
  client.on('error', () => undefined); // tests that kill servers provoke connection errors on purpose
  return register(client, {
    exists: (key) => client.exists(key),
    quit: async () => void (await client.quit()),
    disconnect: () => client.disconnect(),
  });
}

async function nodeRedis(client: NodeRedisAny & RedisClient, exists: (key: string) => Promise<unknown>): Promise<RedisClient> {
  client.on('error', () => undefined);
  let open = true;
  const clientOps: ClientOps = {
    exists: async (key) => Number(await exists(key)),
    quit: async () => {
      if (!open) return;
      open = false;
      // 5 and 6: close(); 4: quit().
      if (client.close !== undefined) await client.close();
      else await client.quit?.();
    },
    disconnect: () => {
      if (!open) return;
      open = false;
      if (client.destroy !== undefined) void client.destroy();
      else client.disconnect?.().catch(() => undefined);
    },
  };
  register(client, clientOps);
  await client.connect();
  return client;
}

/** A client of `library` to `target`, connected, closed after the file's tests. */
export async function clientOf(library: ClientName, target: Target): Promise<RedisClient> {
  if (!reaches(library, target.kind)) throw new Error(`${library} cannot reach a ${target.kind}`);
  switch (library) {
    case 'ioredis':
      return ioredisFamily(ioredisOf(target, Ioredis, IoredisCluster));
    case 'iovalkey':
      return ioredisFamily(ioredisOf(target, Valkey as unknown as typeof Ioredis, ValkeyCluster as unknown as typeof IoredisCluster));
    case 'node-redis':
    case 'node-redis 5':
    case 'node-redis 4':
      return nodeRedisOf(library, target);
    default:
      throw new Error(`unknown client library ${String(library satisfies never)}`);
  }
}

/** ioredis and iovalkey have the same constructors (iovalkey's types are cast to ioredis's: the same surface). */
function ioredisOf(target: Target, RedisClass: typeof Ioredis, ClusterClass: typeof IoredisCluster): Ioredis | IoredisCluster {
  switch (target.kind) {
    case 'server':
      return new RedisClass({ host: target.server.host, port: target.server.port });
    case 'sentinel':
      return new RedisClass({ sentinels: target.sentinels.map((s) => ({ host: s.host, port: s.port })), name: target.name });
    case 'cluster':
      return new ClusterClass(target.nodes.map((s) => ({ host: s.host, port: s.port })));
  }
}

/** The three node-redis majors differ in what they export (4 has no Sentinel), not in how they are made. */
function nodeRedisOf(library: 'node-redis' | 'node-redis 5' | 'node-redis 4', target: Target): Promise<RedisClient> {
  // Each major's factories, seen through one plain signature (their generic ones do not unify).
  type Factory<O> = ((options: O) => unknown) | undefined;
  type SocketOptions = { socket: { host: string; port: number } };
  const factories: { client: Factory<SocketOptions>; cluster: Factory<{ rootNodes: SocketOptions[] }>; sentinel: Factory<{ name: string; sentinelRootNodes: { host: string; port: number }[] }> } = {
    'node-redis': { client: createClient6, cluster: createCluster6, sentinel: createSentinel6 },
    'node-redis 5': { client: createClient5, cluster: createCluster5, sentinel: createSentinel5 },
    'node-redis 4': { client: createClient4, cluster: createCluster4, sentinel: undefined },
  }[library];
  const make = <O>(factory: Factory<O>, options: O): unknown => {
    if (factory === undefined) throw new Error(`${library} cannot reach a ${target.kind}`);
    return factory(options);
  };
  switch (target.kind) {
    case 'server': {
      const client = make(factories.client, { socket: { host: target.server.host, port: target.server.port } }) as NodeRedisAny & RedisClient & { sendCommand: SendStandalone };
      return nodeRedis(client, (key) => client.sendCommand(['EXISTS', key]));
    }
    case 'cluster': {
      const rootNodes = target.nodes.map((s) => ({ socket: { host: s.host, port: s.port } }));
      const cluster = make(factories.cluster, { rootNodes }) as NodeRedisAny & RedisClient & { sendCommand: SendCluster };
      return nodeRedis(cluster, (key) => cluster.sendCommand(key, false, ['EXISTS', key]));
    }
    case 'sentinel': {
      const sentinelRootNodes = target.sentinels.map((s) => ({ host: s.host, port: s.port }));
      const sentinel = make(factories.sentinel, { name: target.name, sentinelRootNodes }) as NodeRedisAny & RedisClient & { sendCommand: SendSentinel };
      // padlock sends a sentinel's calls one at a time, in order (src/stores/redis/adapters/node-redis.ts): a read
      // behind them takes its turn in the same queue.
      return nodeRedis(sentinel, (key) => orderOf(sentinel)(() => sentinel.sendCommand(false, ['EXISTS', key])));
    }
  }
}
