/**
 * The registry of a Padlock's holds, the async context that makes nested acquisitions re-enter,
 * and `close()`. Nothing else: locks run their calls through the topology, the watchdog renews,
 * the subscriber listens.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { monotonicNow, settleWithin } from './clock.js';
import { LockLostError, PadlockClosedError, type LockLostReason } from './errors.js';
import { holdEvent, type Emit } from './events.js';
import type { Hold } from './hold.js';
import { Interrupt, type Abortable } from './interrupt.js';
import type { Liveness } from './liveness.js';
import type { Observer } from './observability/observer.js';
import type { Subscriber } from './subscriber.js';
import type { Watchdog } from './watchdog.js';

/** close() waits at most this long for Redis (releases, queue leaves). */
const CLOSE_TIMEOUT_MS = 5_000;

export class Runtime {
  readonly #holds = new Map<string, Hold>();
  readonly #context = new AsyncLocalStorage<ReadonlyMap<string, Hold>>();
  /** Every pending acquire listens for close() (an Interrupt: one listener per acquisition, interrupt.ts). */
  readonly #closing = new Interrupt();
  /** Clean-up calls sent on a caller's behalf after it stopped waiting (leaving a queue): close() waits for them. */
  readonly #cleanups = new Set<Promise<unknown>>();
  #closed: Promise<void> | undefined;

  constructor(
    private readonly watchdog: Watchdog,
    private readonly subscriber: Subscriber,
    private readonly emit: Emit,
    private readonly observer: Observer | undefined,
    private readonly liveness: Liveness,
  ) {}

  /** Aborted when `close()` starts. */
  get closing(): Abortable {
    return this.#closing;
  }

  /** Throws `PadlockClosedError` if closed. */
  assertOpen(name?: string): void {
    if (this.#closing.aborted) throw new PadlockClosedError(name);
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

  /** Runs `fn` with `hold` bound to the async context, so nested acquisitions re-enter it. */
  runInContext<T>(hold: Hold, fn: () => T): T {
    const store = new Map(this.#context.getStore());
    store.set(hold.keys.lock, hold);
    return this.#context.run(store, fn);
  }

  /** Starts tracking a new hold (and renewing it). */
  register(hold: Hold): void {
    this.#holds.set(holdKey(hold.keys.lock, hold.owner), hold);
    this.watchdog.add(hold);
    this.liveness.held();
  }

  #forget(hold: Hold, state: 'released' | 'lost', reason?: LockLostReason): boolean {
    if (hold.state !== 'held') return false;
    hold.state = state;
    this.observer?.holdEnded(hold.lock, monotonicNow() - hold.grantedAt, reason);
    const key = holdKey(hold.keys.lock, hold.owner);
    if (this.#holds.get(key) === hold) this.#holds.delete(key);
    this.watchdog.remove(hold);
    return true;
  }

  /** Declares a hold lost: aborts its signal, emits `lost`. Idempotent. */
  lost(hold: Hold, reason: LockLostReason, cause?: unknown): void {
    if (!this.#forget(hold, 'lost', reason)) return;
    const error = new LockLostError(hold.name, hold.owner, hold.fence, reason, cause === undefined ? undefined : { cause });
    hold.abortSignal(error);
    this.emit('lost', error);
  }

  /** Marks a hold released (its owner holds nothing more here). Idempotent. */
  released(hold: Hold): void {
    if (this.#forget(hold, 'released')) this.emit('released', holdEvent(hold));
  }

  /**
   * Lets a clean-up call run on after its caller has moved on (the caller is not kept waiting);
   * close() waits for it, within its bound. The call must not reject.
   */
  track(cleanup: Promise<unknown>): void {
    this.#cleanups.add(cleanup);
    void cleanup.finally(() => this.#cleanups.delete(cleanup));
  }

  /**
   * Rejects waits, stops renewal, releases held locks, finishes clean-ups and deletes the liveness
   * key (best effort, bounded), closes the subscriber.
   */
  close(): Promise<void> {
    this.#closed ??= this.#close();
    return this.#closed;
  }

  async #close(): Promise<void> {
    this.#closing.abort(new PadlockClosedError());
    this.watchdog.stop();
    const holds = [...this.#holds.values()];
    const releases = Promise.allSettled(
      holds.map(async (hold) => {
        try {
          await hold.lock.releaseInRedis(hold, hold.count);
        } finally {
          this.released(hold);
        }
      }),
    );
    // Waits that close() just rejected send their clean-up as their rejection unwinds (microtasks,
    // all run before the next macrotask turn).
    await new Promise((resolve) => setImmediate(resolve));
    // The liveness key goes with them: a hold whose release fails is this closed Padlock's no more,
    // and may be reaped rather than wait for its lease.
    await settleWithin(Promise.allSettled([releases, ...this.#cleanups, this.liveness.close(CLOSE_TIMEOUT_MS)]), CLOSE_TIMEOUT_MS);
    for (const hold of holds) this.released(hold);
    await this.subscriber.close();
  }
}

/** A hold's key in the registry: one per lock and owner. */
function holdKey(lock: string, owner: string): string {
  return `${lock}\n${owner}`;
}
