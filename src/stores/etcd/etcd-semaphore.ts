/**
 * The semaphore on etcd: one `permit` key per participant, naming the permits it takes; by create
 * revision, a participant holds when the permits of every key up to and including its own fit the
 * limit (FIFO: a large request is not overtaken by small ones). The first waiter watches every
 * holder and the stored limit; each later waiter watches the one before it, which rewrites its key
 * when it starts holding (a cascade, not a herd).
 *
 * The stored limit (`setPermits`) is the key `<prefix>/limit/<escaped name>`, attached to a lease
 * of its own of one hour, granted by each `setPermits` (which revokes the one before): it replaces
 * the creation value for one hour after the last `setPermits`, then expires by itself. It is read in
 * the same transaction as the queue, on every take and wake-up.
 */
import { checkPermits } from '../../locks/semaphore-lock.js';
import { SizedSemaphore } from '../../locks/sized-semaphore.js';
import type { Shared } from '../../shared.js';
import type { LockKindName } from '../../store.js';
import { EtcdKind } from './etcd-kind.js';
import type { EtcdStore } from './etcd-store.js';

/** How long a stored limit lasts after the last `setPermits`, in seconds. */
export const STORED_LIMIT_TTL_S = 3_600;

/** The key of semaphore `name`'s stored limit. */
function limitKey(root: string, name: string): string {
  return `${root}/limit/${encodeURIComponent(name)}`;
}

/** One acquisition size of a semaphore: its holds are leases of `permits` permits each. */
class EtcdPermits extends EtcdKind {
  readonly kind: LockKindName = 'semaphore';

  constructor(shared: Shared, etcd: EtcdStore, name: string, permits: number, limit: number) {
    super(shared, etcd, name, 'semaphore', 'permit', permits, limit, limitKey(shared.prefix, name));
  }

  /** The limit in force and the permits held. */
  async state(): Promise<{ limit: number; used: number }> {
    this.shared.runtime.assertOpen(this.name);
    const state = await this.inspect();
    return { limit: state.limit, used: state.holders.reduce((n, p) => n + p.permits, 0) };
  }
}

export class EtcdSemaphore extends SizedSemaphore<EtcdPermits> {
  readonly #shared: Shared;
  readonly #etcd: EtcdStore;

  constructor(shared: Shared, etcd: EtcdStore, name: string, permits: unknown) {
    super(name, permits);
    this.#shared = shared;
    this.#etcd = etcd;
  }

  protected state(): Promise<{ limit: number; used: number }> {
    return this.sized(1).state();
  }

  async setPermits(permits: number): Promise<void> {
    const limit = checkPermits('permits', permits);
    this.#shared.runtime.assertOpen(this.name);
    await this.#etcd.call(this.name, this.#etcd.ops.putWithOwnLease(limitKey(this.#shared.prefix, this.name), String(limit), STORED_LIMIT_TTL_S));
  }

  protected sized(n: number): EtcdPermits {
    return new EtcdPermits(this.#shared, this.#etcd, this.name, n, this.permits);
  }
}
