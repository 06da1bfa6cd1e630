/**
 * `padlock/redis-semaphore`: redis-semaphore 5's API (`Mutex`, `Semaphore`, `MultiSemaphore`,
 * `RedlockMutex`, `LostLockError`, `TimeoutError`) on padlock. Change `from 'redis-semaphore'` to
 * `from 'padlock/redis-semaphore'` and the code runs on padlock's locks: waiting without polling
 * (FIFO for semaphores), leases and fences on the server's clock, padlock's behaviour under faults.
 *
 * Where redis-semaphore's behaviour is kept and where it is not (docs/migrating.md):
 * - `acquireAttemptsLimit` × `retryInterval` polling becomes one wait without polling, bounded by
 *   `acquireTimeout` and by what the attempts could have taken.
 * - The semaphore counts permits on the server's clock, not on each client's (redis-semaphore
 *   prunes holders by the clients' clocks); `RedlockSemaphore` and `RedlockMultiSemaphore` are
 *   refused, for padlock's reason (docs/protocol.md).
 * - Renewal runs at `refreshInterval`, but at least every third of `lockTimeout`.
 * - `identifier` is padlock's owner token, made per acquisition: a custom one is only taken with
 *   `acquiredExternally: true` (a Mutex re-entering a hold taken elsewhere).
 * - Keys are padlock's: processes still on redis-semaphore do not exclude processes on this facade.
 */
import { LockNotHeldError, PadlockOptionError } from '../errors.js';
import type { Lease } from '../lease.js';
import type { Lockable } from '../locks/lock.js';
import type { SemaphoreAcquireOptions } from '../locks/semaphore-lock.js';
import type { Padlock } from '../padlock.js';
import type { RedisClient } from '../stores/redis/adapters/clients.js';
import { sharedPadlock } from './facade-padlock.js';

/** The lock was lost while held (found by a refresh): handed to `onLockLost`. `cause` is padlock's error. */
export class LostLockError extends Error {
  /** `'LostLockError'`. */
  override readonly name = 'LostLockError';
}

/** `acquire()` did not get the lock within `acquireTimeout` (or `acquireAttemptsLimit`). */
export class TimeoutError extends Error {
  /** `'TimeoutError'`. */
  override readonly name = 'TimeoutError';
}

/** Called when a refresh finds the lock lost; `this` is the lock object. */
export interface LockLostCallback {
  /** Told of the loss; `this` is the lock object. */
  (this: Lock, err: LostLockError): void;
}

/** redis-semaphore's timing options. */
export interface TimeoutOptions {
  /** The lease, in ms: the lock expires this long after its last refresh. @default 10000 */
  lockTimeout?: number;
  /** Longest `acquire()` wait, in ms. @default 10000 */
  acquireTimeout?: number;
  /** Attempts redis-semaphore made: with `retryInterval`, a further bound on the wait. @default Infinity */
  acquireAttemptsLimit?: number;
  /** Time between redis-semaphore's attempts, in ms: only bounds the wait with `acquireAttemptsLimit` (padlock does not poll). @default 10 */
  retryInterval?: number;
  /** Refresh period, in ms (at most a third of `lockTimeout` is used); `0`: no refresh, the lock expires after `lockTimeout`. @default lockTimeout × 0.8 */
  refreshInterval?: number;
}

/** redis-semaphore's lock options. */
export interface LockOptions extends TimeoutOptions {
  /** @deprecated as in redis-semaphore: use `identifier` with `acquiredExternally: true`. */
  externallyAcquiredIdentifier?: string;
  /** @deprecated as in redis-semaphore; ignored (padlock makes each owner token). */
  identifierSuffix?: string;
  /**
   * With `acquiredExternally: true` (Mutex, RedlockMutex): the owner token of a hold taken
   * elsewhere, e.g. another mutex's `identifier` after its `acquire()`. Alone it is refused:
   * padlock makes each acquisition's owner token itself.
   */
  identifier?: string;
  /** `acquire()` re-enters the hold of `identifier` (refreshing it) instead of taking a new one; `release()` frees the lock. */
  acquiredExternally?: true;
  /** Called when the lock is found lost while refreshing. @default throws the LostLockError (an uncaught exception, as redis-semaphore does) */
  onLockLost?: LockLostCallback;
}

/** redis-semaphore's defaults. */
export const defaultTimeoutOptions = {
  lockTimeout: 10_000,
  acquireTimeout: 10_000,
  acquireAttemptsLimit: Number.POSITIVE_INFINITY,
  retryInterval: 10,
};

const defaultOnLockLost: LockLostCallback = (err) => {
  throw err;
};

/** What the lock objects share: options, the acquire/refresh/release cycle on a padlock lock. */
export abstract class Lock {
  protected abstract readonly _kind: string;
  protected abstract readonly _key: string;
  readonly #clients: readonly RedisClient[];
  readonly #lockTimeout: number;
  readonly #waitMs: number;
  readonly #refreshMs: number;
  readonly #onLockLost: LockLostCallback;
  readonly #external: string | undefined;
  #lease: Lease | undefined;
  #refresh: NodeJS.Timeout | undefined;
  #acquired = false;

