/**
 * What an operator reads of a store other than Redis (ZooKeeper, etcd, PostgreSQL): every lock in use, as the same
 * {@link LockState} the Redis inspection gives, so that `padlock list`, `inspect` and `release`
 * print and decide alike on every store. A consensus store's lock is a queue of participants (one
 * node or key each, in creation order); its catalog reads them, and {@link lockStateOf} turns one
 * lock's queue into its state.
 */
import type { HolderState, LockKind, LockState, WaiterState } from './lock-state.js';

/** One participant of a lock's queue, as a store's catalog reads it. */
export interface CatalogEntry {
  /** `lock` (mutex, writer), `read` (a reader; `down`: a writer's own read), `permit` (a semaphore's). */
  readonly role: 'lock' | 'read' | 'down' | 'permit';
  readonly owner: string;
  /** The permits it takes (1 but for a semaphore). */
  readonly permits: number;
  /** Its place in creation order, store-wide: a holder's fence. */
  readonly order: number;
  /** Its hold count. */
  readonly count: number;
  /** Whether it holds the lock now (the store's own queue rule says). */
  readonly holds: boolean;
  /** The client (session or lease, as the store names it) it lives by; `null` when unknown. */
  readonly client: string | null;
  /**
   * When it joined, ms since the epoch by the store's clock (ZooKeeper: its znode's `ctime`);
   * `undefined` where the store keeps no time (etcd keeps revisions).
   */
  readonly since?: number | undefined;
  /** A holder's lease left, ms by the store's clock; `undefined` where the store keeps it per lock (etcd: the lease's TTL) or not at all. */
  readonly leaseMs?: number | undefined;
}

/** One lock of a consensus store, read. */
export interface CatalogLock {
  readonly kind: LockKind;
  readonly name: string;
  /** Its participants, in queue order. */
  readonly entries: readonly CatalogEntry[];
  /** A semaphore's stored limit (`null` when none is stored, or another kind). */
  readonly limit: number | null;
  /** With no stored limit, the one its participants' code passed (`null` when unknown, or another kind). */
  readonly codeLimit: number | null;
  /** How long its holders' leases surely last (etcd: the holder's lease's TTL); `null` when the store cannot say (ZooKeeper: a session). */
  readonly leaseMs: number | null;
}

/** An operator's read of a consensus store. */
export interface LockCatalog {
  /** What the store is, for headers: `ZooKeeper 127.0.0.1:2181 (prefix padlock)`. */
  readonly description: string;
  /** Every lock in use (held, or with waiters) under the catalog's prefix, sorted by name then kind. */
  locks(): Promise<CatalogLock[]>;
  /** Closes what the catalog opened. */
  close(): Promise<void>;
}

/** The state of `lock`, as `padlock list` and `inspect` show it (up to `waiters` waiters listed). */
export function lockStateOf(lock: CatalogLock, waiters = Infinity, now = Date.now()): LockState {
  const holding = lock.entries.filter((entry) => entry.holds);
  const waiting = lock.entries.filter((entry) => !entry.holds);
  const fences = holding.map((entry) => entry.order);
  const holders: HolderState[] = holding
    .slice()
    .sort((a, b) => Number(b.role === 'lock') - Number(a.role === 'lock'))
    .map((entry) => ({
      owner: entry.owner,
      holdCount: entry.count,
      clients: entry.client === null ? null : [entry.client],
      ...(lock.kind === 'readWrite' ? { side: entry.role === 'lock' ? ('write' as const) : ('read' as const) } : {}),
      ...(lock.kind === 'semaphore' ? { permits: entry.permits, fence: entry.order } : {}),
      // Each holder's own lease, as Redis shows a read/write lock's or a semaphore's.
      ...(lock.kind !== 'mutex' && entry.leaseMs !== undefined ? { leaseMs: entry.leaseMs } : {}),
    }));
  const queued: WaiterState[] = waiting.slice(0, waiters).map((entry, i) => ({
    position: i + 1,
    owner: entry.owner,
    kind: waiterKind(lock.kind, entry.role),
    clientId: entry.client,
    alive: true, // a participant lives exactly as long as its session or lease
    waitedMs: entry.since === undefined ? null : Math.max(0, now - entry.since),
    heartbeatMs: null,
    leaseMs: null,
    ...(lock.kind === 'semaphore' ? { permits: entry.permits } : {}),
  }));
  const fence = fences.length === 0 ? null : Math.max(...fences);
  return {
    name: lock.name,
    kind: lock.kind,
    held: holding.length > 0,
    fence,
    leaseMs: holding.length > 0 ? lock.leaseMs : null,
    holders,
    ...(lock.kind === 'semaphore' ? { permits: { used: holding.reduce((sum, entry) => sum + entry.permits, 0), limit: lock.limit, codeLimit: lock.codeLimit } } : {}),
    waiting: waiting.length,
    oldestWaitMs: waiting.reduce<number | null>((oldest, entry) => (entry.since === undefined ? oldest : Math.max(oldest ?? 0, now - entry.since, 0)), null),
    lastFence: fence,
    waiters: queued,
    keys: [],
  };
}

function waiterKind(kind: LockKind, role: CatalogEntry['role']): WaiterState['kind'] {
  if (kind === 'semaphore') return 'semaphore';
  if (kind === 'readWrite') return role === 'lock' ? 'write' : 'read';
  return 'mutex';
}

/** Whether `name` matches `pattern`, a Redis-style glob (`*`, `?`, `[abc]`, `\` escapes), as `padlock list` takes it. */
export function globMatches(pattern: string, name: string): boolean {
  let source = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i] ?? '';
    if (c === '\\' && i + 1 < pattern.length) source += escapeRegExp(pattern[++i] ?? '');
    else if (c === '*') source += '[\\s\\S]*';
    else if (c === '?') source += '[\\s\\S]';
    else if (c === '[') {
      const end = pattern.indexOf(']', i + 1);
      if (end < 0) source += '\\[';
      else {
        const body = pattern.slice(i + 1, end);
        source += `[${body}]`;
        i = end;
      }
    } else source += escapeRegExp(c);
  }
  return new RegExp(`^${source}$`, 'u').test(name);
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

/** A lock name as a store escaped it into one path segment (`encodeURIComponent`); a segment padlock did not write is kept as it is. */
export function decodeName(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/** Catalog order: by name, then kind. */
export function byNameThenKind(a: CatalogLock, b: CatalogLock): number {
  return a.name === b.name ? a.kind.localeCompare(b.kind) : a.name < b.name ? -1 : 1;
}
