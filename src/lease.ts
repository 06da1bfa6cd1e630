/**
 * The handle a caller holds for one acquisition. Nested acquisitions by the same owner get leases
 * of their own that share one hold: each lease releases exactly one hold count, once.
 */
import type { Hold } from './hold.js';

/**
 * A held lock. Release it with `release()` or `await using`; it renews itself while held unless
 * it was acquired with a fixed `leaseMs`.
 */
export class Lease implements AsyncDisposable {
  readonly #hold: Hold;
  readonly #holdCount: number;
  #release: Promise<void> | undefined;

  /**
   * Leases come from `acquire`, `tryAcquire` and `withLock`: no code outside padlock makes one. The
   * published types show only this signature, which nothing can call, so that `new Lease()` does
   * not type-check and padlock's internal types stay out of them.
   */
  constructor(internal: never, internalToo: never);
  /** @internal padlock's own: a lease of one hold. */
  constructor(hold: Hold, holdCount: number);
  constructor(hold: Hold, holdCount: number) {
    this.#hold = hold;
    this.#holdCount = holdCount;
  }

  /** @internal The shared hold (used to bind the lease to an async context). */
  get hold(): Hold {
    return this.#hold;
  }

  /** The lock's name. */
  get name(): string {
    return this.#hold.name;
  }

  /** Owner token of the hold: pass it to `acquire({ owner })` to re-enter, e.g. across an RPC hop. */
  get owner(): string {
    return this.#hold.owner;
  }

  /**
   * Fencing token: strictly greater than that of every earlier fresh acquisition of this lock, and
   * the same for re-entries. Send it with every write to the protected store, which should refuse
   * any write (and read) carrying a lower fence than the highest it has seen. A read/write lock's
   * read hold is the exception: it gets the fence of the last write before it, shared by the readers
   * (docs/protocol.md, "Read/write lock").
   */
  get fence(): number {
    return this.#hold.fence;
  }

  /** How many holds this owner had on the lock right after this acquisition (1 unless re-entered). */
  get holdCount(): number {
    return this.#holdCount;
  }

  /** Conservative wall-clock time (ms since the epoch) at which the lease ends unless renewed. */
  get expiresAt(): number {
    return this.#hold.expiresAt;
  }

  /** True until this lease is released or the lock is lost (checked against the local deadline on every read). */
  get isHeld(): boolean {
    return this.#release === undefined && this.#hold.alive;
  }

  /**
   * Aborted with a `LockLostError` the moment the lock is known lost, or with `PadlockClosedError`
   * just before `close()` (or `releaseOnExit`) releases a hold whose code may still run; never
   * aborted by the lease's own release.
   */
  get signal(): AbortSignal {
    return this.#hold.signal;
  }

  /**
   * @internal What {@link signal} is aborted with, if it is: read without making the signal (an
   * AbortController), which `withLock` would otherwise make for every call.
   */
  get loss(): { readonly error: unknown } | undefined {
    return this.#hold.loss;
  }

  /**
   * Releases this lease's hold. The lock is freed when the last hold of its owner is released.
   * Calling it again does nothing. Rejects with `LockNotHeldError` when the lock had already been
   * lost (expired or taken over); the lock is then left as it is.
   */
  release(): Promise<void> {
    this.#release ??= this.#hold.lock.release(this.#hold, 1);
    return this.#release;
  }

  /**
   * Makes the lease last at least `ms` more milliseconds (never shortens it).
   * Rejects with `LockNotHeldError` when this lease was released or the lock was lost.
   * @param ms defaults to the lease length the lock was acquired with
   */
  extend(ms?: number): Promise<void> {
    return this.#hold.lock.extend(this.#hold, ms ?? this.#hold.leaseMs, this.#release !== undefined);
  }

  /** Alias of `release()`, for `await using lease = await lock.acquire()`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.release();
  }
}
