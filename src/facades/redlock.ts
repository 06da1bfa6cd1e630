/**
 * `padlock/redlock`: redlock v5's API (`Redlock`, `Lock`, `ResourceLockedError`, `ExecutionError`)
 * on padlock. Change `from 'redlock'` to `from 'padlock/redlock'` and the code runs on padlock's
 * locks: waiting without polling, a fence on every `Lock`, padlock's behaviour under faults.
 *
 * Where redlock's behaviour is kept and where it is not (docs/migrating.md):
 * - `retryCount` polling becomes one wait without polling, bounded by what the retries could
 *   have taken: `retryCount × (retryDelay + retryJitter)` ms (`retryCount: -1`: no bound; `0`: one try).
 * - One client is one server; several are Redlock's independent masters (at least 3, as padlock
 *   asks of Redlock); several resources are one padlock multi-lock (all or nothing).
 * - `attempts` holds one summary entry: padlock decides per round and does not expose each retry.
 * - Keys are padlock's (docs/protocol.md), not redlock's: processes still on redlock do not
 *   exclude processes on this facade. Switch them all at once.
 */
import { EventEmitter } from 'node:events';
import { LockLostError, LockNotHeldError, LockTimeoutError, PadlockOptionError, QuorumError, StoreUnavailableError } from '../errors.js';
import type { Lease } from '../lease.js';
import type { Padlock } from '../padlock.js';
import type { RedisClient } from '../stores/redis/adapters/clients.js';
import { openFacadePadlock, type FacadePadlock } from './facade-padlock.js';

/** A client as redlock takes it: any client padlock takes (ioredis `Redis` or `Cluster`, node-redis...). */
export type Client = RedisClient;

/** One client's vote in an attempt, as redlock reports it. */
export type ClientExecutionResult = { client: Client; vote: 'for'; value: number } | { client: Client; vote: 'against'; error: Error };

/** What one attempt's clients said. */
export type ExecutionStats = {
  /** How many clients the Redlock has. */
  readonly membershipSize: number;
  /** How many must agree: a majority. */
  readonly quorumSize: number;
  /** The clients that granted (every client, when the operation succeeded: padlock does not report each node's vote of a success). */
  readonly votesFor: Set<Client>;
  /** The clients that refused, each with its reason. */
  readonly votesAgainst: Map<Client, Error>;
};

/** The attempts of an operation (one entry: padlock's summary). */
export type ExecutionResult = {
  /** One summary entry (padlock decides per round and does not expose each retry). */
  attempts: ReadonlyArray<Promise<ExecutionStats>>;
};

/** redlock's settings. */
export interface Settings {
  /** Accepted for compatibility: padlock keeps its own drift margin (docs/protocol.md). */
  readonly driftFactor: number;
  /** How many retries redlock made: with `retryDelay` and `retryJitter`, bounds padlock's wait. `-1`: no bound. */
  readonly retryCount: number;
  /** Time between redlock's attempts, in ms: part of the wait bound. */
  readonly retryDelay: number;
  /** Most time added at random to each retry, in ms: part of the wait bound. */
  readonly retryJitter: number;
  /** `using` refuses a duration less than this plus 100 ms, as redlock does; renewal is padlock's watchdog. */
  readonly automaticExtensionThreshold: number;
}

/** redlock's defaults. */
const defaultSettings: Settings = { driftFactor: 0.01, retryCount: 10, retryDelay: 200, retryJitter: 100, automaticExtensionThreshold: 500 };

