/**
 * Every error padlock raises. Each has a stable `code` to switch on and the context a caller needs
 * (the lock's name, how long it waited, which nodes said what).
 */
import { formatMs } from './durations.js';

/** Stable codes of {@link PadlockError}s. */
export type PadlockErrorCode =
  | 'LOCK_TIMEOUT'
  | 'LOCK_NOT_HELD'
  | 'LOCK_LOST'
  | 'QUORUM'
  | 'INVALID_OPTION'
  | 'STORE_UNAVAILABLE'
  | 'REDIS_UNAVAILABLE'
  | 'ZOOKEEPER_UNAVAILABLE'
  | 'ZOOKEEPER_SESSION_EXPIRED'
  | 'ETCD_UNAVAILABLE'
  | 'POSTGRES_UNAVAILABLE'
  | 'REDIS_COMMAND'
  | 'REPLICA_ACK'
  | 'CLOSED'
  | 'LOCK_UPGRADE'
  | 'PERMIT_LIMIT';

/** Base class of every padlock error. */
export abstract class PadlockError extends Error {
  /** A stable, machine-readable code. */
  abstract readonly code: PadlockErrorCode;
  /** The lock's name, when the error concerns one lock. */
  readonly lock: string | undefined;

  protected constructor(message: string, lock: string | undefined, options?: { cause?: unknown }) {
    super(message, options);
    this.lock = lock;
  }
}

/** `acquire` waited `waitMs` and the lock stayed held by another owner. */
export class LockTimeoutError extends PadlockError {
  /** `'LockTimeoutError'`: the class's name, also across copies of padlock (where `instanceof` fails). */
  override readonly name = 'LockTimeoutError';
  /** `'LOCK_TIMEOUT'`: stable across versions; test errors by it. */
  readonly code = 'LOCK_TIMEOUT';
  /** How long the call waited, in whole milliseconds. */
  readonly waitedMs: number;

  /**
   * @param lock the lock's name
   * @param waitedMs how long the call waited (rounded to whole milliseconds)
   * @param calledFrom an object whose `stack` was captured where the waiting call was made: the
   *   error is made by a timer, whose own stack has none of the caller's frames
   */
  constructor(lock: string, waitedMs: number, calledFrom?: { readonly stack?: string | undefined }) {
    const waited = Math.round(waitedMs);
    super(`timed out after ${formatMs(waited)} waiting for lock "${lock}"`, lock);
    this.waitedMs = waited;
    const frames = calledFrom?.stack?.split('\n').slice(1);
    if (frames !== undefined && frames.length > 0) this.stack = `${this.name}: ${this.message}\n${frames.join('\n')}`;
  }
}

/** `release`, `extend` or an explicit re-entry by an owner that does not hold the lock (any more). */
export class LockNotHeldError extends PadlockError {
  /** `'LockNotHeldError'`: the class's name, also across copies of padlock (where `instanceof` fails). */
  override readonly name = 'LockNotHeldError';
  /** `'LOCK_NOT_HELD'`: stable across versions; test errors by it. */
  readonly code = 'LOCK_NOT_HELD';
  /** The owner token that was refused. */
  readonly owner: string;

  /** Made by padlock; exported for `instanceof` and for tests of code that handles it. */
  constructor(lock: string, owner: string, action: string) {
    super(`cannot ${action} lock "${lock}": owner ${owner} does not hold it (released, expired or taken over)`, lock);
    this.owner = owner;
  }
}

/** Why a held lock was lost. */
export type LockLostReason =
  /** Renewal (or the check a force-release's notice asks for) found the key gone or owned by another. */
  | 'taken'
  /** The local deadline passed without a successful renewal (Redis unreachable, event loop stalled, or a fixed lease ran out). */
  | 'expired';

/** A held lock was lost: `lease.signal` is aborted with this error. */
export class LockLostError extends PadlockError {
  /** `'LockLostError'`: the class's name, also across copies of padlock (where `instanceof` fails). */
  override readonly name = 'LockLostError';
  /** `'LOCK_LOST'`: stable across versions; test errors by it. */
  readonly code = 'LOCK_LOST';
  /** The owner token of the lost hold. */
  readonly owner: string;
  /** The fence of the lost hold: writes carrying it must now be refused. */
  readonly fence: number;
  /** What gave the loss away. */
  readonly reason: LockLostReason;

