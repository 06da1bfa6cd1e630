/**
 * The registry of a Padlock's holds, the async context that makes nested acquisitions re-enter,
 * and `close()`. Nothing else: locks run their calls through their store, the watchdog renews.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { monotonicNow, settleWithin } from './clock.js';
import { LockLostError, PadlockClosedError, type LockLostReason } from './errors.js';
import { holdEvent, type Emit, type PadlockEvents } from './events.js';
import type { Hold } from './hold.js';
import { Interrupt, type Abortable } from './interrupt.js';
import type { Observer } from './observability/observer.js';
import type { Store } from './store.js';
import type { Watchdog } from './watchdog.js';

/** close() waits at most this long for the store (releases, queue leaves). */
const CLOSE_TIMEOUT_MS = 5_000;

export class Runtime {
  readonly #holds = new Map<string, Hold>();
  readonly #context = new AsyncLocalStorage<ReadonlyMap<string, Hold>>();
  /** Every pending acquire listens for close() (an Interrupt: one listener per acquisition, interrupt.ts). */
  readonly #closing = new Interrupt();
  /** Aborted once close() has drained and starts releasing: re-entries of held locks stop then too. */
  readonly #releasing = new Interrupt();
  /** The `withLock` functions running now (settled views of them): close() lets them finish within its drain. */
  readonly #scoped = new Set<Promise<void>>();
  /** Clean-up calls sent on a caller's behalf after it stopped waiting (leaving a queue): close() waits for them. */
  readonly #cleanups = new Set<Promise<unknown>>();
  /** Holds being checked after a hint that they were freed by force ({@link suspect}). */
  readonly #checking = new WeakSet<Hold>();
  #closed: Promise<void> | undefined;

  constructor(
    private readonly watchdog: Watchdog,
    private readonly emit: Emit,
    /** Whether an event has a listener (its payload is made only then). */
    private readonly listens: (event: keyof PadlockEvents) => boolean,
    /** The metrics while they record (undefined otherwise). */
    private readonly observing: () => Observer | undefined,
    private readonly store: Store,
  ) {}

  /** Aborted when `close()` starts. */
  get closing(): Abortable {
    return this.#closing;
  }

  /** Aborted when `close()` has let running `withLock` functions finish and starts releasing. */
  get releasing(): Abortable {
    return this.#releasing;
  }

