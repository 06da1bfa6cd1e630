/**
 * The mutex on ZooKeeper: the first `lock` child holds, each waiter watches its predecessor. Both
 * `mutex(name)` and `fairMutex(name)` are this one lock (one znode), and both are FIFO: a sequential
 * child per waiter leaves no room for barging (docs/zookeeper.md).
 */
import type { Shared } from '../../shared.js';
import { ZooKeeperKind } from './zookeeper-kind.js';
import type { ZooKeeperStore } from './zookeeper-store.js';

export class ZooKeeperMutex extends ZooKeeperKind {
  constructor(shared: Shared, store: ZooKeeperStore, name: string, kind: 'mutex' | 'fairMutex') {
    super(shared, store, name, 'mutex', kind, 'lock', ['lock']);
  }
}
