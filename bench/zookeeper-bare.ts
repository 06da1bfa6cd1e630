/**
 * The bare ZooKeeper lock recipe the issue measured, with nothing of padlock's around it: create an
 * ephemeral sequential child, list the children, delete the child. What a mutex on ZooKeeper costs
 * at the least, uncontended (a waiter would also watch its predecessor).
 */
import type { ZooKeeperOps } from '../src/stores/zookeeper/zookeeper-client.js';

/** One acquire+release of the bare recipe under `parent` (which must exist: `ops.ensurePath`). */
export function bareRecipe(ops: ZooKeeperOps, parent: string): () => Promise<void> {
  return async () => {
    const path = await ops.createSequential(parent, 'lock', Buffer.alloc(0));
    await ops.children(parent);
    await ops.remove(path);
  };
}
