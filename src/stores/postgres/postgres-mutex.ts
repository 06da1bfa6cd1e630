/**
 * The mutex and the fair mutex on PostgreSQL: one `lock` row per participant; the first by ticket
 * holds, and a release wakes the next one only. Both are FIFO (a waiter is never overtaken: a newcomer
 * gets a later ticket), so on PostgreSQL the mutex is as fair as the fair mutex, and costs the same.
 * `mutex(name)` and `fairMutex(name)` are one lock, as on Redis (they share the family): a holder of
 * either excludes the other.
 */
import type { Shared } from '../../shared.js';
import type { LockKindName } from '../../store.js';
import { PostgresKind } from './postgres-kind.js';
import type { PostgresStore } from './postgres-store.js';

export class PostgresMutex extends PostgresKind {
  readonly kind: LockKindName;

  constructor(shared: Shared, pg: PostgresStore, name: string, kind: 'mutex' | 'fairMutex') {
    super(shared, pg, name, 'mutex', 'lock');
    this.kind = kind;
  }
}
