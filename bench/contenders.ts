/**
 * One adapter per library, behind one interface: a process opens a {@link Contender} (its own
 * connections), and its workers call `acquire(key)` and `held.release()`. Specs are plain data so a
 * worker process can rebuild the same contender from a message. A spec with `topology: 'redlock'`
 * runs the library's Redlock mode over every master of the bench's Redlock set, through the same
 * adapter as on the single server.
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import Redlock, { ExecutionError as RedlockExecutionError } from 'redlock';
import { Redlock as SesameRedlock, ExecutionError as SesameExecutionError } from '@sesamecare-oss/redlock';
import { Mutex as SemaphoreMutex, RedlockMutex as SemaphoreRedlockMutex, TimeoutError as SemaphoreTimeoutError } from 'redis-semaphore';
import { IoredisAdapter, LockAcquisitionError, createLock, createRedlock, type Lock as UniversalLock } from 'redlock-universal';
import { LockTimeoutError, Padlock, type Lockable } from '../src/index.js';

/** The padlock lock kinds measured. Adding a kind here (and its factory) adds its rows everywhere. */
const PADLOCK_KINDS = {
  mutex: (padlock: Padlock, name: string): Lockable => padlock.mutex(name),
  fairMutex: (padlock: Padlock, name: string): Lockable => padlock.fairMutex(name),
} satisfies Record<string, (padlock: Padlock, name: string) => Lockable>;

export type PadlockKind = keyof typeof PADLOCK_KINDS;
export const padlockKinds = Object.keys(PADLOCK_KINDS) as PadlockKind[];

/** `redlock` and `@sesamecare-oss/redlock` retry settings (retryCount -1 = no limit). */
export interface RedlockTuning {
  readonly retryCount?: number;
  readonly retryDelay?: number;
  readonly retryJitter?: number;
}

/** `redis-semaphore` Mutex timing options. */
export interface SemaphoreTuning {
  readonly retryInterval?: number;
  readonly acquireTimeout?: number;
}

/** `redlock-universal` SimpleLock options. */
export interface UniversalTuning {
  readonly retryAttempts?: number;
  readonly retryDelay?: number;
  readonly performance?: 'standard' | 'lean';
}

/**
 * Where a lock lives: `'single'`, the bench's single server; `'redlock'`, every master of its
 * Redlock set (padlock's `redis: [m1, …]`, redlock's client list, redis-semaphore's `RedlockMutex`,
 * redlock-universal's `createRedlock`).
 */
export type Topology = 'single' | 'redlock';

/** Libraries with a Redlock mode carry `topology`; absent means `'single'`. */
interface Placed {
  readonly topology?: Topology;
}

/** What to open: plain data, sent as is to worker processes. */
export type ContenderSpec = { readonly label: string } & (
  | { readonly library: 'raw' }
  | ({ readonly library: 'padlock'; readonly kind: PadlockKind } & Placed)
  | ({ readonly library: 'redlock'; readonly settings: RedlockTuning } & Placed)
  | ({ readonly library: 'sesame-redlock'; readonly settings: RedlockTuning } & Placed)
  | ({ readonly library: 'redis-semaphore'; readonly settings: SemaphoreTuning } & Placed)
  | ({ readonly library: 'redlock-universal'; readonly settings: UniversalTuning } & Placed)
);

export type Library = ContenderSpec['library'];

/** Where `spec`'s lock lives. */
export function topologyOf(spec: ContenderSpec): Topology {
  return 'topology' in spec && spec.topology !== undefined ? spec.topology : 'single';
}

/** The bench's servers, by URL. */
export interface Servers {
  /** The single server: single-server locks, and every run's workload counter. */
  readonly single: string;
  /** The independent masters of the Redlock set (empty when the bench runs no Redlock). */
  readonly masters: readonly string[];
}

/** The servers `spec`'s lock lives on. */
export function lockServers(spec: ContenderSpec, servers: Servers): readonly string[] {
  if (topologyOf(spec) === 'single') return [servers.single];
  if (servers.masters.length < 3) throw new Error(`${spec.label} needs a Redlock set of at least 3 masters, got ${servers.masters.length}`);
  return servers.masters;
}