  /**
   * Made by padlock; exported for `instanceof` and for tests of code that handles it.
   * @param options.record what holds a lock in its store, for the message: `'key'` (the default: Redis, etcd), `'znode'` (ZooKeeper)
   */
  constructor(lock: string, owner: string, fence: number, reason: LockLostReason, options?: { cause?: unknown; record?: string | undefined }) {
    const why =
      reason === 'taken'
        ? `the store no longer has it: its ${options?.record ?? 'key'} deleted or owned by another`
        : 'its lease ran out before a renewal succeeded';
    super(`lock "${lock}" (fence ${fence}) was lost: ${why}`, lock, options?.cause === undefined ? undefined : { cause: options.cause });
    this.owner = owner;
    this.fence = fence;
    this.reason = reason;
  }
}

/** One node's answer in a Redlock round. */
export interface NodeOutcome {
  /** The node, as `host:port`. */
  readonly node: string;
  /** What it said. */
  readonly outcome: 'acquired' | 'held' | 'error';
  /** The error, when `outcome` is `'error'`. */
  readonly error?: unknown;
}

/** Redlock: too few nodes agreed, or the agreement came too late to be valid. */
export class QuorumError extends PadlockError {
  /** `'QuorumError'`: the class's name, also across copies of padlock (where `instanceof` fails). */
  override readonly name = 'QuorumError';
  /** `'QUORUM'`: stable across versions; test errors by it. */
  readonly code = 'QUORUM';
  /** What each node said. */
  readonly nodes: readonly NodeOutcome[];

  /** Made by padlock; exported for `instanceof` and for tests of code that handles it. */
  constructor(lock: string, message: string, nodes: readonly NodeOutcome[]) {
    super(message, lock);
    this.nodes = nodes;
  }
}

/** An option or argument is invalid. Raised before any Redis command is sent. */
export class PadlockOptionError extends PadlockError {
  /** `'PadlockOptionError'`: the class's name, also across copies of padlock (where `instanceof` fails). */
  override readonly name = 'PadlockOptionError';
  /** `'INVALID_OPTION'`: stable across versions; test errors by it. */
  readonly code = 'INVALID_OPTION';
  /** The option's name, e.g. `'waitMs'`. */
  readonly option: string;
  /** The value that was refused. */
  readonly value: unknown;

  /** Made by padlock; exported for `instanceof` and for tests of code that handles it. */
  constructor(option: string, expected: string, value: unknown) {
    super(`${option} must be ${expected}, got ${describe(value)}`, undefined);
    this.option = option;
    this.value = value;
  }
}

/**
 * The store the locks live in (Redis, ZooKeeper, etcd) did not answer in time, or could not be
 * reached. Each store raises its own subclass ({@link RedisUnavailableError} and the like, each with
 * its own `code`); catch this class to handle any of them.
 */
export class StoreUnavailableError extends PadlockError {
  /** `'StoreUnavailableError'`, or the subclass's name: also across copies of padlock (where `instanceof` fails). */
  override readonly name: string = 'StoreUnavailableError';
  /** `'STORE_UNAVAILABLE'`, or the store's own code (`'REDIS_UNAVAILABLE'`, …): stable across versions. */
  readonly code: 'STORE_UNAVAILABLE' | 'REDIS_UNAVAILABLE' | 'ZOOKEEPER_UNAVAILABLE' | 'ZOOKEEPER_SESSION_EXPIRED' | 'ETCD_UNAVAILABLE' | 'POSTGRES_UNAVAILABLE' = 'STORE_UNAVAILABLE';

  /**
   * Made by padlock; exported for `instanceof` and for tests of code that handles it.
   * @param store what was unavailable, for the message: `'Redis'`, `'ZooKeeper'`, `'etcd'`
   */
  constructor(lock: string | undefined, cause: unknown, what?: string, store = 'the lock store') {
    super(`${store} is unavailable${lock === undefined ? '' : ` for lock "${lock}"`}: ${what ?? messageOf(cause)}`, lock, { cause });
  }
}

/** Redis could not be reached, or the connection failed mid-command. The client's error is the `cause`. */
export class RedisUnavailableError extends StoreUnavailableError {
  /** `'RedisUnavailableError'`: the class's name, also across copies of padlock (where `instanceof` fails). */
  override readonly name = 'RedisUnavailableError';
  /** `'REDIS_UNAVAILABLE'`: stable across versions; test errors by it. */
  override readonly code = 'REDIS_UNAVAILABLE';

