/**
 * The etcd store: every lock is a key prefix, every holder and waiter a key under it attached to
 * this Padlock's one etcd lease (lease-clock.ts), waits are watches on the nearest earlier key
 * (etcd-lock.ts). What the etcd kinds share lives here: the client's operations, the lease (granted
 * on the first take, replaced once lost, revoked at close), the bound and typing of every call, and
 * the local expiry of holds taken with `autoExtend: false` (docs/etcd.md).
 */
import type { Etcd3, Watcher } from 'etcd3';
import { bound, monotonicNow, settleWithin } from '../../clock.js';
import { EtcdUnavailableError } from '../../errors.js';
import { unavailable } from './etcd-errors.js';
import type { Hold } from '../../hold.js';
import type { Grant, Lock } from '../../locks/lock.js';
import type { ResolvedAcquireOptions } from '../../options.js';
import type { WaitScope } from '../../wait-scope.js';
import type { ReadWriteLock } from '../../locks/read-write-lock.js';
import type { SemaphoreLock } from '../../locks/semaphore-lock.js';
import type { Shared } from '../../shared.js';
import { renewInOneCall, type LockKindName, type Store, type StoreHost } from '../../store.js';
import type { LockCatalog } from '../../catalog.js';
import { EtcdCatalog } from './etcd-catalog.js';
import { EtcdOps } from './etcd-client.js';
import { EtcdKind } from './etcd-kind.js';
import { EtcdMutex } from './etcd-mutex.js';
import { etcdReadWrite } from './etcd-read-write.js';
import { EtcdSemaphore } from './etcd-semaphore.js';
import { LeaseClock, lostReason, type LeaseLoss } from './lease-clock.js';
import { formatMs } from '../../durations.js';

/** The etcd options a Padlock was given, resolved. */
export interface EtcdStoreOptions {
  readonly client: Etcd3;
  /** The root of every key (the Padlock's `prefix`). */
  readonly prefix: string;
  /** The lease's TTL, rounded up to whole seconds (etcd may raise it to its minimum). */
  readonly leaseMs: number;
  readonly replyTimeoutMs: number;
}

/** A hold taken with `autoExtend: false`: its key is deleted when its own lease runs out. */
interface Expiry {
  at: number;
  timer: NodeJS.Timeout;
}

export class EtcdStore implements Store {
  readonly description = 'an etcd cluster';
  readonly replyTimeoutMs: number;
  readonly extraReplyMs = 0;
  readonly ops: EtcdOps;
  readonly prefix: string;
  readonly #leaseMs: number;
  readonly #host: StoreHost;
  #clock: LeaseClock | undefined;
  #granting: Promise<LeaseClock> | undefined;
  #shared: Shared | undefined;
  #closed = false;
  readonly #expiries = new Map<string, Expiry>();
  /** The watch on the lease's told key (a force-release names there the lock it freed), while the lease lives. */
  #told: Promise<Watcher | undefined> | undefined;

  constructor(options: EtcdStoreOptions, host: StoreHost) {
    this.ops = new EtcdOps(options.client, { replyTimeoutMs: options.replyTimeoutMs });
    this.prefix = options.prefix;
    this.#leaseMs = options.leaseMs;
    this.replyTimeoutMs = options.replyTimeoutMs;
    this.#host = host;
  }

  noReply(lock: string | undefined, ms: number): EtcdUnavailableError {
    return new EtcdUnavailableError(lock, undefined, `no reply within ${formatMs(ms)}`);
  }

  /** Every kind is served (multi: in canonical order, see docs/etcd.md). */
  refuses(_kind: LockKindName): string | undefined {
    return undefined;
  }

