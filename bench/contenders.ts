/**
 * One adapter per library, behind one interface: a process opens a {@link Contender} (its own
 * connection), and its workers call `acquire(key)` and `held.release()`. Specs are plain data so a
 * worker process can rebuild the same contender from a message.
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import Redlock, { ExecutionError as RedlockExecutionError } from 'redlock';
import { Redlock as SesameRedlock, ExecutionError as SesameExecutionError } from '@sesamecare-oss/redlock';
import { Mutex as SemaphoreMutex, TimeoutError as SemaphoreTimeoutError } from 'redis-semaphore';
import { IoredisAdapter, LockAcquisitionError, createLock, type Lock as UniversalLock } from 'redlock-universal';
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

/** What to open: plain data, sent as is to worker processes. */
export type ContenderSpec = { readonly label: string } & (
  | { readonly library: 'raw' }
  | { readonly library: 'padlock'; readonly kind: PadlockKind }
  | { readonly library: 'redlock'; readonly settings: RedlockTuning }
  | { readonly library: 'sesame-redlock'; readonly settings: RedlockTuning }
  | { readonly library: 'redis-semaphore'; readonly settings: SemaphoreTuning }
  | { readonly library: 'redlock-universal'; readonly settings: UniversalTuning }
);

export type Library = ContenderSpec['library'];

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

/** Opens `spec` on `url` with a fresh connection. */
export async function openContender(spec: ContenderSpec, url: string): Promise<Contender> {
  const client = connect(url);
  await client.ping();
  switch (spec.library) {
    case 'raw':
      return openRaw(client);
    case 'padlock':
      return openPadlock(client, spec.kind);
    case 'redlock':
      return openRedlock(client, spec.settings);
    case 'sesame-redlock':
      return openSesame(client, spec.settings);
    case 'redis-semaphore':
      return openSemaphore(client, spec.settings);
    case 'redlock-universal':
      return openUniversal(client, spec.settings);
  }
}

/** `SET key token NX PX lease`, released by EVALSHA of a compare-and-delete: two round trips, no waiting. */
async function openRaw(client: Redis): Promise<Contender> {
  const sha = String(await client.script('LOAD', RAW_RELEASE));
  return {
    async acquire(key) {
      const token = randomBytes(16).toString('hex');
      const ok = await client.set(key, token, 'PX', LEASE_MS, 'NX');
      if (ok !== 'OK') return null;
      return { release: async () => void (await client.evalsha(sha, 1, key, token)) };
    },
    close: () => quit(client),
  };
}

function openPadlock(client: Redis, kind: PadlockKind): Contender {
  const padlock = new Padlock({ redis: client });
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
      await quit(client);
    },
  };
}

/** The part of redlock's API that its fork @sesamecare-oss/redlock shares. */
interface RedlockLike {
  on(event: 'error', listener: () => void): unknown;
  acquire(keys: string[], durationMs: number): Promise<{ release(): Promise<unknown> }>;
}

/** Either redlock: a refused acquisition is its ExecutionError (out of retries), anything else a failure. */
function openRedlockLike(client: Redis, redlock: RedlockLike, ExecutionError: abstract new (...args: never[]) => Error): Contender {
  redlock.on('error', () => undefined);
  return {
    async acquire(key) {
      try {
        const lock = await redlock.acquire([key], LEASE_MS);
        return { release: async () => void (await lock.release()) };
      } catch (error) {
        if (error instanceof ExecutionError) return null;
        throw error;
      }
    },
    close: () => quit(client),
  };
}

function openRedlock(client: Redis, settings: RedlockTuning): Contender {
  return openRedlockLike(client, new Redlock([client], settings), RedlockExecutionError);
}

function openSesame(client: Redis, settings: RedlockTuning): Contender {
  return openRedlockLike(client, new SesameRedlock([client], settings), SesameExecutionError);
}

function openSemaphore(client: Redis, settings: SemaphoreTuning): Contender {
  return {
    async acquire(key) {
      const mutex = new SemaphoreMutex(client, key, { lockTimeout: LEASE_MS, ...settings });
      try {
        await mutex.acquire();
        return { release: () => mutex.release() };
      } catch (error) {
        if (error instanceof SemaphoreTimeoutError) return null;
        throw error;
      }
    },
    close: () => quit(client),
  };
}

function openUniversal(client: Redis, settings: UniversalTuning): Contender {
  const adapter = new IoredisAdapter(client);
  const locks = new Map<string, UniversalLock>();
  return {
    async acquire(key) {
      let lock = locks.get(key);
      if (lock === undefined) {
        lock = createLock({ adapter, key, ttl: LEASE_MS, ...settings });
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
    close: () => quit(client),
  };
}
