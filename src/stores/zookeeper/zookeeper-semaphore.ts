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
import { checkPermits } from '../../locks/semaphore-lock.js';
import { SizedSemaphore } from '../../locks/sized-semaphore.js';
import type { Shared } from '../../shared.js';
import { ZooKeeperKind } from './zookeeper-kind.js';
import type { ZooKeeperStore } from './zookeeper-store.js';

/** One acquisition size of a semaphore: a lock whose holds are `permit` children of `permits` permits each. */
export class ZooKeeperPermits extends ZooKeeperKind {
  constructor(shared: Shared, store: ZooKeeperStore, name: string, permits: number, limit: number) {
    super(shared, store, name, 'semaphore', 'semaphore', 'permit', ['permit'], permits, limit);
  }
}

export class ZooKeeperSemaphore extends SizedSemaphore<ZooKeeperPermits> {
  readonly #shared: Shared;
  readonly #store: ZooKeeperStore;

  constructor(shared: Shared, store: ZooKeeperStore, name: string, permits: unknown) {
    super(name, permits);
    this.#shared = shared;
    this.#store = store;
  }

  /** Reads the stored limit alone (the holders need not be read). */
  override async limit(): Promise<number> {
    this.#shared.runtime.assertOpen(this.name);
    const recipe = this.sized(1).recipe;
    return (await this.#store.call(this.name, () => recipe.storedLimit())) ?? this.permits;
  }

  protected async state(): Promise<{ limit: number; used: number }> {
    this.#shared.runtime.assertOpen(this.name);
    const recipe = this.sized(1).recipe;
    const [state, stored] = await this.#store.call(this.name, () => Promise.all([recipe.inspect(), recipe.storedLimit()]));
    return { limit: stored ?? this.permits, used: state.holders.reduce((sum, p) => sum + p.permits, 0) };
  }

  async setPermits(permits: number): Promise<void> {
    const limit = checkPermits('permits', permits);
    this.#shared.runtime.assertOpen(this.name);
    const recipe = this.sized(1).recipe;
    await this.#store.call(this.name, () => recipe.storeLimit(limit));
  }

  protected sized(n: number): ZooKeeperPermits {
    return new ZooKeeperPermits(this.#shared, this.#store, this.name, n, this.permits);
  }
}
