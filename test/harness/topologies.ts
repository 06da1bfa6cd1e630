/**
 * Real Redis topologies on loopback for tests, each process stopped after the file's tests:
 * - independent masters (Redlock): `startServers(n)` from ./redis.ts;
 * - a replicated set under Sentinel: {@link startSentinelSet};
 * - a Redis Cluster: {@link startCluster}.
 * Every wait has a deadline and fails with a {@link TopologyTimeoutError} naming what did not happen.
 */
export { startServers } from './redis.js';
export { startSentinelSet, SentinelSet, type SentinelSetOptions, type SentinelFailover, type SentinelClientOptions } from './sentinel.js';
export type { Fault } from './faults.js';
export { startCluster, RedisCluster, type ClusterTopologyOptions, type ClusterFailover, type SlotMigration, type ClusterClientOptions } from './cluster.js';
export { TopologyTimeoutError, waitUntil, notYet, NotYet, type WaitOptions } from './deadline.js';
export { admin, command, info } from './admin.js';