/** A lock held by a worker. */
export interface Held {
  release(): Promise<void>;
}

/** A library's client in one process: its own connection, shared by that process's workers. */
export interface Contender {
  /**
   * One acquire call as the library makes it (its own retries and waits included).
   * Resolves `null` when the library gave up by its own limits (retry count, acquire timeout);
   * rejects on anything else. `maxWaitMs` bounds libraries that would otherwise wait forever.
   */
  acquire(key: string, maxWaitMs: number): Promise<Held | null>;
  /** Closes what `open` opened. */
  close(): Promise<void>;
}

/** Lease used by every library: long enough never to expire during a run. */
export const LEASE_MS = 30_000;

/** Compare-and-delete, the raw baseline's release. */
const RAW_RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

function connect(url: string): Redis {
  const client = new Redis(url, { lazyConnect: false, maxRetriesPerRequest: 3 });
  client.on('error', () => undefined);
  return client;
}

async function quit(client: Redis): Promise<void> {
  try {
    await client.quit();
  } catch {
    client.disconnect();
  }
}

/** A contender's connections: one to the single server, or one per Redlock master. */
interface Nodes {
  readonly topology: Topology;
  readonly clients: readonly Redis[];
  /** The one client of a single-server contender (the first master's on Redlock). */
  readonly first: Redis;
  close(): Promise<void>;
}

/** Opens `spec` where its lock lives (see {@link lockServers}), with fresh connections. */
export async function openContender(spec: ContenderSpec, servers: Servers): Promise<Contender> {
  const clients = lockServers(spec, servers).map(connect);
  const first = clients[0];
  if (first === undefined) throw new Error(`${spec.label}: no server to connect to`);
  const nodes: Nodes = { topology: topologyOf(spec), clients, first, close: async () => void (await Promise.all(clients.map(quit))) };
  await Promise.all(clients.map((c) => c.ping()));
  switch (spec.library) {
    case 'raw':
      return openRaw(nodes);
    case 'padlock':
      return openPadlock(nodes, spec.kind);
    case 'redlock':
      return openRedlock(nodes, spec.settings);
    case 'sesame-redlock':
      return openSesame(nodes, spec.settings);
    case 'redis-semaphore':
      return openSemaphore(nodes, spec.settings);
    case 'redlock-universal':
      return openUniversal(nodes, spec.settings);
  }
}

/** `SET key token NX PX lease`, released by EVALSHA of a compare-and-delete: two round trips, no waiting. */
async function openRaw(nodes: Nodes): Promise<Contender> {
  const client = nodes.first;
  const sha = String(await client.script('LOAD', RAW_RELEASE));
  return {
    async acquire(key) {
      const token = randomBytes(16).toString('hex');
      const ok = await client.set(key, token, 'PX', LEASE_MS, 'NX');
      if (ok !== 'OK') return null;
      return { release: async () => void (await client.evalsha(sha, 1, key, token)) };
    },
    close: () => nodes.close(),
  };
}

function openPadlock(nodes: Nodes, kind: PadlockKind): Contender {
  const padlock = new Padlock({ redis: nodes.topology === 'redlock' ? nodes.clients : nodes.first });
  const locks = new Map<string, Lockable>();
  return {
    async acquire(key, maxWaitMs) {
      let lock = locks.get(key);
      if (lock === undefined) {
        lock = PADLOCK_KINDS[kind](padlock, key);
        locks.set(key, lock);
      }
      try {
        const lease = await lock.acquire({ waitMs: maxWaitMs });
        return { release: () => lease.release() };
      } catch (error) {
        if (error instanceof LockTimeoutError) return null;
        throw error;
      }
    },
    async close() {
      await padlock.close();
      await nodes.close();
    },
  };
}

/** The part of redlock's API that its fork @sesamecare-oss/redlock shares. */
interface RedlockLike {
  on(event: 'error', listener: () => void): unknown;
  acquire(keys: string[], durationMs: number, settings?: { retryCount: number }): Promise<{ release(): Promise<unknown> }>;
}

