/**
 * The servers a dashboard must SCAN to find every lock: the one server (or Sentinel-managed
 * primary), each master of a Cluster (as the client knows them now: they may change), or each
 * Redlock master. Found by the members each client library's objects have, as src/stores/redis/adapters/clients.ts
 * tells clients apart, never by importing a library.
 */
import { connectionFor, type RedisClient } from '../stores/redis/adapters/clients.js';
import type { CommandConnection } from '../stores/redis/adapters/connection.js';

/** An ioredis or iovalkey `Cluster`: its masters, each an ioredis `Redis`. */
interface IoredisClusterLike {
  readonly isCluster: true;
  nodes(role: 'master'): readonly object[];
}

/** A node-redis cluster: its masters, and a client for each. */
interface NodeRedisClusterLike {
  readonly masters: readonly object[];
  nodeClient(node: object): object | Promise<object>;
}

function isIoredisCluster(client: object): client is IoredisClusterLike {
  return (client as { isCluster?: unknown }).isCluster === true && typeof (client as { nodes?: unknown }).nodes === 'function';
}

function isNodeRedisCluster(client: object): client is NodeRedisClusterLike {
  return Array.isArray((client as { masters?: unknown }).masters) && typeof (client as { nodeClient?: unknown }).nodeClient === 'function';
}

/**
 * The connection of each server whose keyspace holds some of `client`'s locks: the masters of a
 * Cluster, else `client`'s own.
 * @throws PadlockOptionError when `client` is no client padlock knows
 */
export async function scanConnections(client: RedisClient): Promise<CommandConnection[]> {
  const masters = isIoredisCluster(client) ? client.nodes('master') : isNodeRedisCluster(client) ? await Promise.all(client.masters.map(async (master) => await client.nodeClient(master))) : undefined;
  if (masters === undefined) return [connectionFor('redis', client)];
  // A Cluster client learns its masters on connecting: until then the read fails, and is retried.
  if (masters.length === 0) throw new Error('the Cluster client knows no master yet (is it connected?)');
  return masters.map((node, i) => connectionFor(`redis (master ${i})`, node));
}
