/**
 * The multi-lock: one lock over several names, all or nothing. It is made of the mutex's holds of
 * each name, made by the store (so it works wherever the mutex does: its names in any Cluster slots,
 * on Redlock's masters, in a consensus store), and adds only the order: names are taken one after
 * another in one canonical order, so that two callers asking for overlapping sets, in whatever order,
 * never wait on each other in a cycle. A store that can take several names in one step (etcd: one
 * transaction, `Store.takeAll`) takes a fresh owner's names all at once instead. Each name waits,
 * renews and reports its loss exactly as a mutex does; a failure, time-out or abort part-way gives
 * back every name taken before the call rejects.
 */
import { monotonicNow } from '../clock.js';
import { LockNotHeldError, LockTimeoutError } from '../errors.js';
import type { Lease } from '../lease.js';
import { resolveAcquireOptions, type AcquireOptions, type ResolvedAcquireOptions } from '../options.js';
import type { Shared } from '../shared.js';
import type { Store } from '../store.js';
import { WaitScope, withCallersStack } from '../wait-scope.js';
import { newOwnerToken } from '../tokens.js';
import type { Lock, Lockable } from './lock.js';
import { canonicalNames, multiName } from './multi-names.js';
import { MultiLease } from './multi-lease.js';
import { leaseOrNull, withLease } from './scoped.js';

/** A lock over several names (`padlock.multi(names)`): its leases are {@link MultiLease}s. */
export interface MultiLockable extends Lockable {
  /** Its names in canonical order: sorted by UTF-16 code units, duplicates folded. */
  readonly names: readonly string[];
  /**
   * Waits for every name, one after another in canonical order, within one `waitMs` for them all,
   * and returns one lease over all. On a time-out, an abort or an error part-way, releases the names
   * it took before it rejects. With `owner`, re-enters every name held by that owner (rejecting with
   * `LockNotHeldError` if one is not).
   */
  acquire(options?: AcquireOptions): Promise<MultiLease>;
  /**
   * Takes every name if all are free now, never waiting on any (with a `waitMs`, waits like
   * `acquire` up to that long); `null`, with nothing left held, when one is held.
   */
  tryAcquire(options?: AcquireOptions): Promise<MultiLease | null>;
  /**
   * Acquires, runs `fn` with the lease, and releases in `finally`. Inside `fn`, every name's hold is
   * bound to the async context: acquiring any of the names (a mutex, this multi-lock, another
   * multi-lock sharing names) through the same Padlock re-enters it. Rejects with the
   * `LockLostError` if a name is lost while `fn` runs, even when `fn` succeeded.
   */
  withLock<T>(fn: (lease: MultiLease) => T | Promise<T>, options?: AcquireOptions): Promise<T>;
  /** Whether any of its names is locked now (by anyone). */
  isLocked(): Promise<boolean>;
  /** Deletes every name's lock whoever holds it (operators only); true when any was held. */
  forceRelease(): Promise<boolean>;
}

export class MultiLock implements MultiLockable {
  readonly name: string;
  readonly names: readonly string[];
  /** One mutex per name, in canonical order. */
  readonly #mutexes: readonly Lock[];
  /** Each name's lock key (a hold's identity in the runtime), in canonical order. */
  readonly #lockKeys: readonly string[];

  /** @throws PadlockOptionError when `names` is not a non-empty array of lock names. */
  constructor(private readonly shared: Shared, names: unknown) {
    this.names = canonicalNames(names);
    this.name = multiName(this.names);
    this.#mutexes = this.names.map((name) => shared.store.mutex(shared, name));
    this.#lockKeys = this.#mutexes.map((mutex) => mutex.identity);
  }

  acquire(options?: AcquireOptions): Promise<MultiLease> {
    return this.#acquire(options, Infinity);
  }

