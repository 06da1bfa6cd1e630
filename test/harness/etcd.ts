/**
 * Test harness: real etcd members (./etcd-servers.ts) stopped after the file's tests.
 */
import { after } from 'node:test';
import { startCluster, type Cluster } from './etcd-servers.js';

export type { Cluster, EtcdMember } from './etcd-servers.js';

const clusters: Cluster[] = [];
after(() => Promise.all(clusters.map((c) => c.stop())));

/** Starts `size` etcd members (1, or 3 for a cluster), stopped after this file's tests. */
export async function startEtcd(size = 1): Promise<Cluster> {
  const cluster = await startCluster(size);
  clusters.push(cluster);
  return cluster;
}