/** A resource is held by another owner (emitted on `error` when an acquisition finds it so, as redlock does). */
export class ResourceLockedError extends Error {
  /** `'ResourceLockedError'`. */
  override readonly name = 'ResourceLockedError';
  /** Made by the facade; exported for `instanceof`, as redlock's is. */
  constructor(override readonly message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** An operation did not succeed within its retry window; `cause` is padlock's error. */
export class ExecutionError extends Error {
  /** `'ExecutionError'`. */
  override readonly name = 'ExecutionError';
  /**
   * Made by the facade; exported for `instanceof`, as redlock's is.
   * @param attempts one summary entry of the votes
   */
  constructor(
    override readonly message: string,
    readonly attempts: ReadonlyArray<Promise<ExecutionStats>>,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** The signal `using` hands its routine: aborted when the lock is lost, the error at `error`. */
export type RedlockAbortSignal = AbortSignal & { error?: Error };

/** The padlock lease behind each Lock (a Lock made by hand has none, and cannot be released). */
const leases = new WeakMap<Lock, Lease>();

/** A lock held on some resources, as redlock returns it; `fence` and `signal` are padlock's additions. */
export class Lock {
  /** Made by `Redlock`: a Lock made by hand has no lease behind it and cannot be released or extended. */
  constructor(
    readonly redlock: Redlock,
    readonly resources: string[],
    /** The owner token (padlock's `lease.owner`). */
    readonly value: string,
    readonly attempts: ReadonlyArray<Promise<ExecutionStats>>,
    /** When the lock ends unless extended (ms since the epoch, with a margin for drift); 0 once released or extended. */
    public expiration: number,
  ) {}

  /** The fencing token: strictly greater than any earlier holder's. Send it with every write the lock protects. */
  get fence(): number {
    return leases.get(this)?.fence ?? 0;
  }

  /** Aborted (with padlock's `LockLostError`) the moment the lock is known lost. */
  get signal(): AbortSignal {
    return leases.get(this)?.signal ?? AbortSignal.abort(new ExecutionError('This lock was not acquired by a Redlock.', []));
  }

  /** Releases the lock (`redlock.release(this)`). */
  release(): Promise<ExecutionResult> {
    return this.redlock.release(this);
  }

  /** Extends the lock (`redlock.extend(this, duration)`). */
  extend(duration: number): Promise<Lock> {
    return this.redlock.extend(this, duration);
  }
}

const RETRY_WINDOW = 'The operation was unable to achieve a quorum during its retry window.';

/**
 * redlock v5's `Redlock`, on padlock.
 *
 * @example
 * ```ts
 * import Redlock from 'padlock/redlock';
 * const redlock = new Redlock([redis]);
 * await redlock.using(['order:42'], 5_000, async (signal) => {
 *   if (signal.aborted) throw signal.error;
 * });
 * ```
 */
export class Redlock extends EventEmitter {
  /** The clients given. */
  readonly clients: Set<Client>;
  /** The settings in force: redlock's defaults, overridden by those given. */
  readonly settings: Settings;
  readonly #opened: FacadePadlock;

  /**
   * @param clients one client (one server), or 3 or more of independent masters (Redlock)
   * @param settings redlock's settings (see {@link Settings} for what each becomes)
   * @param scripts redlock's custom Lua scripts: refused (`PadlockOptionError`), padlock runs its own protocol
   */
  constructor(clients: Iterable<Client>, settings: Partial<Settings> = {}, scripts?: Record<string, unknown>) {
    super();
    // As redlock: errors are reported, and an `error` without a listener must not crash.
    this.on('error', () => undefined);
    this.clients = new Set(clients);
    if (this.clients.size === 0) throw new Error('Redlock must be instantiated with at least one redis client.');
    if (scripts !== undefined && Object.keys(scripts).length > 0) {
      throw new PadlockOptionError('scripts', 'left out: padlock/redlock runs padlock\'s own scripts (docs/protocol.md), not custom ones', scripts);
    }
    this.settings = { ...defaultSettings, ...definedNumbers(settings) };
    this.#opened = openFacadePadlock([...this.clients]);
    this.#opened.padlock.on('error', (error) => this.emit('error', error));
  }

  /** The Padlock this Redlock runs on (for padlock's other lock kinds, events and `close()`). */
  get padlock(): Padlock {
    return this.#opened.padlock;
  }

  /** Releases what this Redlock holds, then quits every client. */
  async quit(): Promise<void> {
    await this.#opened.close();
    await Promise.all([...this.clients].map((client) => quitClient(client)));
  }

  /**
   * Acquires the resources for `duration` ms (a fixed lease: not renewed; see `using`), waiting
   * without polling up to `retryCount × (retryDelay + retryJitter)` ms.
   * @throws ExecutionError when the resources stayed held, or no quorum answered, in that time
   */
  async acquire(resources: string[], duration: number, settings?: Partial<Settings>): Promise<Lock> {
    checkDuration(duration);
    const merged = { ...this.settings, ...definedNumbers(settings ?? {}) };
    const padlock = this.#opened.padlock;
    const lock = resources.length === 1 ? padlock.mutex(resources[0] as string) : padlock.multi(resources);
    let lease: Lease;
    try {
      lease = await lock.acquire({ leaseMs: duration, autoExtend: false, waitMs: waitBound(merged) });
    } catch (error) {
      throw this.#executionError(error, resources);
    }
    return this.#lockOf(lease, resources);
  }

  /**
   * Releases the lock. Like redlock, it is safe to retry or to ignore a failure: the lock expires by itself.
   * @throws ExecutionError when the lock was no longer held (expired, or taken) or Redis did not answer
   */
  async release(lock: Lock, _settings?: Partial<Settings>): Promise<ExecutionResult> {
    lock.expiration = 0;
    const lease = leases.get(lock);
    if (lease === undefined) throw new ExecutionError('This lock was not acquired by a Redlock.', []);
    try {
      await lease.release();
    } catch (error) {
      throw this.#executionError(error, lock.resources);
    }
    return { attempts: [this.#stats(true)] };
  }

  /**
   * Extends the lock to `duration` ms from now and returns the Lock to use from then on (the old one's
   * `expiration` becomes 0), as redlock does. padlock never shortens a lease: the lock lasts at least `duration`.
   * @throws ExecutionError when the lock had expired or was lost
   */
  async extend(existing: Lock, duration: number, _settings?: Partial<Settings>): Promise<Lock> {
    checkDuration(duration);
    if (existing.expiration < Date.now()) throw new ExecutionError('Cannot extend an already-expired lock.', []);
    const lease = leases.get(existing);
    if (lease === undefined) throw new ExecutionError('This lock was not acquired by a Redlock.', []);
    try {
      await lease.extend(duration);
    } catch (error) {
      throw this.#executionError(error, existing.resources);
    }
    existing.expiration = 0;
    return this.#lockOf(lease, existing.resources);
  }

  /**
   * Runs `routine` under a lock on the resources that padlock's watchdog renews while it runs; the
   * signal is aborted (its `error` set) if the lock is lost. Releases the lock when the routine ends.
   */
  using<T>(resources: string[], duration: number, settings: Partial<Settings>, routine?: (signal: RedlockAbortSignal) => Promise<T>): Promise<T>;
  /** `using` with the Redlock's own settings. */
  using<T>(resources: string[], duration: number, routine: (signal: RedlockAbortSignal) => Promise<T>): Promise<T>;
  async using<T>(resources: string[], duration: number, settingsOrRoutine: Partial<Settings> | ((signal: RedlockAbortSignal) => Promise<T>), optionalRoutine?: (signal: RedlockAbortSignal) => Promise<T>): Promise<T> {
    checkDuration(duration);
    const settings = typeof settingsOrRoutine === 'function' ? this.settings : { ...this.settings, ...definedNumbers(settingsOrRoutine) };
    const routine = optionalRoutine ?? settingsOrRoutine;
    if (typeof routine !== 'function') throw new Error('INVARIANT: routine is not a function.');
    if (settings.automaticExtensionThreshold > duration - 100) {
      throw new Error('A lock `duration` must be at least 100ms greater than the `automaticExtensionThreshold` setting.');
    }
    const padlock = this.#opened.padlock;
    const lock = resources.length === 1 ? padlock.mutex(resources[0] as string) : padlock.multi(resources);
    let lease: Lease;
    try {
      lease = await lock.acquire({ leaseMs: duration, autoExtend: true, waitMs: waitBound(settings) });
    } catch (error) {
      throw this.#executionError(error, resources);
    }
    const controller = new AbortController();
    const signal = controller.signal as RedlockAbortSignal;
    const lost = (): void => {
      signal.error = lease.signal.reason instanceof Error ? lease.signal.reason : new Error(String(lease.signal.reason));
      controller.abort(signal.error);
    };
    if (lease.signal.aborted) lost();
    else lease.signal.addEventListener('abort', lost, { once: true });
    try {
      return await routine(signal);
    } finally {
      lease.signal.removeEventListener('abort', lost);
      try {
        await lease.release();
      } catch (error) {
        // eslint-disable-next-line no-unsafe-finally -- as redlock: a failed release is the call's error
        throw this.#executionError(error, resources);
      }
    }
  }

  #lockOf(lease: Lease, resources: string[]): Lock {
    const lock = new Lock(this, resources, lease.owner, [this.#stats(true)], lease.expiresAt);
    leases.set(lock, lease);
    return lock;
  }

  /** One attempt's stats as padlock knows them: every client for, or every client against with `error`. */
  #stats(granted: boolean, error?: Error, againstByIndex?: readonly (Error | undefined)[]): Promise<ExecutionStats> {
    const clients = [...this.clients];
    const votesFor = new Set<Client>();
    const votesAgainst = new Map<Client, Error>();
    clients.forEach((client, i) => {
      const against = againstByIndex === undefined ? (granted ? undefined : error) : againstByIndex[i];
      if (against === undefined) votesFor.add(client);
      else votesAgainst.set(client, against);
    });
    return Promise.resolve({ membershipSize: clients.length, quorumSize: Math.floor(clients.length / 2) + 1, votesFor, votesAgainst });
  }

  /** padlock's failure as redlock's: held or no quorum → `ExecutionError`; a bad argument stays padlock's typed error. */
  #executionError(error: unknown, resources: readonly string[]): unknown {
    if (error instanceof PadlockOptionError) return error;
    if (error instanceof LockTimeoutError || error instanceof LockNotHeldError || error instanceof LockLostError) {
      const locked = new ResourceLockedError(`The operation was applied to: 0 of the ${resources.length} requested resources.`, { cause: error });
      this.emit('error', locked);
      return new ExecutionError(RETRY_WINDOW, [this.#stats(false, locked)], { cause: error });
    }
    if (error instanceof QuorumError) {
      const votes = error.nodes.map((node) =>
        node.outcome === 'acquired' ? undefined : node.outcome === 'held' ? new ResourceLockedError(`${node.node} holds it for another owner`) : node.error instanceof Error ? node.error : new Error(String(node.error)),
      );
      return new ExecutionError(RETRY_WINDOW, [this.#stats(false, undefined, votes.length === this.clients.size ? votes : undefined)], { cause: error });
    }
    if (error instanceof StoreUnavailableError) return new ExecutionError(RETRY_WINDOW, [this.#stats(false, error)], { cause: error });
    const reason = error instanceof Error ? error : new Error(String(error));
    return new ExecutionError(reason.message, [this.#stats(false, reason)], { cause: error });
  }
}

export default Redlock;

/** redlock's retries, as a bound on one wait without polling. */
function waitBound(settings: Settings): number {
  if (settings.retryCount === -1) return Infinity;
  return Math.max(0, settings.retryCount) * (Math.max(0, settings.retryDelay) + Math.max(0, settings.retryJitter));
}

function checkDuration(duration: number): void {
  if (Math.floor(duration) !== duration) throw new Error('Duration must be an integer value in milliseconds.');
}

/** The settings given as numbers (redlock ignores the others and keeps its defaults for them). */
function definedNumbers(settings: Partial<Settings>): Partial<Settings> {
  return Object.fromEntries(Object.entries(settings).filter(([, value]) => typeof value === 'number'));
}

async function quitClient(client: Client): Promise<void> {
  const quit = (client as { quit?: () => Promise<unknown> }).quit;
  if (typeof quit === 'function') await quit.call(client);
}