  /** Made by padlock; exported for `instanceof` and for tests of code that handles it. */
  constructor(lock: string | undefined, cause: unknown, what?: string) {
    super(lock, cause, what, 'Redis');
  }
}

/** The ZooKeeper ensemble did not answer in time, or its session could not be kept. */
export class ZooKeeperUnavailableError extends StoreUnavailableError {
  /** `'ZooKeeperUnavailableError'`, or the subclass's name: also across copies of padlock (where `instanceof` fails). */
  override readonly name: string = 'ZooKeeperUnavailableError';
  /** `'ZOOKEEPER_UNAVAILABLE'` (or `'ZOOKEEPER_SESSION_EXPIRED'`, the subclass's): stable across versions; test errors by it. */
  override readonly code: 'ZOOKEEPER_UNAVAILABLE' | 'ZOOKEEPER_SESSION_EXPIRED' = 'ZOOKEEPER_UNAVAILABLE';

  /** Made by padlock; exported for `instanceof` and for tests of code that handles it. */
  constructor(lock: string | undefined, cause: unknown, what?: string) {
    super(lock, cause, what, 'ZooKeeper');
  }
}

/**
 * The Padlock's ZooKeeper session expired and no new one serves yet: not a passing unavailability
 * (the same call sent again does not help until a new session exists). With `zookeeperFactory`,
 * padlock is opening a new session (`renewing`), and a later call may be served; without it, this
 * Padlock serves no more: make a new client and Padlock.
 */
export class ZooKeeperSessionExpiredError extends ZooKeeperUnavailableError {
  /** `'ZooKeeperSessionExpiredError'`: the class's name, also across copies of padlock (where `instanceof` fails). */
  override readonly name = 'ZooKeeperSessionExpiredError';
  /** `'ZOOKEEPER_SESSION_EXPIRED'`: stable across versions; test errors by it. */
  override readonly code = 'ZOOKEEPER_SESSION_EXPIRED';
  /** Whether padlock is opening a new session (a `zookeeperFactory` was given): a later call may be served. */
  readonly renewing: boolean;

  /** Made by padlock; exported for `instanceof` and for tests of code that handles it. */
  constructor(lock: string | undefined, renewing: boolean, cause?: unknown) {
    const what = renewing ? 'its session expired and the new one is not connected yet' : "its session expired, and without zookeeperFactory padlock cannot open another: make a new client and Padlock";
    super(lock, cause, what);
    this.renewing = renewing;
  }
}

/** The etcd cluster did not answer in time, or this client's lease could not be kept. */
export class EtcdUnavailableError extends StoreUnavailableError {
  /** `'EtcdUnavailableError'`: the class's name, also across copies of padlock (where `instanceof` fails). */
  override readonly name = 'EtcdUnavailableError';
  /** `'ETCD_UNAVAILABLE'`: stable across versions; test errors by it. */
  override readonly code = 'ETCD_UNAVAILABLE';

  /** Made by padlock; exported for `instanceof` and for tests of code that handles it. */
  constructor(lock: string | undefined, cause: unknown, what?: string) {
    super(lock, cause, what, 'etcd');
  }
}

/**
 * The PostgreSQL server did not answer in time, could not be reached, or cannot hold locks: a
 * read-only server or a standby in recovery, a schema padlock may not create, a pooler that breaks
 * `LISTEN` (the message says which). The driver's error, if any, is the `cause`.
 */
export class PostgresUnavailableError extends StoreUnavailableError {
  /** `'PostgresUnavailableError'`: the class's name, also across copies of padlock (where `instanceof` fails). */
  override readonly name = 'PostgresUnavailableError';
  /** `'POSTGRES_UNAVAILABLE'`: stable across versions; test errors by it. */
  override readonly code = 'POSTGRES_UNAVAILABLE';

  /** Made by padlock; exported for `instanceof` and for tests of code that handles it. */
  constructor(lock: string | undefined, cause: unknown, what?: string) {
    super(lock, cause, what, 'PostgreSQL');
  }
}

/** Redis answered with an error, e.g. a padlock key holds a value of another type (`WRONGTYPE`). */
export class RedisCommandError extends PadlockError {
  /** `'RedisCommandError'`: the class's name, also across copies of padlock (where `instanceof` fails). */
  override readonly name = 'RedisCommandError';
  /** `'REDIS_COMMAND'`: stable across versions; test errors by it. */
  readonly code = 'REDIS_COMMAND';

