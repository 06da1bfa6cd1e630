/**
 * The semaphore: `permits` permits shared by all processes; an acquisition takes n of them (default
 * 1) as one lease, with its own fence, renewed by the watchdog and expiring on the server's clock
 * if its holder dies. Waiters queue in Redis in FIFO order: a large request at the head is not
 * overtaken by smaller ones behind it. See docs/protocol.md, "Semaphore", for the keys and scripts.
 */
import type { Lease } from '../../../lease.js';
import { checkName, type AcquireOptions } from '../../../options.js';
import type { Shared } from '../../../shared.js';
import type { RedisContext } from '../redis-store.js';
import { checkPermits, splitPermits, type SemaphoreAcquireOptions, type SemaphoreLock } from '../../../locks/semaphore-lock.js';
import type { SemaphoreInspectReply } from '../scripts/index.js';
import { firstUse, limitDisagreement, rememberStored, storedBy, warnLimitDisagreement } from './semaphore-limits.js';
import { semaphoreKeys, SemaphoreProtocol } from './semaphore-protocol.js';
import { SemaphorePermits } from './semaphore-permits.js';

export class Semaphore implements SemaphoreLock {
  readonly name: string;
  readonly permits: number;
  readonly #shared: Shared;
  readonly #redis: RedisContext;
  readonly #protocol: SemaphoreProtocol;

  constructor(shared: Shared, redis: RedisContext, name: string, permits: unknown) {
    this.name = checkName(name);
    this.permits = checkPermits('permits', permits);
    this.#shared = shared;
    this.#redis = redis;
    this.#protocol = new SemaphoreProtocol(semaphoreKeys(shared.prefix, this.name), this.permits, redis.clientId, redis.topology.shardedPubSub);
  }

  // The limit is checked once the call has been answered: a call refused for its options sends nothing.
  async acquire(options?: SemaphoreAcquireOptions): Promise<Lease> {
    const [lock, rest] = this.#split(options);
    const lease = await lock.acquire(rest);
    this.#checkOnFirstUse();
    return lease;
  }

  async tryAcquire(options?: SemaphoreAcquireOptions): Promise<Lease | null> {
    const [lock, rest] = this.#split(options);
    const lease = await lock.tryAcquire(rest);
    this.#checkOnFirstUse();
    return lease;
  }

  async withLock<T>(fn: (lease: Lease) => T | Promise<T>, options?: SemaphoreAcquireOptions): Promise<T> {
    const [lock, rest] = this.#split(options);
    return lock.withLock((lease) => {
      this.#checkOnFirstUse();
      return fn(lease);
    }, rest);
  }

  async limit(): Promise<number> {
    return (await this.#state()).limit;
  }

  isLocked(): Promise<boolean> {
    return this.#permits(1).isLocked();
  }

  forceRelease(): Promise<boolean> {
    return this.#permits(1).forceRelease();
  }

  async available(): Promise<number> {
    const state = await this.#state();
    return Math.max(0, state.limit - state.used);
  }

  /** The semaphore's state, and the warning if its limit is disputed. */
  async #state(): Promise<SemaphoreInspectReply> {
    this.#shared.runtime.assertOpen(this.name);
    const state = await this.#redis.topology.run(this.#protocol.inspect());
    this.#warnIfDisputed(state);
    return state;
  }

  #warnIfDisputed(state: SemaphoreInspectReply): void {
    const message = limitDisagreement(this.name, this.permits, state, storedBy(this.#shared, this.name));
    if (message !== undefined) warnLimitDisagreement(this.#shared.prefix, this.name, message);
  }

  /** The first time this Padlock uses the semaphore: its limit checked beside the call, never in its way. */
  #checkOnFirstUse(): void {
    if (!firstUse(this.#shared, this.name)) return;
    // Nothing to report if it fails: the call itself meets the same Redis and says so.
    this.#redis.topology.run(this.#protocol.inspect()).then(
      (state) => this.#warnIfDisputed(state),
      () => undefined,
    );
  }

  async setPermits(permits: number): Promise<void> {
    const limit = checkPermits('permits', permits);
    this.#shared.runtime.assertOpen(this.name);
    await this.#redis.topology.run(this.#protocol.setPermits(limit));
    rememberStored(this.#shared, this.name, limit);
  }

  /** The lock for the permits `options` ask, and the options the common lock reads (without `permits`). */
  #split(options: SemaphoreAcquireOptions | undefined): [SemaphorePermits, AcquireOptions | undefined] {
    const [n, rest] = splitPermits(options);
    return [this.#permits(n), rest];
  }

  #permits(n: number): SemaphorePermits {
    return new SemaphorePermits(this.#shared, this.#redis, this.name, this.#protocol, n);
  }
}
