/**
 * The ZooKeeper store: every lock a znode, every holder or waiter an ephemeral sequential child of
 * it (zookeeper-lock.ts), on a `node-zookeeper-client` client the application gives (connected or
 * not yet). What its kinds share lives here: the promise face of the client, the session's
 * conservative deadline (session-clock.ts), the fixed leases' ends, and the recipes of the locks
 * in use (so a re-entry and its release meet what the grant wrote).
 *
 * Liveness is the session. A hold lasts while its child exists and the session surely lives: a
 * renewal is one pipelined `exists` per hold child (every answer also proves the session alive when
 * it was sent); a session lost (expired, or silent past its time-out) tells every hold at once with
 * `LockLostError`. See docs/zookeeper.md.
 */
import { randomInt } from 'node:crypto';
import type { Client } from 'node-zookeeper-client';
import { monotonicNow, settleWithin, driftMs } from '../../clock.js';
import { LockLostError, PadlockOptionError, ZooKeeperSessionExpiredError, ZooKeeperUnavailableError } from '../../errors.js';
import type { Hold } from '../../hold.js';
import type { Lock } from '../../locks/lock.js';
import type { ReadWriteLock } from '../../locks/read-write-lock.js';
import type { SemaphoreLock } from '../../locks/semaphore-lock.js';
import type { Shared } from '../../shared.js';
import type { LockCatalog } from '../../catalog.js';
import type { LockKindName, Store, StoreHost } from '../../store.js';
import { SWEEP_EVERY_MS, sweepAbandonedLocks } from './abandoned-locks.js';
import { ZooKeeperCatalog } from './zookeeper-catalog.js';
import { SessionClock, type SessionLoss } from './session-clock.js';
import { connectIfNeverConnected, connectStringOf, ZK, zkCode, ZooKeeperOps } from './zookeeper-client.js';
import { checkZooKeeperClient, type ZooKeeperClientLike } from './zookeeper-client-like.js';
import { lockPath, ZooKeeperLock } from './zookeeper-lock.js';
import { ZooKeeperKind } from './zookeeper-kind.js';
import { ZooKeeperMutex } from './zookeeper-mutex.js';
import { zooKeeperReadWrite } from './zookeeper-read-write.js';
import { ZooKeeperSemaphore } from './zookeeper-semaphore.js';
import { formatMs } from '../../durations.js';

/** The ZooKeeper options a Padlock was given, resolved. */
export interface ZooKeeperStoreOptions {
  readonly client: Client;
  /** Makes a new client once a session expired (`zookeeperFactory`); without it, an expired session ends the store's service. */
  readonly factory?: (() => ZooKeeperClientLike) | undefined;
  readonly prefix: string;
  readonly replyTimeoutMs: number;
}

/** How often a call tries a factory that failed again (each call would, else, while waits back off). */
const FACTORY_RETRY_MS = 1_000;

/** Past this many recipes kept, the idle ones (no child of this client) are dropped. */
const KEPT_RECIPES = 1_000;

/** A fixed lease's end (a hold without `autoExtend`): its child is deleted then, by this client. */
interface FixedLease {
  end: number;
  timer: NodeJS.Timeout;
}

export class ZooKeeperStore implements Store {
  readonly description = 'a ZooKeeper ensemble';
  readonly lockRecord = 'znode';
  readonly replyTimeoutMs: number;
  readonly extraReplyMs = 0;
  readonly ops: ZooKeeperOps;
  /** The root of every lock's znode: `/<prefix>`. */
  readonly root: string;
  /** The client of the current session: the one given, or after an expiry one `#factory` made. */
  #client: Client;
  readonly #factory: (() => ZooKeeperClientLike) | undefined;
  /** Whether padlock made `#client` (it closes only those). */
  #made = false;
  readonly #host: StoreHost;
  #clock: SessionClock | undefined;
  /**
   * The current client's session expired and no other serves: node-zookeeper-client does not open
   * another, and there is no factory (or it failed: tried again at the next call).
   */
  #expired = false;
  /** From a session's expiry until the new one connects: calls then fail as `ZOOKEEPER_SESSION_EXPIRED`. */
  #between = false;
  /** Why the factory failed last, if it did (the cause of what calls reject with), and when. */
  #factoryError: unknown;
  #factoryFailedAt = -Infinity;
  readonly #recipes = new Map<string, ZooKeeperLock>();
  readonly #leases = new Map<string, FixedLease>();
  /** Holds whose loss removes their child (told once, at their first renewal). */
  readonly #watched = new WeakSet<Hold>();
  /** The Padlock's shared parts (its runtime holds the holds a lost session must tell). */
  #shared: Shared | undefined;
  #connected: Promise<void>;
  #connectedSettled = false;
  #onConnected: () => void = () => undefined;
  #onExpired: (error: unknown) => void = () => undefined;
  #closed = false;
  /** The next look for lock znodes a dead client left (abandoned-locks.ts). */
  #sweep: NodeJS.Timeout | undefined;
  readonly #connectedListener = (): void => this.#connectedNow();
  /** An expired session is replaced (or, without a factory, gone for good), whatever the clock said before (a silent spell that ended in expiry). */
  readonly #expiredListener = (): void => {
    if (this.#clock !== undefined && this.#clock.lost === undefined) return; // the clock tells the holds, then #sessionLost replaces it
    this.#sessionExpired();
  };

