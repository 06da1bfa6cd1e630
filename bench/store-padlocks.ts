/**
 * A Padlock on each of padlock's three stores, opened from addresses a child process can be sent
 * (bench/stores.ts and its worker processes, bench/stores-child.ts), and the contended worker loop
 * they all run: acquire, simulated work, release.
 */
import { Etcd3 } from 'etcd3';
import { Redis } from 'ioredis';
import zookeeper from 'node-zookeeper-client';
import type { Client } from 'node-zookeeper-client';
import { Padlock } from '../src/index.js';
import { nowMs, type AcquisitionRecord } from './stats.js';

export const STORES = ['redis', 'zookeeper', 'etcd'] as const;
export type StoreName = (typeof STORES)[number];

/** Where each store's servers listen. */
export interface StoreAddresses {
  /** `redis://127.0.0.1:port` of the one redis-server. */
  readonly redis: string;
  /** The ensemble's connection string, `127.0.0.1:p1,…`. */
  readonly zookeeper: string;
  /** The cluster members, as `Etcd3`'s `hosts`. */
  readonly etcd: readonly string[];
}

/**
 * Short liveness, as the tests use (test/harness/zookeeper-store-target.ts's session time-out, the
 * fault tests' lease): the same `leaseMs` for every store, the ZooKeeper session a little shorter.
 */
export const LEASE_MS = 5_000;
export const SESSION_TIMEOUT_MS = 4_000;

/** A Padlock on one store with its own client, and how to close both. */
export interface StorePadlock {
  readonly padlock: Padlock;
  close(): Promise<void>;
}

/** Waits for a node-zookeeper-client client's first connection. */
export function zooKeeperConnected(client: Client): Promise<void> {
  if (client.getState().name === 'SYNC_CONNECTED') return Promise.resolve();
  return new Promise((resolve) => client.once('connected', () => resolve()));
}

/** A connected ZooKeeper client with the bench's short session. */
export async function openZooKeeper(connectString: string): Promise<Client> {
  const client = zookeeper.createClient(connectString, { sessionTimeout: SESSION_TIMEOUT_MS, spinDelay: 100 });
  client.connect();
  await zooKeeperConnected(client);
  return client;
}

/** A Padlock on `store` with a client of its own (connected before it returns). */
export async function openStorePadlock(store: StoreName, addresses: StoreAddresses): Promise<StorePadlock> {
  switch (store) {
    case 'redis': {
      const client = new Redis(addresses.redis);
      return closingWith(new Padlock({ redis: client, leaseMs: LEASE_MS }), () => client.quit().catch(() => client.disconnect()));
    }
    case 'zookeeper': {
      const client = await openZooKeeper(addresses.zookeeper);
      return closingWith(new Padlock({ zookeeper: client, leaseMs: LEASE_MS }), () => client.close());
    }
    case 'etcd': {
      const client = new Etcd3({ hosts: [...addresses.etcd], dialTimeout: 2_000 });
      return closingWith(new Padlock({ etcd: client, leaseMs: LEASE_MS }), () => client.close());
    }
  }
}

/** `padlock`, closed before its client (which `closeClient` closes). */
function closingWith(padlock: Padlock, closeClient: () => unknown): StorePadlock {
  return {
    padlock,
    async close() {
      await padlock.close();
      await closeClient();
    },
  };
}

/** One contended run, as every worker (in this process or another) is told it. */
export interface LoopPlan {
  /** The one lock every worker takes. */
  readonly name: string;
  /** When the workers start (nowMs: CLOCK_MONOTONIC, shared by the machine's processes). */
  readonly startAt: number;
  /** No acquire is begun after this; a worker waiting at it finishes its cycle. */
  readonly deadline: number;
  /** Simulated work inside the lock (a timer). */
  readonly workMs: number;
  /** Bound on one wait: a wait this long is a failure, not a number. */
  readonly waitMs: number;
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
}

/** What a contended loop needs of a lock: padlock's `Lockable`, or a peer's lock adapted to it. */
export interface LoopLock {
  acquire(options: { readonly waitMs: number }): Promise<{ release(): Promise<unknown> }>;
}

/** Worker `worker`'s cycles on `lock` from `plan.startAt` until `plan.deadline`. */
export async function lockLoop(lock: LoopLock, worker: number, plan: LoopPlan): Promise<AcquisitionRecord[]> {
  const records: AcquisitionRecord[] = [];
  await delay(plan.startAt - nowMs());
  while (nowMs() < plan.deadline) {
    const waitStart = nowMs();
    const lease = await lock.acquire({ waitMs: plan.waitMs });
    const acquiredAt = nowMs();
    await delay(plan.workMs);
    const releaseStart = nowMs();
    await lease.release();
    records.push({ worker, lock: 0, waitStart, acquiredAt, releaseStart });
  }
  return records;
}
