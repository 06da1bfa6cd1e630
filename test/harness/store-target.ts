/**
 * A store under test, for the store-neutral behaviour suite (test/stores.test.ts): each store
 * (Redis on one server, ZooKeeper, etcd, PostgreSQL) is one {@link StoreTarget}, and the suite's tests run once
 * per store through the public API only. What is particular to one store (its layout, its faults)
 * is tested in that store's own files.
 */
import type { Padlock, PadlockOptions } from '../../src/index.js';

/** Padlock options other than the store (which the target supplies). */
export type StoreFreeOptions = Omit<PadlockOptions, 'redis' | 'zookeeper' | 'etcd' | 'postgres'>;

/** One line of the suite's store list. */
export interface StoreTarget {
  /** Names the store in test titles, e.g. `'ZooKeeper (standalone)'`. */
  readonly name: string;
  /** Starts the store's servers on free loopback ports. */
  start(): Promise<StartedStore>;
  /** Lock kinds this store's Padlock refuses at creation (each gets a test of the refusal instead). */
  readonly refuses?: readonly ('mutex' | 'fairMutex' | 'readWrite' | 'semaphore' | 'multi')[];
}

/** A running store. */
export interface StartedStore {
  /**
   * A new Padlock on this store with a client of its own (made here); `close()` of the Padlock is the
   * test's, the client is closed by {@link stop}.
   */
  padlock(options?: StoreFreeOptions): Promise<Padlock>;
  /**
   * What padlock has left in the store under `prefix` (keys or znodes, by name): empty once every
   * lock is released and every Padlock closed.
   */
  leftovers(prefix: string): Promise<string[]>;
  /** Closes every client made and stops every server (also done after the file, whatever happened). */
  stop(): Promise<void>;
}
