/**
 * The seam between what every lock does (the public classes, leases, holds and hold counts, the
 * async-context registry, waits and aborts, `multi`'s order, events, metrics, errors: store-neutral)
 * and where its data lives. A store makes the locks of each kind it serves, renews holds in batches
 * for the watchdog, and says which kinds it refuses and why. How a kind takes, waits without polling,
 * re-enters and releases is the store's own: Redis runs Lua scripts through a topology and wakes
 * waiters by pub/sub (stores/redis/redis-store.ts); a consensus store keeps a sequential node per waiter
 * and watches it.
 *
 * A store's lock kinds extend {@link Lock} (locks/lock.ts) and implement its few abstract members;
 * everything else a lock does is done once, above the store.
 */
import type { LockCatalog } from './catalog.js';
import type { StoreUnavailableError } from './errors.js';
import type { Hold } from './hold.js';
import type { Grant, Lock } from './locks/lock.js';
import type { ResolvedAcquireOptions } from './options.js';
import type { WaitScope } from './wait-scope.js';
import type { ReadWriteLock } from './locks/read-write-lock.js';
import type { SemaphoreLock } from './locks/semaphore-lock.js';
import type { Shared } from './shared.js';

/** The lock kinds a Padlock makes, by their factory's name. */
export type LockKindName = 'mutex' | 'fairMutex' | 'readWrite' | 'semaphore' | 'multi';

/** What the store needs from its Padlock. */
export interface StoreHost {
  /** Lets clean-up work run on after its caller moved on; `close()` waits for it. */
  track(work: Promise<unknown>): void;
  /** Whether the Padlock holds any lock now. */
  holding(): boolean;
  /** Reports trouble (renewals, the subscriber): one `error` event per outage. */
  report(error: unknown): void;
  /**
   * A hint that this Padlock's holds of lock `name` may have been freed by force (an operator's
   * `forceRelease`): each is checked in the store at once and told lost only if the store no longer
   * has it. A hint alone never ends a hold (it may be stale, or forged).
   */
  suspect(name: string): void;
}

/** Where a Padlock's locks live. */
export interface Store {
  /** What this store is, for messages: e.g. `'a single Redis server'`, `'a ZooKeeper ensemble'`. */
  readonly description: string;
  /** What holds a lock in this store, for messages: `'znode'` on ZooKeeper; absent, `'key'` (Redis, etcd). */
  readonly lockRecord?: string;
  /** The longest any one call waits for the store's reply, in ms. */
  readonly replyTimeoutMs: number;
  /**
   * How long a call may take beyond the store's own answer (a `WAIT` for replicas, a Redlock round's
   * per-master time-outs), in ms: a wait's grace for a call near its deadline grows by this much.
   */
  readonly extraReplyMs: number;
  /** The error for a call with no reply within `ms` (the store's own subclass). */
  noReply(lock: string | undefined, ms: number): StoreUnavailableError;
  /**
   * Why this store cannot serve lock kind `kind` soundly (the Padlock then refuses to make such a
   * lock, naming both), or `undefined` when it can.
   */
  refuses(kind: LockKindName): string | undefined;
  /** A reentrant mutex named `name` (checked by the caller). `multi` is made of these. */
  mutex(shared: Shared, name: string): Lock;
  /**
   * Takes fresh holds of every one of `locks` (mutexes this store made, in canonical order) for
   * `owner`, all or none, in one step where the store can (etcd: one transaction), waiting within
   * `scope` as a lock's own take does; one grant per lock, in order. Absent: `multi` takes the names
   * one after another in canonical order (every store can).
   */
  takeAll?(locks: readonly Lock[], owner: string, options: ResolvedAcquireOptions, scope: WaitScope): Promise<Grant[]>;
  /** A FIFO-fair reentrant mutex. */
  fairMutex(shared: Shared, name: string): Lock;
  /** A read/write lock's two sides. */
  readWrite(shared: Shared, name: string): ReadWriteLock;
  /** A semaphore of `permits` (checked by the caller). */
  semaphore(shared: Shared, name: string, permits: number): SemaphoreLock;
  /** Which holds the watchdog may renew in one {@link renewMany} call: holds with the same group. */
  renewalGroup(hold: Hold): string;
  /**
   * Renews holds of one renewal group, in as few round trips as the store allows. Resolves with
   * each hold's remaining lease in ms, in order: > 0 renewed, ≤ 0 the store no longer has it (lost),
   * `undefined` where the store did not answer (`report` is told why, once per failed call). Never
   * rejects.
   */
  renewMany(holds: readonly Hold[], report: (error: unknown) => void): Promise<(number | undefined)[]>;
  /** Told when a hold starts being tracked (Redis refreshes its liveness key then). */
  holding(): void;
  /**
   * Called by `close()` beside the releases of what is left: what the store must finish before its
   * connections close (Redis: deleting the liveness key), within `ms`. Never rejects.
   */
  retire(ms: number): Promise<void>;
  /** Closes what the store opened (never a client it was given). Never rejects. */
  close(): Promise<void>;
  /**
   * An operator's read of every lock in use (`padlock list`, `inspect` and `release` on a consensus
   * store). The Redis store has none: the operator commands read Redis's keys themselves
   * (stores/redis/inspection.ts), on every topology, without a Padlock.
   */
  catalog?(): LockCatalog;
}

/**
 * {@link Store.renewMany} for a store whose one renewal call answers every hold of the group:
 * `renew`'s answer, or (its failure told to `report`) no answer for any hold.
 */
export async function renewInOneCall(holds: readonly Hold[], renew: (holds: readonly Hold[]) => Promise<number[]>, report: (error: unknown) => void): Promise<(number | undefined)[]> {
  try {
    return await renew(holds);
  } catch (error) {
    report(error);
    return holds.map(() => undefined);
  }
}