  constructor(options: ZooKeeperStoreOptions, host: StoreHost) {
    this.#client = options.client;
    this.#factory = options.factory;
    this.#host = host;
    this.ops = new ZooKeeperOps(options.client);
    this.root = `/${options.prefix}`;
    this.replyTimeoutMs = options.replyTimeoutMs;
    this.#connected = this.#awaitConnection();
    this.#attach(this.#client);
    if (this.#client.getState().name !== 'SYNC_CONNECTED') connectIfNeverConnected(this.#client);
  }

  noReply(lock: string | undefined, ms: number): ZooKeeperUnavailableError {
    if (this.#between || this.#expired) return this.#gone(lock ?? '');
    // Never connected: the call was waiting for a session, not for a reply (a wrong address, a server not started).
    if (this.#clock === undefined) {
      const where = connectStringOf(this.#client);
      return new ZooKeeperUnavailableError(lock, undefined, `no session with ZooKeeper${where === undefined ? '' : ` at ${where}`} within ${formatMs(ms)}: the client never connected (is ZooKeeper running there?)`);
    }
    return new ZooKeeperUnavailableError(lock, undefined, `no reply within ${formatMs(ms)}`);
  }

  /**
   * The error a failed call stands for: ZooKeeper's own (a lost connection…) as unavailability, an
   * expired session (or any failure before the next one connects) as `ZooKeeperSessionExpiredError`,
   * any other as it is (an abort's reason, padlock's errors).
   */
  unavailable(lock: string, error: unknown): unknown {
    const code = zkCode(error);
    if (code === undefined) return error;
    return code === ZK.sessionExpired || this.#between || this.#expired ? this.#gone(lock, error) : new ZooKeeperUnavailableError(lock, error);
  }

  /** An operator's read of every lock under this Padlock's prefix (`padlock list --zookeeper`). */
  catalog(): LockCatalog {
    return new ZooKeeperCatalog(this.ops, this.root, `ZooKeeper (prefix ${this.root.slice(1)})`);
  }

  refuses(_kind: LockKindName): string | undefined {
    return undefined;
  }

  mutex(shared: Shared, name: string): Lock {
    this.#shared ??= shared;
    return new ZooKeeperMutex(shared, this, name, 'mutex');
  }

  /** The same lock as {@link mutex}: ZooKeeper's queue is FIFO for both (docs/zookeeper.md). */
  fairMutex(shared: Shared, name: string): Lock {
    this.#shared ??= shared;
    return new ZooKeeperMutex(shared, this, name, 'fairMutex');
  }

  readWrite(shared: Shared, name: string): ReadWriteLock {
    this.#shared ??= shared;
    return zooKeeperReadWrite(shared, this, name);
  }

  semaphore(shared: Shared, name: string, permits: number): SemaphoreLock {
    this.#shared ??= shared;
    return new ZooKeeperSemaphore(shared, this, name, permits);
  }

  /** The recipe of lock `name` of `family` (one per lock and limit, shared by the kinds made for it). */
  recipe(family: string, name: string, limit: number): ZooKeeperLock {
    const path = lockPath(this.root, family, name);
    const key = `${limit} ${path}`;
    let recipe = this.#recipes.get(key);
    if (recipe === undefined) {
      if (this.#recipes.size >= KEPT_RECIPES) for (const [k, r] of this.#recipes) if (r.children.size === 0) this.#recipes.delete(k);
      recipe = new ZooKeeperLock(this.ops, path, name, limit, (work) => this.#host.track(work), (lock) => this.#host.suspect(lock), () => this.ready(name));
      this.#recipes.set(key, recipe);
    }
    return recipe;
  }

  /**
   * Resolves once the client is connected and its session alive (a new session's, after an expiry);
   * rejects `ZooKeeperSessionExpiredError` when the session expired and no new one can be made.
   */
  ready(lock: string): Promise<void> {
    if (this.#closed) return Promise.reject(new ZooKeeperUnavailableError(lock, undefined, 'the store is closed'));
    // The factory failed last time: a call tries it again, at most once a second.
    if (this.#expired && this.#factory !== undefined && monotonicNow() - this.#factoryFailedAt >= FACTORY_RETRY_MS) this.#openSession();
    if (this.#expired) return Promise.reject(this.#gone(lock));
    return this.#connected;
  }

  /** What a call gets while no session serves after an expiry. */
  #gone(lock: string, cause: unknown = this.#factoryError): ZooKeeperSessionExpiredError {
    return new ZooKeeperSessionExpiredError(lock === '' ? undefined : lock, this.#factory !== undefined, cause);
  }

  /** A promise of the next connection, rejected if the session expires first (and no new one can be made). */
  #awaitConnection(): Promise<void> {
    this.#connectedSettled = false;
    const connected = new Promise<void>((resolve, reject) => {
      this.#onConnected = () => {
        this.#connectedSettled = true;
        resolve();
      };
      this.#onExpired = (error) => {
        this.#connectedSettled = true;
        reject(error);
      };
    });
    connected.catch(() => undefined); // nobody may be waiting
    return connected;
  }

  /** Listens to `client`'s session (the store's current client from now on). */
  #attach(client: Client): void {
    client.on('connected', this.#connectedListener);
    client.on('expired', this.#expiredListener);
    if (client.getState().name === 'SYNC_CONNECTED') this.#connectedNow();
  }

  #detach(client: Client): void {
    client.removeListener('connected', this.#connectedListener);
    client.removeListener('expired', this.#expiredListener);
  }

  /**
   * The current session expired (its holds are told by the caller or were told at its silent spell):
   * with a factory, a new client opens a new session; without one, every call is refused from now on.
   */
  #sessionExpired(): void {
    if (this.#closed || this.#expired || this.#between) return;
    this.#clock?.close();
    this.#clock = undefined;
    this.#detach(this.#client);
    // Calls waiting for a connection (a silent spell before the expiry) wait on for the new session.
    if (this.#connectedSettled) this.#connected = this.#awaitConnection();
    this.#host.report(new ZooKeeperSessionExpiredError(undefined, this.#factory !== undefined));
    if (this.#factory === undefined) {
      this.#expired = true;
      this.#onExpired(this.#gone(''));
      return;
    }
    this.#openSession();
  }

  /** Makes a new client with the factory and connects it; on failure, calls are refused (and try again). */
  #openSession(): void {
    const factory = this.#factory;
    if (factory === undefined) return;
    if (this.#connectedSettled) this.#connected = this.#awaitConnection();
    let client: Client;
    try {
      client = checkZooKeeperClient(factory(), 'zookeeperFactory') as unknown as Client;
      if (client === this.#client) throw new PadlockOptionError('zookeeperFactory', 'a function returning a new client each call (the expired one cannot open another session)', client);
    } catch (error) {
      this.#expired = true;
      this.#factoryError = error;
      this.#factoryFailedAt = monotonicNow();
      this.#host.report(error);
      this.#onExpired(this.#gone(''));
      return;
    }
    // An expired client of padlock's is closed already (node-zookeeper-client's close() would reconnect it to send a close nobody needs).
    this.#expired = false;
    this.#between = true;
    this.#factoryError = undefined;
    this.#client = client;
    this.#made = true;
    this.ops.use(client);
    this.#attach(client);
    client.connect();
  }

  /**
   * The lease a hold has from `sentAt` on, when an answer to a call sent then proved its child
   * there: the session's conservative deadline from then, and for a fixed lease no later than its end.
   */
  leaseFrom(sentAt: number, leaseMs: number, child: string | undefined): number {
    const clock = this.#clock;
    if (clock === undefined || clock.lost !== undefined) return 0;
    const fixed = child === undefined ? undefined : this.#leases.get(child);
    const end = Math.min(clock.aliveUntil, fixed?.end ?? sentAt + leaseMs);
    return Math.max(0, Math.floor(end - sentAt));
  }

  /** Starts (or moves later) the end of a fixed lease: `child` is deleted at `end` unless released first. */
  fixLease(recipe: ZooKeeperLock, child: string, end: number): void {
    const lease = this.#leases.get(child);
    if (lease !== undefined && lease.end >= end) return;
    if (lease !== undefined) clearTimeout(lease.timer);
    const timer = setTimeout(() => {
      this.#leases.delete(child);
      this.#host.track(recipe.releasePath(child).catch(() => false));
    }, Math.max(0, end - monotonicNow()));
    timer.unref();
    this.#leases.set(child, { end, timer });
  }

  /** Deletes `child` in the background (a final release that failed), sending the delete again while the session may live. */
  abandon(recipe: ZooKeeperLock, child: string): void {
    this.unfixLease(child);
    this.#host.track(recipe.releasePath(child).catch(() => false));
  }

  /** Moves a fixed lease's end to `end` if `child` has one and it ends sooner (a re-entry). */
  moveFixedLease(recipe: ZooKeeperLock, child: string, end: number): void {
    if (this.#leases.has(child)) this.fixLease(recipe, child, end);
  }

  /** Forgets a fixed lease's end (released, or renewed by the watchdog from now on). */
  unfixLease(child: string): void {
    const lease = this.#leases.get(child);
    if (lease === undefined) return;
    clearTimeout(lease.timer);
    this.#leases.delete(child);
  }

  /** Every hold is renewed in one round trip (one pipelined `exists` per hold). */
  renewalGroup(_hold: Hold): string {
    return 'zookeeper';
  }

  async renewMany(holds: readonly Hold[], report: (error: unknown) => void): Promise<(number | undefined)[]> {
    // A hold being released is not renewed, nor judged by a renewal already on its way (watchdog.ts).
    try {
      return await this.renew(holds);
    } catch (error) {
      report(this.unavailable(holds[0]?.name ?? '', error));
      return holds.map(() => undefined);
    }
  }

  /**
   * Renews `holds` (to their own lease, or `ms` when given: an extend): each one's remaining lease,
   * 0 where its child is gone. Rejects when ZooKeeper does not answer within the reply time-out.
   */
  async renew(holds: readonly Hold[], ms?: number): Promise<number[]> {
    const name = holds[0]?.name ?? '';
    const work = (async () => {
      await this.ready(name);
      const children = await Promise.all(holds.map((hold) => kindOf(hold).childOf(hold.owner)));
      const sentAt = monotonicNow();
      const stats = await Promise.all(children.map((child) => (child === undefined ? Promise.resolve(undefined) : this.ops.exists(child))));
      // Answered: the session was alive when they were sent.
      if (stats.some((stat) => stat !== undefined)) this.#clock?.answered(sentAt);
      return holds.map((hold, i) => {
        const child = children[i];
        if (child === undefined || stats[i] === undefined) return 0;
        this.#removeWhenLost(hold, child);
        if (hold.autoExtend) this.unfixLease(child);
        else if (ms !== undefined) this.fixLease(kindOf(hold).recipe, child, sentAt + ms);
        return this.leaseFrom(sentAt, ms ?? hold.leaseMs, child);
      });
    })();
    const timeout = new Promise<never>((_, reject) => {
      const timer = setTimeout(() => reject(this.noReply(name, this.replyTimeoutMs)), this.replyTimeoutMs);
      timer.unref();
      void work.finally(() => clearTimeout(timer)).catch(() => undefined);
    });
    return Promise.race([work, timeout]);
  }

  /**
   * A hold this client gave up as lost (its deadline passed unrenewed: a silent spell its session may
   * have outlived) must not stay in the queue: its child is removed, whenever ZooKeeper answers again.
   */
  #removeWhenLost(hold: Hold, child: string): void {
    if (this.#watched.has(hold)) return;
    this.#watched.add(hold);
    const recipe = kindOf(hold).recipe;
    const client = this.#client;
    hold.signal.addEventListener(
      'abort',
      () => {
        // Not once its session expired: its child went with it (and a new session's calls would be sent for nothing).
        if (hold.signal.reason instanceof LockLostError && this.#client === client && !this.#expired && !this.#closed) this.#host.track(recipe.releasePath(child).catch(() => false));
      },
      { once: true },
    );
  }

  /** Runs one call of an operator or a release, bounded by the reply time-out; errors become `ZooKeeperUnavailableError`. */
  async call<T>(lock: string, work: () => Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(this.noReply(lock, this.replyTimeoutMs)), this.replyTimeoutMs);
    });
    try {
      return await Promise.race([this.ready(lock).then(work), timeout]);
    } catch (error) {
      throw this.unavailable(lock, error);
    } finally {
      clearTimeout(timer);
    }
  }

  holding(): void {}

  /** Removes every child this client still has (waits given up, holds close() could not release). */
  async retire(ms: number): Promise<void> {
    if (this.#clock === undefined) return;
    await settleWithin(Promise.all([...this.#recipes.values()].map((recipe) => recipe.removeMine())), ms);
  }

  /** Stops watching the session; closes the client if padlock made it (never the one it was given). */
  close(): Promise<void> {
    this.#closed = true;
    this.#clock?.close();
    clearTimeout(this.#sweep);
    this.#detach(this.#client);
    for (const lease of this.#leases.values()) clearTimeout(lease.timer);
    this.#leases.clear();
    if (this.#made && this.#client.getState().name !== 'EXPIRED') this.#client.close();
    return Promise.resolve();
  }

  /** The session's time-out as the ensemble granted it (for tests and docs: how long a dead holder blocks). */
  get sessionTimeoutMs(): number {
    return this.#client.getSessionTimeout();
  }

  #connectedNow(): void {
    if (this.#closed || this.#expired || this.#clock !== undefined) return;
    if (this.#between) {
      // A new session: the old one's children went with it; every waiter looks again, queued anew.
      this.#between = false;
      for (const recipe of this.#recipes.values()) recipe.forgetSession();
    }
    this.#startClock();
    clearTimeout(this.#sweep);
    this.#sweepNow();
  }

  /** Removes the lock znodes a dead client left, now and every {@link SWEEP_EVERY_MS} while the session lives. */
  #sweepNow(): void {
    if (this.#closed || this.#expired) return;
    void sweepAbandonedLocks(this.ops, this.root);
    this.#sweep = setTimeout(() => this.#sweepNow(), randomInt(SWEEP_EVERY_MS * 0.8, SWEEP_EVERY_MS * 1.2));
    this.#sweep.unref();
  }

  #startClock(): void {
    this.#clock = new SessionClock(this.#client);
    this.#clock.onLost((loss) => this.#sessionLost(loss));
    this.#onConnected();
  }

  /**
   * After a silent spell the session may live on (the ensemble had no quorum, or this client's
   * server froze and came back): once a read is answered again, the children of the holds told lost
   * are removed, and the store serves again with a fresh clock.
   */
  async #recover(): Promise<void> {
    const client = this.#client;
    while (!this.#closed && this.#client === client && this.#clock?.lost === 'silent') {
      let timer: NodeJS.Timeout | undefined;
      const answered = await Promise.race([
        this.ops.exists('/').then(() => true, () => false),
        new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), this.replyTimeoutMs).unref())),
      ]);
      clearTimeout(timer);
      if (answered) {
        // The holds were told lost: their children go. A waiter's child keeps its place (its session lived).
        await Promise.all([...this.#recipes.values()].map((recipe) => recipe.removeHeld()));
        if (!this.#closed && this.#client === client && this.#clock?.lost === 'silent') this.#startClock();
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 100).unref());
    }
  }

  /** Every hold is told (`LockLostError`); an expired session is replaced (or, without a factory, gone for good). */
  #sessionLost(loss: SessionLoss): void {
    if (this.#closed) return;
    const timeout = this.#client.getSessionTimeout();
    const cause = new ZooKeeperUnavailableError(undefined, undefined, loss === 'expired' ? 'the session expired' : `no answer within the session time-out (${formatMs(timeout)}, less ${formatMs(driftMs(timeout))} of drift)`);
    if (loss === 'expired') {
      this.#sessionExpired();
    } else {
      this.#connected = this.#awaitConnection();
      void this.#recover();
    }
    const runtime = this.#shared?.runtime;
    if (runtime !== undefined) for (const hold of [...runtime.holds.values()]) runtime.lost(hold, 'expired', cause);
    for (const lease of this.#leases.values()) clearTimeout(lease.timer);
    this.#leases.clear();
  }
}

/** The ZooKeeper kind a hold of this store belongs to. */
function kindOf(hold: Hold): ZooKeeperKind {
  if (hold.lock instanceof ZooKeeperKind) return hold.lock;
  throw new TypeError(`a hold of lock "${hold.name}" reached the ZooKeeper store, which did not make its lock`);
}
