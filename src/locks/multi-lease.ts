/**
 * The one lease of a multi-lock: one mutex lease per name, all under one owner, held and let go as
 * one. Its `signal` aborts when any name is lost; `release()` and `extend()` act on every name.
 */
import { Lease } from '../lease.js';
import type { Hold } from '../hold.js';

/**
 * A held multi-lock. A `Lease` (its public surface is the same), over several names: see
 * {@link MultiLease.fence} and {@link MultiLease.fences} for what it fences.
 */
export class MultiLease extends Lease {
  readonly #name: string;
  readonly #parts: readonly Lease[];
  #signal: AbortSignal | undefined;
  #release: Promise<void> | undefined;

  /**
   * Multi-leases come from a multi-lock's `acquire`, `tryAcquire` and `withLock`: no code outside
   * padlock makes one. The published types show only this signature, which nothing can call.
   */
  constructor(internal: never, internalToo: never);
  /**
   * @internal padlock's own.
   * @param parts one lease per name, in the canonical order of the names (at least one)
   */
  constructor(name: string, parts: readonly [Lease, ...Lease[]]);
  constructor(name: string, parts: readonly [Lease, ...Lease[]]) {
    super(parts[0].hold, parts[0].holdCount);
    this.#name = name;
    this.#parts = parts;
  }

  /** @internal Every name's hold, in canonical order (each is bound to the async context in `withLock`). */
  get holds(): readonly Hold[] {
    return this.#parts.map((part) => part.hold);
  }

  /** The multi-lock's name: its names in canonical order, as JSON, e.g. `["a","b"]`. */
  override get name(): string {
    return this.#name;
  }

  /** The names held, in canonical order (sorted by UTF-16 code units, duplicates folded). */
  get names(): readonly string[] {
    return this.#parts.map((part) => part.name);
  }

  /**
   * Owner token of every name's hold: pass it to `acquire({ owner })` of the same multi-lock to
   * re-enter all its names. (Inside another lock's `withLock`, a name already held in that context
   * keeps that hold's owner: this is the owner of the first name in canonical order.)
   */
  override get owner(): string {
    return this.#parts[0]?.owner ?? super.owner;
  }

  /**
   * The largest of the names' fences. Each name's fence grows with every fresh acquisition of that
   * name, so this one grows with every fresh acquisition of the same set of names: a store guarding
   * the set as one resource may check it. A store guarding one of the names checks that name's
   * fence instead ({@link fences}).
   */
  override get fence(): number {
    return Math.max(...this.#parts.map((part) => part.fence));
  }

  /** Each name's fencing token (see `Lease.fence`), by name, in canonical order. */
  get fences(): ReadonlyMap<string, number> {
    return new Map(this.#parts.map((part) => [part.name, part.fence]));
  }

  /**
   * The fewest holds this owner had on any of the names right after this acquisition: 1 for a fresh
   * multi-lock (even when some names were re-entered from an enclosing lock), 2 or more when the
   * whole set was re-entered.
   */
  override get holdCount(): number {
    return Math.min(...this.#parts.map((part) => part.holdCount));
  }

  /** The earliest of the names' conservative lease ends (ms since the epoch). */
  override get expiresAt(): number {
    return Math.min(...this.#parts.map((part) => part.expiresAt));
  }

  /** True until this lease is released or any of its names is lost. */
  override get isHeld(): boolean {
    return this.#release === undefined && this.#parts.every((part) => part.isHeld);
  }

  /** Aborted with the `LockLostError` of the first name known lost; never aborted by a release. */
  override get signal(): AbortSignal {
    this.#signal ??= this.#parts.length === 1 ? (this.#parts[0]?.signal ?? super.signal) : AbortSignal.any(this.#parts.map((part) => part.signal));
    return this.#signal;
  }

  /** @internal As the signal says (made if it was not): the first name's loss among several is the signal's to tell. */
  override get loss(): { readonly error: unknown } | undefined {
    const { signal } = this;
    return signal.aborted ? { error: signal.reason } : undefined;
  }

  /**
   * Releases every name's hold (all at once); calling it again does nothing. Rejects with the first
   * name's `LockNotHeldError` when a name had already been lost, after releasing the others.
   */
  override release(): Promise<void> {
    this.#release ??= settleAll(this.#parts.map((part) => part.release()));
    return this.#release;
  }

  /**
   * Makes every name's lease last at least `ms` more milliseconds (never shortens one).
   * Rejects with `LockNotHeldError` when this lease was released or a name was lost.
   * @param ms defaults to the lease length the lock was acquired with
   */
  override extend(ms?: number): Promise<void> {
    return settleAll(this.#parts.map((part) => part.extend(ms)));
  }
}

/** Waits for every call; then rejects with the first rejection, if any. */
async function settleAll(calls: readonly Promise<void>[]): Promise<void> {
  const results = await Promise.allSettled(calls);
  const failed = results.find((result) => result.status === 'rejected');
  if (failed !== undefined) throw failed.reason;
}
