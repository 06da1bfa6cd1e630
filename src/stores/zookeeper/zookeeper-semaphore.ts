/**
 * The semaphore on ZooKeeper: one znode, a `permit` child per acquisition naming the permits it
 * takes. A child holds when the permits of every child up to it fit in the limit (FIFO: a large
 * request is not overtaken). The first waiter watches every holder and the stored limit; each later
 * waiter watches its predecessor, which writes its own data once it holds (a cascade, not a herd).
 *
 * The limit: `setPermits(n)` stores it in the lock's znode's data, where every waiter reads it; that
 * znode exists while anyone holds or waits, and goes with the last one out, stored limit and all. So
 * a stored limit governs the semaphore while it is in use; on a semaphore nobody uses there is
 * nothing to store it in, and `setPermits` stores nothing (each acquirer's own `permits` applies,
 * until a limit is stored again). Unlike Redis, the `PADLOCK_SEMAPHORE_LIMIT` warning is not given.
 */
import type { Lease } from '../../lease.js';
import { checkName, type AcquireOptions } from '../../options.js';
import { checkPermits, type SemaphoreAcquireOptions, type SemaphoreLock } from '../../locks/semaphore-lock.js';
import type { Shared } from '../../shared.js';
import { ZooKeeperKind } from './zookeeper-kind.js';
import type { ZooKeeperStore } from './zookeeper-store.js';

/** One acquisition size of a semaphore: a lock whose holds are `permit` children of `permits` permits each. */
export class ZooKeeperPermits extends ZooKeeperKind {
  constructor(shared: Shared, store: ZooKeeperStore, name: string, permits: number, limit: number) {
    super(shared, store, name, 'semaphore', 'semaphore', 'permit', ['permit'], permits, limit);
  }
}

export class ZooKeeperSemaphore implements SemaphoreLock {
  readonly name: string;
  readonly permits: number;
  readonly #shared: Shared;
  readonly #store: ZooKeeperStore;

  constructor(shared: Shared, store: ZooKeeperStore, name: string, permits: unknown) {
    this.name = checkName(name);
    this.permits = checkPermits('permits', permits);
    this.#shared = shared;
    this.#store = store;
  }

  acquire(options?: SemaphoreAcquireOptions): Promise<Lease> {
    const [lock, rest] = this.#split(options);
    return lock.acquire(rest);
  }

  tryAcquire(options?: SemaphoreAcquireOptions): Promise<Lease | null> {
    const [lock, rest] = this.#split(options);
    return lock.tryAcquire(rest);
  }

  withLock<T>(fn: (lease: Lease) => T | Promise<T>, options?: SemaphoreAcquireOptions): Promise<T> {
    const [lock, rest] = this.#split(options);
    return lock.withLock(fn, rest);
  }

  async limit(): Promise<number> {
    this.#shared.runtime.assertOpen(this.name);
    const recipe = this.#permits(1).recipe;
    return (await this.#store.call(this.name, () => recipe.storedLimit())) ?? this.permits;
  }

  isLocked(): Promise<boolean> {
    return this.#permits(1).isLocked();
  }

  forceRelease(): Promise<boolean> {
    return this.#permits(1).forceRelease();
  }

  async available(): Promise<number> {
    this.#shared.runtime.assertOpen(this.name);
    const recipe = this.#permits(1).recipe;
    const [state, stored] = await this.#store.call(this.name, () => Promise.all([recipe.inspect(), recipe.storedLimit()]));
    const used = state.holders.reduce((sum, p) => sum + p.permits, 0);
    return Math.max(0, (stored ?? this.permits) - used);
  }

  async setPermits(permits: number): Promise<void> {
    const limit = checkPermits('permits', permits);
    this.#shared.runtime.assertOpen(this.name);
    const recipe = this.#permits(1).recipe;
    await this.#store.call(this.name, () => recipe.storeLimit(limit));
  }

  /** The lock for the permits `options` ask, and the options the common lock reads (without `permits`). */
  #split(options: SemaphoreAcquireOptions | undefined): [ZooKeeperPermits, AcquireOptions | undefined] {
    if (typeof options !== 'object' || options === null || Array.isArray(options) || !('permits' in options)) return [this.#permits(1), options];
    const { permits, ...rest } = options;
    return [this.#permits(permits === undefined ? 1 : checkPermits('permits', permits)), rest];
  }

  #permits(n: number): ZooKeeperPermits {
    return new ZooKeeperPermits(this.#shared, this.#store, this.name, n, this.permits);
  }
}
