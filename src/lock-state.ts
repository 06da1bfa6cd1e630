/**
 * A lock's state as operators see it, on every store: what `padlock list`, `inspect`, `watch`,
 * `release` and the dashboard show. Each store fills this one shape (Redis by reading its keys,
 * stores/redis/inspection.ts; ZooKeeper, etcd and PostgreSQL through their catalogs, catalog.ts),
 * and the CLI and the dashboard render only it. Times in ms; the fields are the CLI's `--json` ones.
 */

/**
 * The lock families, each with keys of its own: `mutex` (`mutex` and `fairMutex` share their keys),
 * `readWrite`, `semaphore`. One name may be used by several at once: each is a lock of its own.
 */
export type LockKind = 'mutex' | 'readWrite' | 'semaphore';

/** One lock found under a prefix: a name and the family whose keys it has. */
export interface LockId {
  readonly name: string;
  readonly kind: LockKind;
}

/** A lock's state at one moment, as one script read it. Times in ms; fields are the CLI's `--json` ones. */
export interface LockState {
  /** The lock's name. */
  readonly name: string;
  /** The lock family. A waiter's own kind is in {@link WaiterState.kind}. */
  readonly kind: LockKind;
  /** Whether someone holds it. */
  readonly held: boolean;
  /** Fence of the current hold (a semaphore: its newest holder's; a read/write lock: the last handed out, which readers share); `null` when free. */
  readonly fence: number | null;
  /** Remaining lease of the current hold (several holders: the longest, when the lock is free at the latest); `null` when free. */
  readonly leaseMs: number | null;
  /** Owners holding it, with their hold counts (one for a mutex; a read/write lock's writer first). */
  readonly holders: readonly HolderState[];
  /** A semaphore's permits: held by live holders, and its limit; absent for other kinds. */
  readonly permits?: PermitsState;
  /** Queued waiters not known to be dead (a waiter past its heartbeat is skipped at the next handoff). */
  readonly waiting: number;
  /** How long the longest-queued live waiter (of those read) has been queued; `null` when none is. */
  readonly oldestWaitMs: number | null;
  /** The last fence handed out, held or not (a freed lock keeps it an hour); `null` when the lock key is gone. */
  readonly lastFence: number | null;
  /** The first queued waiters, in queue order (as many as were asked for). */
  readonly waiters: readonly WaiterState[];
  /** The lock's keys in Redis, with their remaining time to live (none on the other stores). */
  readonly keys: readonly KeyState[];
}

/** A semaphore's permits. */
export interface PermitsState {
  /** Permits held by live holders. */
  readonly used: number;
  /** The limit stored by `setPermits`; `null` when none is (the limit is then the `permits` each client's code passes). */
  readonly limit: number | null;
  /**
   * With no stored limit, the `permits` the holders' code passed (`semaphore(name, n)`'s n), when the
   * store knows it and the clients agree; `null` otherwise. Shown, never used to free permits.
   */
  readonly codeLimit: number | null;
}

/** One holder of a lock. */
export interface HolderState {
  /** Its owner token. */
  readonly owner: string;
  /** Re-entrant holds it has. */
  readonly holdCount: number;
  /**
   * The ids of the clients (Padlocks) holding it: the one it was granted to, then any other that
   * re-entered it with its owner token. `null` when unknown (more than 8 did, or a client that
   * records none): such a hold is never reaped.
   */
  readonly clients: readonly string[] | null;
  /** A read/write lock's holder: the side it holds. Absent for other kinds. */
  readonly side?: 'read' | 'write';
  /** A semaphore's holder: the permits it holds. Absent for other kinds. */
  readonly permits?: number;
  /** A semaphore's holder: its own fence. Absent for other kinds. */
  readonly fence?: number;
  /** A read/write lock's or a semaphore's holder: its own remaining lease. Absent for a mutex (see {@link LockState.leaseMs}). */
  readonly leaseMs?: number;
}

/** One queued waiter. */
export interface WaiterState {
  /** 1 for the queue's head. */
  readonly position: number;
  /** Its owner token. */
  readonly owner: string;
  /**
   * `fair` (is handed the lock in turn), `mutex` (is woken in turn), `read` / `write` (a read/write
   * lock's: the side it waits for), `semaphore`, `unknown` (an entry padlock cannot read: dead).
   */
  readonly kind: 'mutex' | 'fair' | 'read' | 'write' | 'semaphore' | 'unknown';
  /** The id of the Padlock (one per client process, usually) it belongs to; `null` when unknown. */
  readonly clientId: string | null;
  /** Whether its heartbeat is current; a dead waiter is skipped and forgotten at the next handoff. */
  readonly alive: boolean;
  /** Since it joined the queue (a woken mutex waiter that was beaten to the lock rejoins: it restarts); `null` when unknown. */
  readonly waitedMs: number | null;
  /** Time left before it misses its heartbeat (negative: missed that long ago); `null` when unknown. */
  readonly heartbeatMs: number | null;
  /** The lease it asks for; `null` when unknown. */
  readonly leaseMs: number | null;
  /** A semaphore's waiter: the permits it asks for. Absent for other kinds. */
  readonly permits?: number;
}

/** One key of a lock in its store (Redis; the consensus stores and PostgreSQL list none). */
export interface KeyState {
  /**
   * What the key is for, its name's suffix. A mutex's: `lock` (string: fence, holder, hold count; a
   * tombstone once freed), `queue` (list of waiters' entries). A read/write lock's: `rw` (hash:
   * fence, holds), `rwleases` (sorted set: each hold's expiry), `rwqueue`. A semaphore's:
   * `semaphore` (hash: limit, fence), `semaphore-holders` (hash: each holder's permits and holds),
   * `semaphore-leases` (sorted set), `semaphore-queue`. See docs/protocol.md.
   */
  readonly role: string;
  /** The key's name in Redis. */
  readonly key: string;
  /** Its Redis type. */
  readonly type: 'string' | 'list' | 'hash' | 'zset';
  /** Whether it exists. */
  readonly exists: boolean;
  /** Its remaining time to live; `null` when absent or without an expiry. */
  readonly ttlMs: number | null;
}

/**
 * A lock's kind for display: a semaphore's with its permits held of its limit (stored, else the code's; `?`: not known); a
 * mutex's as `mutex (fair)` when waiters queued through `fairMutex`. A mutex and a fair mutex of one
 * name are one lock (one key, no record of which kind took it): only the queue's entries say their kind.
 */
export function kindLabel(lock: LockState): string {
  if (lock.kind === 'mutex' && lock.waiters.some((w) => w.kind === 'fair' && w.alive)) return 'mutex (fair)';
  return lock.permits === undefined ? lock.kind : `${lock.kind} ${lock.permits.used}/${lock.permits.limit ?? lock.permits.codeLimit ?? '?'}`;
}

/** Whether a lock is in use: held, or with live waiters. */
export function inUse(state: LockState): boolean {
  return state.held || state.waiting > 0;
}