  /** Throws `PadlockClosedError` if closed (or closing). */
  assertOpen(name?: string): void {
    if (this.#closing.aborted) throw new PadlockClosedError(name);
  }

  /**
   * Throws `PadlockClosedError` once close() releases: a re-entry of a lock held here is still
   * served while close() drains, since the function that makes it is being let finish.
   */
  assertHolding(name?: string): void {
    if (this.#releasing.aborted) throw new PadlockClosedError(name);
  }

  /** Holds known to this Padlock (for tests and tooling). */
  get holds(): ReadonlyMap<string, Hold> {
    return this.#holds;
  }

  /** The hold of lock key `lock` that the current async context runs under, if any and still alive. */
  contextHold(lock: string): Hold | undefined {
    const hold = this.#context.getStore()?.get(lock);
    return hold?.alive === true ? hold : undefined;
  }

  /** This process's hold of lock key `lock` by `owner`, if any and still alive. */
  findHold(lock: string, owner: string): Hold | undefined {
    const hold = this.#holds.get(holdKey(lock, owner));
    return hold?.alive === true ? hold : undefined;
  }

  /**
   * Runs a `withLock` call (its function and its release) with `holds` bound to the async context,
   * so nested acquisitions re-enter them, and keeps it in view until it settles: close() lets it
   * finish (within its drain) before it releases what is left.
   */
  runScoped<T>(holds: readonly Hold[], fn: () => T | Promise<T>): Promise<T> {
    const store = new Map(this.#context.getStore());
    for (const hold of holds) store.set(hold.keys.lock, hold);
    let body: Promise<T>;
    try {
      body = Promise.resolve(this.#context.run(store, fn));
    } catch (error) {
      body = Promise.reject(error);
    }
    const settled = body.then(ignore, ignore);
    this.#scoped.add(settled);
    void settled.then(() => this.#scoped.delete(settled));
    return body;
  }

  /** Starts tracking a new hold (and renewing it). */
  register(hold: Hold): void {
    hold.registryKey = holdKey(hold.keys.lock, hold.owner);
    this.#holds.set(hold.registryKey, hold);
    this.watchdog.add(hold);
    this.store.holding();
  }

  #forget(hold: Hold, state: 'released' | 'lost', reason?: LockLostReason): boolean {
    if (hold.state !== 'held') return false;
    hold.state = state;
    this.observing()?.holdEnded(hold.lock, monotonicNow() - hold.grantedAt, reason);
    const key = hold.registryKey ?? holdKey(hold.keys.lock, hold.owner);
    if (this.#holds.get(key) === hold) this.#holds.delete(key);
    this.watchdog.remove(hold);
    return true;
  }

  /** Declares a hold lost: aborts its signal, emits `lost`. Idempotent. */
  lost(hold: Hold, reason: LockLostReason, cause?: unknown): void {
    if (!this.#forget(hold, 'lost', reason)) return;
    const error = new LockLostError(hold.name, hold.owner, hold.fence, reason, { cause, record: this.store.lockRecord });
    hold.abortSignal(error);
    this.emit('lost', error);
  }

  /**
   * Checks in the store, at once, every hold of lock `name` this Padlock has (a hint that an operator
   * freed it by force); a hold the store no longer has is told lost (`taken`), one it still has is
   * left as it was. A check already on its way for a hold serves a second hint too. Never rejects.
   */
  suspect(name: string): void {
    for (const hold of this.#holds.values()) {
      if (hold.name !== name || hold.state !== 'held' || hold.releasing || this.#checking.has(hold)) continue;
      this.#checking.add(hold);
      void hold.lock.check([hold]).then(
        ([remaining]) => {
          this.#checking.delete(hold);
          // A release of its own begun meanwhile may be what the check saw: its answer decides.
          if (remaining !== undefined && remaining <= 0 && !hold.releasing) this.lost(hold, 'taken');
        },
        // Unanswered: the hold stands as it did; its next renewal asks again.
        () => this.#checking.delete(hold),
      );
    }
  }

  /** Marks a hold released (its owner holds nothing more here). Idempotent. */
  released(hold: Hold): void {
    if (this.#forget(hold, 'released') && this.listens('released')) this.emit('released', holdEvent(hold));
  }

  /**
   * Lets a clean-up call run on after its caller has moved on (the caller is not kept waiting);
   * close() waits for it, within its bound. Its failure is nobody's to handle (a clean-up is best
   * effort): it is dropped here, never left as an unhandled rejection.
   */
  track(cleanup: Promise<unknown>): void {
    const settled = cleanup.then(
      () => undefined,
      () => undefined,
    );
    this.#cleanups.add(settled);
    void settled.finally(() => this.#cleanups.delete(settled));
  }

  /**
   * Refuses new acquisitions and rejects waits; lets running `withLock` functions finish for up to
   * `drainMs` (their holds renew meanwhile); then tells every hold left (its signal aborts with
   * `PadlockClosedError`) before it stops renewal and releases them, finishes clean-ups and deletes
   * what the store must finish (Redis: its liveness key; best effort, bounded), and closes what the
   * store opened.
   */
  close(drainMs: number): Promise<void> {
    this.#closed ??= this.#close(drainMs);
    return this.#closed;
  }

  async #close(drainMs: number): Promise<void> {
    this.#closing.abort(new PadlockClosedError());
    await this.#drain(drainMs);
    this.#releasing.abort(new PadlockClosedError());
    this.watchdog.stop();
    const holds = [...this.#holds.values()];
    // Told before released: a function still running sees its signal abort before anyone else can
    // take its lock, and its withLock rejects with this error once it settles.
    for (const hold of holds) hold.abortSignal(new PadlockClosedError(hold.name));
    const releases = Promise.allSettled(
      holds.map(async (hold) => {
        try {
          await hold.lock.releaseInStore(hold, hold.count);
        } finally {
          this.released(hold);
        }
      }),
    );
    // Waits that close() just rejected send their clean-up as their rejection unwinds (microtasks,
    // all run before the next macrotask turn).
    await new Promise((resolve) => setImmediate(resolve));
    // The store retires beside them (Redis deletes the liveness key: a hold whose release fails is
    // this closed Padlock's no more, and may be reaped rather than wait for its lease).
    await settleWithin(Promise.allSettled([releases, ...this.#cleanups, this.store.retire(CLOSE_TIMEOUT_MS)]), CLOSE_TIMEOUT_MS);
    for (const hold of holds) this.released(hold);
    await this.store.close();
  }

  /** Waits until no `withLock` function runs (nested ones may start meanwhile), or `drainMs` has passed. */
  async #drain(drainMs: number): Promise<void> {
    const deadline = monotonicNow() + drainMs;
    while (this.#scoped.size > 0) {
      const left = deadline - monotonicNow();
      if (left <= 0) return;
      await settleWithin(Promise.all(this.#scoped), left);
    }
  }
}

function ignore(): void {}

/** A hold's key in the registry: one per lock and owner. */
function holdKey(lock: string, owner: string): string {
  return `${lock}\n${owner}`;
}
