/**
 * Test harness: real ZooKeeper servers (./zookeeper-servers.ts) stopped after the file's tests.
 */
import { after } from 'node:test';
import { startEnsemble, type Ensemble } from './zookeeper-servers.js';

export { fourLetters, type Ensemble, type ZooKeeperServer } from './zookeeper-servers.js';

const ensembles: Ensemble[] = [];
after(() => Promise.all(ensembles.map((e) => e.stop())));

/** Starts `size` ZooKeeper servers (1: standalone; 3: an ensemble), stopped after this file's tests. */
export async function startZooKeeper(size = 1, options: { maxSessionTimeoutMs?: number } = {}): Promise<Ensemble> {
  const ensemble = await startEnsemble(size, options);
  ensembles.push(ensemble);
  return ensemble;
}
