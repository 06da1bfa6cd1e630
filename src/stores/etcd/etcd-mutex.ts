/**
 * The mutex and the fair mutex on etcd: one `lock` key per participant; the first key by create
 * revision holds, each waiter watches the key just before it. Both are FIFO (a waiter is never
 * overtaken): on etcd the mutex is as fair as the fair mutex, and costs the same. `mutex(name)` and
 * `fairMutex(name)` are one lock, as on Redis (they share the key prefix): a holder of either
 * excludes the other.
 */
import type { LockKindName } from '../../store.js';
import type { Shared } from '../../shared.js';
import { EtcdKind } from './etcd-kind.js';
import type { EtcdStore } from './etcd-store.js';

export class EtcdMutex extends EtcdKind {
  readonly kind: LockKindName;

  constructor(shared: Shared, etcd: EtcdStore, name: string, kind: 'mutex' | 'fairMutex') {
    super(shared, etcd, name, 'mutex', 'lock');
    this.kind = kind;
  }
}