  /** Made by padlock; exported for `instanceof` and for tests of code that handles it. */
  constructor(lock: string | undefined, cause: unknown) {
    const text = messageOf(cause);
    const hint = /WRONGTYPE|unexpected reply/.test(text) ? ' (a key in padlock\'s key space holds data padlock did not write: see docs/protocol.md)' : '';
    super(`Redis refused a command${lock === undefined ? '' : ` for lock "${lock}"`}: ${text}${hint}`, lock, { cause });
  }
}

/**
 * With `replicas: { min, timeoutMs }`: fewer replicas than `min` acknowledged a lock write within
 * `timeoutMs`. A grant is undone before this is thrown (the lock is not held); a renewal does not
 * count (the lease runs on as it was).
 */
export class ReplicaAckError extends PadlockError {
  /** `'ReplicaAckError'`: the class's name, also across copies of padlock (where `instanceof` fails). */
  override readonly name = 'ReplicaAckError';
  /** `'REPLICA_ACK'`: stable across versions; test errors by it. */
  readonly code = 'REPLICA_ACK';
  /** How many replicas acknowledged the write. */
  readonly acknowledged: number;
  /** How many were required (`replicas.min`). */
  readonly required: number;

  /** Made by padlock; exported for `instanceof` and for tests of code that handles it. */
  constructor(lock: string | undefined, acknowledged: number, required: number) {
    super(
      `only ${acknowledged} of the ${required} replicas required acknowledged the write${lock === undefined ? '' : ` for lock "${lock}"`} in time: it was undone (a grant) or does not count (a renewal)`,
      lock,
    );
    this.acknowledged = acknowledged;
    this.required = required;
  }
}

/** The `Padlock` was closed: pending waits reject with this, and new calls too. */
export class PadlockClosedError extends PadlockError {
  /** `'PadlockClosedError'`: the class's name, also across copies of padlock (where `instanceof` fails). */
  override readonly name = 'PadlockClosedError';
  /** `'CLOSED'`: stable across versions; test errors by it. */
  readonly code = 'CLOSED';

  /** Made by padlock; exported for `instanceof` and for tests of code that handles it. */
  constructor(lock?: string) {
    super('this Padlock is closed', lock);
  }
}

/**
 * A holder of a read lock asked for the write lock of the same read/write lock (by async context or
 * owner token): an upgrade would wait for its own read hold to end, so it is refused at once. Release
 * the read lock first, or take the write lock first and then the read lock (a downgrade).
 */
export class LockUpgradeError extends PadlockError {
  /** `'LockUpgradeError'`: the class's name, also across copies of padlock (where `instanceof` fails). */
  override readonly name = 'LockUpgradeError';
  /** `'LOCK_UPGRADE'`: stable across versions; test errors by it. */
  readonly code = 'LOCK_UPGRADE';
  /** The owner token of the read hold that asked. */
  readonly owner: string | undefined;

  /** Made by padlock; exported for `instanceof` and for tests of code that handles it. */
  constructor(lock: string, owner?: string) {
    super(`cannot take the write lock of "${lock}" while holding its read lock${owner === undefined ? '' : ` (owner ${owner})`}: upgrades are refused (they could deadlock); release the read lock first`, lock);
    this.owner = owner;
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 80 ? `${value.slice(0, 77)}...` : value);
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  if (value === null) return 'null';
  if (value === undefined) return 'undefined';
  if (Array.isArray(value)) return `an array of ${value.length}`;
  return typeof value === 'object' ? 'an object' : typeof value;
}

/**
 * A semaphore request asks more permits than the semaphore's limit, so it could never be granted:
 * refused at once, or, for a waiter already queued, as soon as `setPermits` lowers the limit below
 * its request (it leaves the queue; it never waits forever).
 */
export class PermitLimitError extends PadlockError {
  /** `'PermitLimitError'`: the class's name, also across copies of padlock (where `instanceof` fails). */
  override readonly name = 'PermitLimitError';
  /** `'PERMIT_LIMIT'`: stable across versions; test errors by it. */
  readonly code = 'PERMIT_LIMIT';
  /** The permits asked. */
  readonly permits: number;
  /** The semaphore's limit when the request was refused. */
  readonly limit: number;

  /** Made by padlock; exported for `instanceof` and for tests of code that handles it. */
  constructor(lock: string, permits: number, limit: number) {
    super(`semaphore "${lock}" cannot grant ${permits} permits: its limit is ${limit} (raise it with setPermits, or ask fewer)`, lock);
    this.permits = permits;
    this.limit = limit;
  }
}
