/**
 * Removes the lock znodes nobody holds or waits for any more. The last participant to leave a lock
 * deletes its znode with its own child; but when it dies instead (its session expired, its
 * ephemeral child went with it), nobody does, and a lock name never used again would keep an empty
 * znode for good. So each ZooKeeper store looks for such znodes once its session first connects,
 * and then every {@link SWEEP_EVERY_MS}: a read of each family's children and of each lock's stat
 * (reads, served by the server the client is connected to), and a delete only where the stat says
 * the lock has no child. The delete fails harmlessly when someone joined meanwhile (ZooKeeper never
 * deletes a znode that has children), and a participant that finds the znode gone as it joins
 * creates it again with its child (zookeeper-lock.ts).
 */
import type { ZooKeeperOps } from './zookeeper-client.js';
import { FAMILIES } from './zookeeper-catalog.js';

/** How often a store looks for abandoned lock znodes after the first time (jittered ±20 %, so processes started together spread out). */
export const SWEEP_EVERY_MS = 10 * 60_000;

/** Locks read per round trip (a family may hold many). */
const BATCH = 200;

/**
 * Deletes every lock znode under `root` (`/<prefix>`) that has no child; resolves with how many it
 * deleted. Never rejects: a sweep that fails is tried again at the next one.
 */
export async function sweepAbandonedLocks(ops: ZooKeeperOps, root: string): Promise<number> {
  let deleted = 0;
  try {
    for (const family of FAMILIES) {
      const names = (await ops.children(`${root}/${family}`)) ?? [];
      for (let i = 0; i < names.length; i += BATCH) {
        const paths = names.slice(i, i + BATCH).map((name) => `${root}/${family}/${name}`);
        const stats = await Promise.all(paths.map((path) => ops.exists(path)));
        const empty = paths.filter((_, j) => stats[j]?.numChildren === 0);
        const removed = await Promise.all(empty.map((path) => ops.remove(path).catch(() => false)));
        deleted += removed.filter(Boolean).length;
      }
    }
  } catch {
    // A lost connection or a closed client: the next sweep looks again.
  }
  return deleted;
}