  mutex(shared: Shared, name: string): Lock {
    return new EtcdMutex(this.#bind(shared), this, name, 'mutex');
  }

  /** Several names in one transaction, all or none (`multi`). */
  takeAll(locks: readonly Lock[], owner: string, options: ResolvedAcquireOptions, scope: WaitScope): Promise<Grant[]> {
    const kinds = locks.map((lock) => {
      if (lock instanceof EtcdKind) return lock;
      throw new TypeError(`lock "${lock.name}" reached the etcd store, which did not make it`);
    });
    return EtcdKind.takeAll(kinds, owner, options, scope);
  }

  fairMutex(shared: Shared, name: string): Lock {
    return new EtcdMutex(this.#bind(shared), this, name, 'fairMutex');
  }

  readWrite(shared: Shared, name: string): ReadWriteLock {
    return etcdReadWrite(this.#bind(shared), this, name);
  }

  semaphore(shared: Shared, name: string, permits: number): SemaphoreLock {
    return new EtcdSemaphore(this.#bind(shared), this, name, permits);
  }

  /** One lease serves every hold: one group, one read per renewal. */
  renewalGroup(_hold: Hold): string {
    return 'etcd';
  }

  renewMany(holds: readonly Hold[], report: (error: unknown) => void): Promise<(number | undefined)[]> {
    return renewInOneCall(holds, (all) => this.renew(all), report);
  }

  /**
   * Each hold's remaining lease in ms, by this client's clock: ≤ 0 where its key is gone (released by
   * force, or its lease expired), else until its lease surely lives (the Padlock's lease clock; a
   * hold re-entered by owner under another client's lease: that lease's TTL as etcd says), and no
   * later than its own expiry (`autoExtend: false`). With `ms` (an `extend`), such an expiry moves to
   * `ms` from now; the lease itself is etcd's TTL, not lengthened. Rejects `EtcdUnavailableError`.
   */
  async renew(holds: readonly Hold[], ms?: number): Promise<number[]> {
    const start = monotonicNow();
    const keys = holds.map((hold) => kindOf(hold).keyOf(hold.owner) ?? '');
    const leases = await this.call(holds[0]?.name, this.ops.leasesOf(keys));
    const clock = this.#clock;
    return Promise.all(
      keys.map(async (key, i) => {
        const lease = leases[i];
        if (key === '' || lease === undefined) return 0;
        let remaining: number;
        if (clock !== undefined && lease === clock.id) remaining = clock.aliveUntil - start;
        else remaining = await this.call(holds[i]?.name, this.ops.leaseRemainingMs(lease));
        const expiry = this.#expiries.get(key);
        if (expiry !== undefined && ms !== undefined) this.expire(key, ms);
        const own = this.#expiries.get(key);
        return own === undefined ? remaining : Math.min(remaining, own.at - start);
      }),
    );
  }

  holding(): void {}

  /** Revokes the lease: every key this Padlock left (holds, waits) is deleted at once. */
  async retire(ms: number): Promise<void> {
    this.#closed = true;
    this.#stopListening();
    for (const { timer } of this.#expiries.values()) clearTimeout(timer);
    this.#expiries.clear();
    const clock = this.#clock ?? (await this.#granting?.catch(() => undefined));
    if (clock === undefined) return;
    await settleWithin(clock.close(), ms);
  }

  async close(): Promise<void> {
    await this.retire(this.replyTimeoutMs);
  }

  /**
   * The lease the next take's keys are attached to: the one alive now, or a new one (granted once
   * for concurrent takes). A lost lease is revoked in the background (its keys may outlive the loss
   * this client saw: a deadline passed while etcd still had it).
   */
  lease(): Promise<LeaseClock> {
    const clock = this.#clock;
    if (clock?.alive === true) return Promise.resolve(clock);
    if (this.#closed) return Promise.reject(new EtcdUnavailableError(undefined, undefined, 'the Padlock is closing'));
    if (clock !== undefined) {
      this.#clock = undefined;
      this.#stopListening();
      this.#host.track(settleWithin(clock.close(), this.replyTimeoutMs));
    }
    this.#granting ??= this.call(undefined, LeaseClock.grant(this.ops, this.#leaseMs))
      .then((granted) => {
        if (this.#closed) {
          void granted.close().catch(() => undefined);
          throw new EtcdUnavailableError(undefined, undefined, 'the Padlock is closing');
        }
        this.#clock = granted;
        granted.onLost((loss) => this.#lost(granted, loss));
        // Listening before the lease's first hold, so that a force-release of it is heard: one watch
        // per lease, confirmed in about a round trip, nothing per acquisition.
        return settleWithin(this.#listen(granted), this.replyTimeoutMs).then(() => granted);
      })
      .finally(() => (this.#granting = undefined));
    return this.#granting;
  }

  /**
   * The told key of lease `lease` (decimal id): `<prefix>/told/<lease hex>`, where a force-release
   * names the lock it freed of that lease's holds (a key attached to that lease, gone with it).
   */
  toldKey(lease: string): string {
    return `${this.prefix}/told/${BigInt(lease).toString(16)}`;
  }

  /** After a force-release of lock `name`: tells the holders' Padlocks, by their leases, at once (best effort: a holder not told learns at its next renewal). */
  async tellHolders(name: string, leases: readonly string[]): Promise<void> {
    await Promise.allSettled([...new Set(leases)].map((lease) => this.ops.putOnLease(this.toldKey(lease), name, lease)));
  }

  /** Watches `clock`'s told key: each lock named there has its holds here checked at once. Never rejects. */
  #listen(clock: LeaseClock): Promise<Watcher | undefined> {
    const told = this.ops.watchPuts(this.toldKey(clock.id), (name) => this.#host.suspect(name)).then(
      (watcher) => {
        if (this.#told !== told) void watcher.cancel().catch(() => undefined); // the lease was replaced meanwhile
        return watcher;
      },
      (error: unknown) => {
        this.#host.report(unavailable(undefined, error));
        return undefined;
      },
    );
    this.#told = told;
    return told;
  }

  /** Cancels the told key's watch (the lease is replaced, or the Padlock closes). */
  #stopListening(): void {
    const told = this.#told;
    this.#told = undefined;
    void told?.then((watcher) => watcher?.cancel()).catch(() => undefined);
  }

  /** An operator's read of every lock under this Padlock's prefix (`padlock list --etcd`). */
  catalog(): LockCatalog {
    return new EtcdCatalog(this.ops, this.prefix, `etcd (prefix ${this.prefix})`);
  }

  /** The lease alive now, if one was granted (never grants one). */
  get currentLease(): LeaseClock | undefined {
    return this.#clock;
  }

  /** Deletes `key` in `ms` unless released or extended before (a hold with `autoExtend: false`). */
  expire(key: string, ms: number): void {
    const before = this.#expiries.get(key);
    if (before !== undefined) clearTimeout(before.timer);
    const timer = setTimeout(() => {
      this.#expiries.delete(key);
      this.#host.track(this.ops.remove(key).catch(() => undefined));
    }, ms);
    timer.unref();
    this.#expiries.set(key, { at: monotonicNow() + ms, timer });
  }

  /** Forgets the expiry of `key` (its hold was released). */
  unexpire(key: string): void {
    const expiry = this.#expiries.get(key);
    if (expiry === undefined) return;
    clearTimeout(expiry.timer);
    this.#expiries.delete(key);
  }

  /** How long the hold by `key` surely lasts from `sentAt`: its lease, capped by its own expiry. */
  remainingFrom(key: string, lease: LeaseClock, sentAt: number): number {
    const expiry = this.#expiries.get(key);
    return Math.min(lease.aliveUntil, expiry?.at ?? Infinity) - sentAt;
  }

  /**
   * `work` bounded by the reply time-out; etcd3's errors (unreachable, no leader, time-outs) become
   * `EtcdUnavailableError`, padlock's own pass through.
   */
  call<T>(lock: string | undefined, work: Promise<T>): Promise<T> {
    return bound(
      work.catch((error: unknown) => {
        throw unavailable(lock, error);
      }),
      { ms: this.replyTimeoutMs, timeout: () => this.noReply(lock, this.replyTimeoutMs) },
    );
  }

  /** Every hold under `clock` is lost with it: each one's `lease.signal` aborts with `LockLostError`. */
  #lost(clock: LeaseClock, loss: LeaseLoss): void {
    const runtime = this.#shared?.runtime;
    if (runtime === undefined) return;
    for (const hold of [...runtime.holds.values()]) {
      if (hold.lock instanceof EtcdKind && hold.lock.leaseOf(hold.owner) === clock.id) runtime.lost(hold, lostReason(loss));
    }
  }

  #bind(shared: Shared): Shared {
    this.#shared ??= shared;
    return shared;
  }
}


function kindOf(hold: Hold): EtcdKind {
  if (hold.lock instanceof EtcdKind) return hold.lock;
  throw new TypeError(`a hold of lock "${hold.name}" reached the etcd store, which did not make its lock`);
}