  tryAcquire(options?: AcquireOptions): Promise<MultiLease | null> {
    return leaseOrNull(this.#acquire(options, 0));
  }

  withLock<T>(fn: (lease: MultiLease) => T | Promise<T>, options?: AcquireOptions): Promise<T> {
    return withLease(fn, () => this.acquire(options), (lease, body) => this.shared.runtime.runScoped(lease.holds, body));
  }

  async isLocked(): Promise<boolean> {
    this.shared.runtime.assertOpen(this.name);
    const locked = await Promise.all(this.#mutexes.map((mutex) => mutex.isLocked()));
    return locked.includes(true);
  }

  async forceRelease(): Promise<boolean> {
    this.shared.runtime.assertOpen(this.name);
    const released = await Promise.all(this.#mutexes.map((mutex) => mutex.forceRelease()));
    return released.includes(true);
  }

  async #acquire(options: AcquireOptions | undefined, defaultWaitMs: number): Promise<MultiLease> {
    const { runtime } = this.shared;
    const opts = resolveAcquireOptions(options, { waitMs: defaultWaitMs, leaseMs: this.shared.leaseMs });
    const contextOwner = this.#contextOwner();
    // While close() drains, a function it lets finish may re-enter what it holds (a fresh name is
    // refused by its mutex); nothing new starts.
    if (contextOwner === undefined) runtime.assertOpen(this.name);
    else runtime.assertHolding(this.name);
    opts.signal?.throwIfAborted();
    const startedAt = monotonicNow();
    // One owner for every name: the one asked for, or that of a name this context holds already
    // (its fresh names join that owner), or a new one.
    const owner = opts.owner ?? contextOwner ?? newOwnerToken();
    const taken: Lease[] = [];
    try {
      // A store that takes several names in one step (etcd: one transaction) takes a fresh owner's
      // all at once; re-entries, and every other store, go name by name.
      const takeAll = this.shared.store.takeAll?.bind(this.shared.store);
      if (takeAll !== undefined && opts.owner === undefined && contextOwner === undefined && this.#mutexes.length > 1) {
        taken.push(...(await this.#takeAllAtOnce(takeAll, owner, opts)));
      } else for (const [i, mutex] of this.#mutexes.entries()) {
        const step = this.#stepOptions(opts, startedAt, taken);
        // Re-entry by owner token re-enters every name, as a mutex's does (LockNotHeldError if one is not held).
        taken.push(await (opts.owner !== undefined ? mutex.acquire({ ...step, owner }) : this.#take(mutex, this.#lockKeys[i] ?? '', owner, step)));
      }
      // A name taken early may have been lost while a later one was awaited.
      const lost = taken.find((lease) => !lease.isHeld);
      if (lost !== undefined) throw lost.signal.aborted ? lost.signal.reason : new LockNotHeldError(lost.name, owner, 'acquire');
      const [first, ...rest] = taken;
      if (first === undefined) throw new Error('a multi-lock has at least one name');
      return new MultiLease(this.name, [first, ...rest]);
    } catch (error) {
      // All or nothing: give back what was taken before the caller hears of the failure.
      await Promise.allSettled(taken.map((lease) => lease.release()));
      if (error instanceof LockTimeoutError) throw withCallersStack(new LockTimeoutError(this.name, monotonicNow() - startedAt));
      throw error;
    }
  }

  /** Takes every name for fresh `owner` in one step of the store's; on any failure, nothing is kept. */
  async #takeAllAtOnce(takeAll: NonNullable<Store['takeAll']>, owner: string, opts: ResolvedAcquireOptions): Promise<Lease[]> {
    const { runtime, store } = this.shared;
    const scope = new WaitScope(this.name, opts.waitMs, opts.signal, runtime.closing, store.replyTimeoutMs, store.extraReplyMs, (lock, ms) => store.noReply(lock, ms));
    try {
      const grants = await takeAll(this.#mutexes, owner, opts, scope);
      const leases: Lease[] = [];
      try {
        for (const [i, mutex] of this.#mutexes.entries()) {
          const grant = grants[i];
          if (grant === undefined) throw new Error(`the store granted ${grants.length} of ${this.#mutexes.length} names`);
          leases.push(await mutex.adoptFresh(owner, grant, opts, scope));
        }
      } catch (error) {
        for (const mutex of this.#mutexes.slice(leases.length)) mutex.abandonFresh(owner);
        await Promise.allSettled(leases.map((lease) => lease.release()));
        throw error;
      }
      return leases;
    } finally {
      scope.dispose();
    }
  }

  /**
   * The options of one name's step: what is left of the whole wait, and a signal that also aborts
   * when a name already taken is lost (waiting on for the rest would be in vain).
   */
  #stepOptions(opts: ResolvedAcquireOptions, startedAt: number, taken: readonly Lease[]): AcquireOptions {
    const waitMs = opts.waitMs === Infinity ? Infinity : Math.max(0, opts.waitMs - (monotonicNow() - startedAt));
    const signals = [...(opts.signal === undefined ? [] : [opts.signal]), ...taken.map((lease) => lease.signal)];
    const signal = signals.length === 0 ? undefined : signals.length === 1 ? signals[0] : AbortSignal.any(signals);
    return { waitMs, leaseMs: opts.leaseMs, autoExtend: opts.autoExtend, signal };
  }

  /** Takes one name: re-enters it if this context or `owner` holds it here, else takes a fresh hold under `owner`. */
  #take(mutex: Lock, lockKey: string, owner: string, step: AcquireOptions): Promise<Lease> {
    const { runtime } = this.shared;
    if (runtime.contextHold(lockKey) !== undefined) return mutex.acquire(step);
    if (runtime.findHold(lockKey, owner) !== undefined) return mutex.acquire({ ...step, owner });
    return mutex.acquireFresh(owner, step);
  }

  /** The owner of the first name (canonical order) whose hold the async context carries, if any. */
  #contextOwner(): string | undefined {
    for (const key of this.#lockKeys) {
      const hold = this.shared.runtime.contextHold(key);
      if (hold !== undefined) return hold.owner;
    }
    return undefined;
  }
}