/**
 * Retries that fit in `maxWaitMs` (at least one retry delay plus a millisecond each), when fewer than
 * `settings` allow: `retryCount: -1` would otherwise wait forever. Never reached in a healthy run (the
 * bound is the run's hard stop); it ends a Redlock split vote, which redlock does not undo between
 * retries (each retry keeps its partial holds), so that the worker is counted as stuck.
 */
function boundedRetries(settings: RedlockTuning, maxWaitMs: number): { retryCount: number } | undefined {
  const bound = Math.max(0, Math.floor(maxWaitMs / ((settings.retryDelay ?? REDLOCK_DEFAULT_RETRY_DELAY_MS) + 1)));
  const configured = settings.retryCount ?? REDLOCK_DEFAULT_RETRY_COUNT;
  return configured === -1 || configured > bound ? { retryCount: bound } : undefined;
}

/** redlock's (and its fork's) defaults: 10 retries, 200 ms apart. */
const REDLOCK_DEFAULT_RETRY_COUNT = 10;
const REDLOCK_DEFAULT_RETRY_DELAY_MS = 200;

/**
 * Either redlock, on one server or (its Redlock mode) on every master: a refused acquisition is its
 * ExecutionError (out of retries), anything else a failure.
 */
function openRedlockLike(nodes: Nodes, settings: RedlockTuning, redlock: RedlockLike, ExecutionError: abstract new (...args: never[]) => Error): Contender {
  redlock.on('error', () => undefined);
  return {
    async acquire(key, maxWaitMs) {
      try {
        const bounded = boundedRetries(settings, maxWaitMs);
        const lock = await (bounded === undefined ? redlock.acquire([key], LEASE_MS) : redlock.acquire([key], LEASE_MS, bounded));
        return { release: async () => void (await lock.release()) };
      } catch (error) {
        if (error instanceof ExecutionError) return null;
        throw error;
      }
    },
    close: () => nodes.close(),
  };
}

function openRedlock(nodes: Nodes, settings: RedlockTuning): Contender {
  return openRedlockLike(nodes, settings, new Redlock(nodes.clients, settings), RedlockExecutionError);
}

function openSesame(nodes: Nodes, settings: RedlockTuning): Contender {
  return openRedlockLike(nodes, settings, new SesameRedlock([...nodes.clients], settings), SesameExecutionError);
}

/** redis-semaphore's `Mutex` on one server, its `RedlockMutex` on every master. */
function openSemaphore(nodes: Nodes, settings: SemaphoreTuning): Contender {
  const options = { lockTimeout: LEASE_MS, ...settings };
  const mutexOf = (key: string): SemaphoreMutex | SemaphoreRedlockMutex =>
    nodes.topology === 'redlock' ? new SemaphoreRedlockMutex([...nodes.clients], key, options) : new SemaphoreMutex(nodes.first, key, options);
  return {
    async acquire(key) {
      const mutex = mutexOf(key);
      try {
        await mutex.acquire();
        return { release: () => mutex.release() };
      } catch (error) {
        if (error instanceof SemaphoreTimeoutError) return null;
        throw error;
      }
    },
    close: () => nodes.close(),
  };
}

/**
 * redlock-universal's `createLock` on one server, its `createRedlock` on every master (which has no
 * `performance` mode: the lineup sets none there).
 */
function openUniversal(nodes: Nodes, settings: UniversalTuning): Contender {
  const adapter = new IoredisAdapter(nodes.first);
  const adapters = [adapter, ...nodes.clients.slice(1).map((client) => new IoredisAdapter(client))];
  const lockOf = (key: string): UniversalLock =>
    nodes.topology === 'redlock' ? createRedlock({ adapters, key, ttl: LEASE_MS, ...settings }) : createLock({ adapter, key, ttl: LEASE_MS, ...settings });
  const locks = new Map<string, UniversalLock>();
  return {
    async acquire(key) {
      let lock = locks.get(key);
      if (lock === undefined) {
        lock = lockOf(key);
        locks.set(key, lock);
      }
      const owned = lock;
      try {
        const handle = await owned.acquire();
        return { release: async () => void (await owned.release(handle)) };
      } catch (error) {
        if (error instanceof LockAcquisitionError) return null;
        throw error;
      }
    },
    close: () => nodes.close(),
  };
}
