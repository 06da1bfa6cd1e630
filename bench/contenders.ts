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
import { Mutex as SemaphoreMutex, RedlockMutex as SemaphoreRedlockMutex, TimeoutError as SemaphoreTimeoutError, type LockOptions } from 'redis-semaphore';
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

/** A lease held and renewed by the library itself (its watchdog, `using()`, refresh timer). */
export interface HeldLease extends Held {
  /** Whether the library still counts it held (false once it saw a renewal fail). */
  readonly held: boolean;
}

/** A library's client in one process: its own connection, shared by that process's workers. */
export interface Contender {
  /**
   * One acquire call as the library makes it (its own retries and waits included).
   * Resolves `null` when the library gave up by its own limits (retry count, acquire timeout);
   * rejects on anything else. `maxWaitMs` bounds libraries that would otherwise wait forever.
   */
  acquire(key: string, maxWaitMs: number): Promise<Held | null>;
  /**
   * Acquires `key` (uncontended) with a lease of `leaseMs` that the library renews by itself until
   * released, every `renewEveryMs` where the library lets the caller choose (see
   * {@link renewalCadence}). Absent for the raw baseline, which cannot renew.
   */
  readonly hold?: (key: string, leaseMs: number, renewEveryMs: number) => Promise<HeldLease>;
  /**
   * Lease renewals the library reported so far (padlock's `extended` events); absent when the
   * library reports none, where each renewal is one script call (the bench counts those instead).
   */
  readonly renewals?: () => number;
  /** Closes what `open` opened. */
  close(): Promise<void>;
}

/** One uncontended acquire + release of `key` by `contender`; an acquire that gives up is an error here. */
export async function acquireRelease(contender: Contender, key: string): Promise<void> {
  const held = await contender.acquire(key, 1_000);
  if (held === null) throw new Error(`uncontended acquire of ${key} failed`);
  await held.release();
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
  let renewals = 0;
  padlock.on('extended', () => void renewals++);
  const locks = new Map<string, Lockable>();
  const lockOf = (key: string): Lockable => {
    let lock = locks.get(key);
    if (lock === undefined) {
      lock = PADLOCK_KINDS[kind](padlock, key);
      locks.set(key, lock);
    }
    return lock;
  };
  return {
    // The lock object is not kept: what the lease needs of it, the lease holds.
    async hold(key, leaseMs) {
      const lease = await PADLOCK_KINDS[kind](padlock, key).acquire({ leaseMs, autoExtend: true });
      return {
        release: () => lease.release(),
        get held() {
          return lease.isHeld;
        },
      };
    },
    renewals: () => renewals,
    async acquire(key, maxWaitMs) {
      const lock = lockOf(key);
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
  using<T>(keys: string[], durationMs: number, settings: { automaticExtensionThreshold: number }, routine: (signal: AbortSignal) => Promise<T>): Promise<T>;
}

/**
 * A lease held by a library's scoped, self-renewing call (`using(routine)`): the routine runs until
 * released; `held` turns false when the library aborts its signal (a renewal failed).
 */
function heldByUsing(using: (routine: (signal: AbortSignal) => Promise<void>) => Promise<unknown>): Promise<HeldLease> {
  return new Promise((resolve, reject) => {
    let release = (): void => undefined;
    const released = new Promise<void>((done) => (release = done));
    const scope = using(async (signal) => {
      resolve({
        async release() {
          release();
          await scope.catch(() => undefined);
        },
        get held() {
          return !signal.aborted;
        },
      });
      await released;
    });
    // Before the routine ran: the acquisition failed. After: the outcome of a lost lease, seen in `held`.
    scope.catch(reject);
  });
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
    // `using()` extends when `automaticExtensionThreshold` ms of the lease remain.
    hold: (key, leaseMs, renewEveryMs) =>
      heldByUsing((routine) => redlock.using([key], leaseMs, { automaticExtensionThreshold: leaseMs - renewEveryMs }, routine)),
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
  const mutexOf = (key: string, options: LockOptions = { lockTimeout: LEASE_MS, ...settings }): SemaphoreMutex | SemaphoreRedlockMutex =>
    nodes.topology === 'redlock' ? new SemaphoreRedlockMutex([...nodes.clients], key, options) : new SemaphoreMutex(nodes.first, key, options);
  return {
    // Its refresh timer renews every `refreshInterval` ms; a failed renewal calls `onLockLost`.
    async hold(key, leaseMs, renewEveryMs) {
      let lost = false;
      const mutex = mutexOf(key, { ...settings, lockTimeout: leaseMs, refreshInterval: renewEveryMs, onLockLost: () => void (lost = true) });
      await mutex.acquire();
      return {
        release: () => mutex.release(),
        get held() {
          return !lost && mutex.isAcquired;
        },
      };
    },
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
    // `using()` extends when a fifth of the lease remains: the cadence is not the caller's to choose.
    hold: (key, leaseMs) => {
      const lock = nodes.topology === 'redlock' ? createRedlock({ adapters, key, ttl: leaseMs, ...settings }) : createLock({ adapter, key, ttl: leaseMs, ...settings });
      return heldByUsing((routine) => lock.using(routine));
    },
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

/**
 * How often `spec`'s library renews a lease of `leaseMs` held through {@link Contender.hold} when
 * asked for every `renewEveryMs`, and how that is set: padlock's watchdog renews at a third of the
 * lease (bringing forward what falls due within half a period, so that one call serves many);
 * redlock's `using()` and redis-semaphore's `refreshInterval` take the caller's period;
 * redlock-universal's `using()` renews when a fifth of the lease remains.
 */
export function renewalCadence(spec: ContenderSpec, leaseMs: number, renewEveryMs: number): { readonly everyMs: number; readonly how: string } {
  switch (spec.library) {
    case 'raw':
      return { everyMs: Number.NaN, how: 'never (no renewal)' };
    case 'padlock':
      return { everyMs: leaseMs / 3, how: 'lease/3 (its watchdog)' };
    case 'redlock':
    case 'sesame-redlock':
      return { everyMs: renewEveryMs, how: `automaticExtensionThreshold ${leaseMs - renewEveryMs}` };
    case 'redis-semaphore':
      return { everyMs: renewEveryMs, how: `refreshInterval ${renewEveryMs}` };
    case 'redlock-universal':
      return { everyMs: leaseMs * 0.8, how: '0.8 × lease (fixed)' };
  }
}