  /**
   * @param clients one client, or the masters of a RedlockMutex
   * @param options redis-semaphore's options (see {@link LockOptions} for what each becomes)
   */
  constructor(clients: readonly RedisClient[], options: LockOptions = defaultTimeoutOptions) {
    const lockTimeout = options.lockTimeout ?? defaultTimeoutOptions.lockTimeout;
    const acquireTimeout = options.acquireTimeout ?? defaultTimeoutOptions.acquireTimeout;
    const attempts = options.acquireAttemptsLimit ?? defaultTimeoutOptions.acquireAttemptsLimit;
    const retryInterval = options.retryInterval ?? defaultTimeoutOptions.retryInterval;
    const refreshInterval = options.refreshInterval ?? Math.round(lockTimeout * 0.8);
    const { identifier, acquiredExternally, externallyAcquiredIdentifier } = options;
    if (identifier !== undefined && (identifier === '' || typeof identifier !== 'string')) throw new Error('identifier must be not empty random string');
    if (acquiredExternally === true && identifier === undefined) throw new Error('acquiredExternally=true meanless without custom identifier');
    if (externallyAcquiredIdentifier !== undefined && (identifier !== undefined || acquiredExternally === true)) throw new Error('Invalid usage. Use custom identifier and acquiredExternally: true');
    if (identifier !== undefined && acquiredExternally !== true) {
      throw new PadlockOptionError('identifier', "given with acquiredExternally: true, or left out (padlock makes each acquisition's owner token; read identifier after acquire())", identifier);
    }
    this.#clients = clients;
    this.#lockTimeout = lockTimeout;
    this.#waitMs = Math.max(0, Math.min(acquireTimeout, (attempts - 1) * retryInterval));
    this.#refreshMs = refreshInterval > 0 ? Math.min(refreshInterval, Math.max(1, Math.floor(lockTimeout / 3))) : 0;
    this.#onLockLost = options.onLockLost ?? defaultOnLockLost;
    this.#external = identifier ?? externallyAcquiredIdentifier;
  }

  /** The padlock lock this object acquires (a mutex, or a semaphore for some permits). */
  protected abstract lockOf(padlock: Padlock): Lockable;
  /** The permits each acquisition takes (1 but for MultiSemaphore). */
  protected get permits(): number {
    return 1;
  }

  /** The owner token: of the current (or last) acquisition, or the `identifier` given; `''` before any. */
  get identifier(): string {
    return this.#lease?.owner ?? this.#external ?? '';
  }

  /** True from a successful acquire until release() or the lock is found lost. */
  get isAcquired(): boolean {
    return this.#acquired;
  }

  /** padlock's fencing token of the current hold (strictly greater than any earlier holder's); `undefined` before any. */
  get fence(): number | undefined {
    return this.#lease?.fence;
  }

  /** Waits for the lock up to `acquireTimeout`. @throws TimeoutError when it did not come in time */
  async acquire(abortSignal?: AbortSignal): Promise<void> {
    if (!(await this.tryAcquire(abortSignal))) throw new TimeoutError(`Acquire ${this._kind} ${this._key} timeout`);
  }

