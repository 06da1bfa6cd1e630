/**
 * The Redis store: locks kept by Lua scripts on one server (alone, behind Sentinel, with replica
 * acknowledgement), a Cluster, or a Redlock set of independent masters. What its kinds share lives
 * here and nowhere above: the topology that runs their calls, the one pub/sub connection that wakes
 * their waiters, the liveness key that tells reapers this client is alive, the reaper, and whether
 * Redis ever answered a wait (outage.ts).
 */
import { randomBytes } from 'node:crypto';
import type { RedisUnavailableError } from '../../errors.js';
import type { Hold } from '../../hold.js';
import { forcedChannel } from '../../keys.js';
import { Liveness } from './liveness.js';
import { FairMutex } from './kinds/fair-mutex.js';
import type { Lock } from '../../locks/lock.js';
import { Mutex } from './kinds/mutex.js';
import { Contact } from '../../outage.js';
import { QueuedLock } from './kinds/queued-lock.js';
import { readWriteLock } from './kinds/read-write.js';
import type { ReadWriteLock } from '../../locks/read-write-lock.js';
import { Semaphore } from './kinds/semaphore.js';
import type { SemaphoreLock } from '../../locks/semaphore-lock.js';
import type { ReplicaOptions } from '../../options.js';
import type { CommandConnection } from './adapters/connection.js';
import { Reaper } from './reaping.js';
import { renewTogether } from './renewals.js';
import type { Shared } from '../../shared.js';
import type { LockKindName, Store, StoreHost } from '../../store.js';
import { Subscriber } from './subscriber.js';
import { Redlock } from './topology/redlock.js';
import { SingleServer } from './topology/single-server.js';
import type { Topology } from './topology/topology.js';

/** What the Redis kinds share (each is handed the store itself). */
export interface RedisContext {
  /** Where the locks live: every call to Redis goes through it. */
  readonly topology: Topology;
  /** The one pub/sub connection. */
  readonly subscriber: Subscriber;
  /** Identifies this Padlock's channel for wake-ups and handoffs, and it as a holder (liveness). */
  readonly clientId: string;
  /** The Padlock's liveness key: written before any call that may grant it a hold, kept while it holds or waits. */
  readonly liveness: Liveness;
  /** With `reapDeadHolders`: checks the holders of the locks this Padlock waits for. */
  readonly reaper: Reaper | undefined;
  /** Whether Redis ever answered this Padlock's waits: only then do they ride through an outage. */
  readonly contact: Contact;
}

/** The Redis options a Padlock was given, resolved. */
export interface RedisStoreOptions {
  /** One client, or (Redlock) one per master. */
  readonly redis: CommandConnection | readonly CommandConnection[];
  readonly replyTimeoutMs: number;
  /** Replicas that must acknowledge each grant (one server or Sentinel). */
  readonly replicas: ReplicaOptions | undefined;
  readonly prefix: string;
  readonly leaseMs: number;
  readonly livenessMs: number;
  readonly reapDeadHolders: boolean;
}

export class RedisStore implements Store, RedisContext {
  readonly topology: Topology;
  readonly subscriber: Subscriber;
  readonly clientId = randomBytes(8).toString('hex');
  readonly liveness: Liveness;
  readonly reaper: Reaper | undefined;
  readonly contact = new Contact();
  readonly #prefix: string;
  readonly #host: StoreHost;
  /** Listening on the force-release channel (from the first hold on, for the Padlock's life). */
  #listening: Promise<void> | undefined;

  constructor(options: RedisStoreOptions, host: StoreHost) {
    const { redis } = options;
    this.#prefix = options.prefix;
    this.#host = host;
    this.topology = isMasters(redis)
      ? new Redlock(redis, options.replyTimeoutMs, { leaseMs: options.leaseMs, prefix: options.prefix, track: (work) => host.track(work) })
      : new SingleServer(redis, options.replyTimeoutMs, options.replicas);
    const topology = this.topology;
    this.subscriber = new Subscriber(() => topology.openSubscriber(), (error) => host.report(error));
    this.liveness = new Liveness({ topology, holding: () => host.holding(), failed: (error) => host.report(error) }, options.prefix, this.clientId, options.livenessMs);
    this.reaper = options.reapDeadHolders ? new Reaper(topology, options.prefix, (error) => host.report(error), (work) => host.track(work)) : undefined;
  }

  get description(): string {
    return this.topology.description;
  }

  get replyTimeoutMs(): number {
    return this.topology.replyTimeoutMs;
  }

  get extraReplyMs(): number {
    return this.topology.extraReplyMs;
  }

  noReply(lock: string | undefined, ms: number): RedisUnavailableError {
    return this.topology.noReply(lock, ms);
  }

  refuses(kind: LockKindName): string | undefined {
    return this.topology.refuses(kind);
  }

  mutex(shared: Shared, name: string): Lock {
    return new Mutex(shared, this, name);
  }

  fairMutex(shared: Shared, name: string): Lock {
    return new FairMutex(shared, this, name);
  }

  readWrite(shared: Shared, name: string): ReadWriteLock {
    return readWriteLock(shared, this, name);
  }

  semaphore(shared: Shared, name: string, permits: number): SemaphoreLock {
    return new Semaphore(shared, this, name, permits);
  }

  /** A group holds only holds of one family (one renew script) on one node: one round trip. */
  renewalGroup(hold: Hold): string {
    return `${hold.lock.family}\n${this.topology.nodeOf(hold.keys.lock)}`;
  }

  renewMany(holds: readonly Hold[], report: (error: unknown) => void): Promise<(number | undefined)[]> {
    return renewTogether(this.topology, holds, (batch) => redisLockOf(batch[0]).renewCall(batch), report);
  }

  holding(): void {
    this.liveness.held();
    this.#listening ??= this.#listenForForce();
  }

  /**
   * Once, at the first hold: listens for the Padlock's life on the force-release channel, where an
   * operator's force-release names the lock it freed; this Padlock's holds of that name are then
   * checked at once (tell-holders.lua). One SUBSCRIBE per Padlock, nothing per acquisition.
   */
  #listenForForce(): Promise<void> {
    const listening = this.subscriber.listen(forcedChannel(this.#prefix), (name) => this.#host.suspect(name));
    listening.catch((error: unknown) => this.#host.report(error));
    return listening;
  }

  /** Resolves once this Padlock listens on the force-release channel (tests; `undefined` before its first hold). */
  get listeningForForce(): Promise<void> | undefined {
    return this.#listening;
  }

  retire(ms: number): Promise<void> {
    return this.liveness.close(ms);
  }

  close(): Promise<void> {
    return this.subscriber.close();
  }
}

/** The Redis kind a hold of this store belongs to (every kind this store makes is a QueuedLock). */
function redisLockOf(hold: Hold | undefined): QueuedLock {
  if (hold?.lock instanceof QueuedLock) return hold.lock;
  throw new TypeError(`a hold of lock "${String(hold?.name)}" reached the Redis store, which did not make its lock`);
}

function isMasters(redis: CommandConnection | readonly CommandConnection[]): redis is readonly CommandConnection[] {
  return Array.isArray(redis);
}