  /** Waits for the lock up to `acquireTimeout`, as `acquire()`: true when acquired, false when not in time. */
  async tryAcquire(abortSignal?: AbortSignal): Promise<boolean> {
    const lock = this.lockOf(sharedPadlock(this.#clients));
    const options: SemaphoreAcquireOptions = { leaseMs: this.#lockTimeout, autoExtend: false, signal: abortSignal, ...(this.permits === 1 ? {} : { permits: this.permits }) };
    let lease: Lease | null;
    if (this.#external !== undefined && this.#lease === undefined) {
      try {
        lease = await lock.acquire({ ...options, owner: this.#external, waitMs: 0 });
      } catch (error) {
        if (error instanceof LockNotHeldError) return false;
        throw error;
      }
    } else {
      lease = await lock.tryAcquire({ ...options, waitMs: this.#waitMs });
    }
    if (lease === null) return false;
    this.#start(lease);
    return true;
  }

  /** Stops refreshing: the lock then expires `lockTimeout` after its last refresh, unless released. */
  stopRefresh(): void {
    if (this.#refresh !== undefined) clearInterval(this.#refresh);
    this.#refresh = undefined;
  }

  /** Releases the lock; does nothing when it is no longer this object's (released, expired or taken). */
  async release(): Promise<void> {
    this.stopRefresh();
    const lease = this.#lease;
    this.#acquired = false;
    if (lease === undefined) return;
    try {
      // A hold re-entered from elsewhere is freed whole, as redis-semaphore deletes its key: the hold is ours while this runs.
      if (this.#external !== undefined && lease.isHeld) await this.lockOf(sharedPadlock(this.#clients)).forceRelease();
      await lease.release();
    } catch (error) {
      if (!(error instanceof LockNotHeldError)) throw error;
    }
  }

  #start(lease: Lease): void {
    this.stopRefresh();
    this.#lease = lease;
    this.#acquired = true;
    if (this.#refreshMs === 0) return;
    const lost = (cause: unknown): void => {
      if (this.#lease !== lease || !this.#acquired || this.#refresh === undefined) return;
      this.#acquired = false;
      this.stopRefresh();
      const error = new LostLockError(`Lost ${this._kind} for key ${this._key}`, { cause });
      // Outside padlock's own call stack: the default callback throws, as redis-semaphore's does.
      setImmediate(() => this.#onLockLost.call(this, error));
    };
    lease.signal.addEventListener('abort', () => lost(lease.signal.reason), { once: true });
    this.#refresh = setInterval(() => {
      lease.extend(this.#lockTimeout).catch(lost);
    }, this.#refreshMs);
    this.#refresh.unref();
  }
}

/** A mutex on one Redis server (or Sentinel, Cluster): redis-semaphore's `Mutex`. */
export class Mutex extends Lock {
  protected readonly _kind: string = 'mutex';
  protected readonly _key: string;

  /** A mutex named `key` (padlock's `mutex(key)`) on `client`'s server. @throws PadlockOptionError for an identifier padlock cannot take */
  constructor(client: RedisClient, key: string, options?: LockOptions) {
    super([client], options);
    this._key = key;
  }

  protected lockOf(padlock: Padlock): Lockable {
    return padlock.mutex(this._key);
  }
}

/** A counting semaphore of `limit` permits (FIFO, on the server's clock): redis-semaphore's `Semaphore`. */
export class Semaphore extends Lock {
  protected readonly _kind: string = 'semaphore';
  protected readonly _key: string;
  protected readonly _limit: number;

  /** A semaphore named `key` of `limit` permits (padlock's `semaphore(key, limit)`). @throws PadlockOptionError with `acquiredExternally` */
  constructor(client: RedisClient, key: string, limit: number, options?: LockOptions) {
    super([client], refuseExternal(options));
    this._key = key;
    this._limit = limit;
  }

  protected lockOf(padlock: Padlock): Lockable {
    return padlock.semaphore(this._key, this._limit);
  }
}

/** A semaphore acquisition of several permits at once: redis-semaphore's `MultiSemaphore` (shares its semaphore with `Semaphore`). */
export class MultiSemaphore extends Semaphore {
  protected override readonly _kind: string = 'multi-semaphore';
  protected readonly _permits: number;

  /** `permits` of the semaphore `key` of `limit` permits, taken at once. */
  constructor(client: RedisClient, key: string, limit: number, permits: number, options?: LockOptions) {
    super(client, key, limit, options);
    this._permits = permits;
  }

  protected override get permits(): number {
    return this._permits;
  }
}

/** A mutex over independent masters (padlock's Redlock: 3 or more): redis-semaphore's `RedlockMutex`. */
export class RedlockMutex extends Lock {
  protected readonly _kind: string = 'redlock-mutex';
  protected readonly _key: string;

  /** A mutex named `key` over `clients`, 3 or more independent masters. */
  constructor(clients: RedisClient[], key: string, options?: LockOptions) {
    super(clients, options);
    this._key = key;
  }

  protected lockOf(padlock: Padlock): Lockable {
    return padlock.mutex(this._key);
  }
}

/**
 * Why padlock has no semaphore over independent masters: a majority per hold does not bound the
 * total across masters (with 2 permits, majorities {1,2,3}, {3,4,5} and {1,4,5} admit 3 holders
 * while no master saw more than 2).
 */
const NO_REDLOCK_SEMAPHORE =
  'not used: a semaphore over independent masters cannot bound its holders (majorities {1,2,3}, {3,4,5} and {1,4,5} of 5 masters admit 3 holders of 2 permits while no master saw more than 2); use Semaphore on one primary (with Sentinel and padlock\'s `replicas`), or padlock\'s semaphore on ZooKeeper or etcd';

/** Refused: `new RedlockSemaphore(...)` throws `PadlockOptionError` naming why, and what to use instead. */
export class RedlockSemaphore {
  /** @throws PadlockOptionError always: why, and what to use instead */
  constructor(clients: RedisClient[], key: string, limit: number, options?: LockOptions) {
    void [key, limit, options];
    throw new PadlockOptionError('RedlockSemaphore', NO_REDLOCK_SEMAPHORE, clients);
  }
}

/** Refused as {@link RedlockSemaphore} is. */
export class RedlockMultiSemaphore {
  /** @throws PadlockOptionError always: why, and what to use instead */
  constructor(clients: RedisClient[], key: string, limit: number, permits: number, options?: LockOptions) {
    void [key, limit, permits, options];
    throw new PadlockOptionError('RedlockMultiSemaphore', NO_REDLOCK_SEMAPHORE, clients);
  }
}

/** A semaphore's hold cannot be taken over whole (freeing it would free every holder's permits). */
function refuseExternal(options: LockOptions | undefined): LockOptions | undefined {
  if (options?.acquiredExternally === true || options?.externallyAcquiredIdentifier !== undefined) {
    throw new PadlockOptionError('acquiredExternally', 'left out for a semaphore (padlock/redis-semaphore takes over a hold taken elsewhere for Mutex and RedlockMutex only)', true);
  }
  return options;
}
