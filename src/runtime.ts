/**
 * What every lock of one Padlock shares: the script runner, the renewal scheduler, the subscriber,
 * the registry of holds and the async context that makes nested acquisitions re-enter.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomBytes } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { monotonicNow, settleWithin } from './clock.js';
import { LockLostError, LockNotHeldError, PadlockClosedError, type LockLostReason } from './errors.js';
import type { Hold } from './hold.js';
import { lockKeys, type LockKeys } from './keys.js';
import type { LeaseHost } from './lease.js';
import { checkLeaseMs } from './options.js';
import type { CommandConnection } from './redis/connection.js';
import { ScriptRunner } from './redis/script-runner.js';
import { keySlot } from './redis/slot.js';
import { renewScript } from './scripts/index.js';
import { Subscriber } from './subscriber.js';
import { WaitScope } from './wait-scope.js';
import { Watchdog } from './watchdog.js';

/** Payload of the `acquired` event. */
export interface AcquiredEvent {
  readonly name: string;
  readonly owner: string;
  readonly fence: number;
  readonly holdCount: number;
  /** Milliseconds the call waited. */
  readonly waitedMs: number;
}

/** Payload of the `released` and `extended` events. */
export interface HoldEvent {
  readonly name: string;
  readonly owner: string;
  readonly fence: number;
  /** Conservative wall-clock end of the lease (for `extended`). */
  readonly expiresAt: number;
}

/** Events a Padlock emits. */
export interface PadlockEvents {
  acquired: [AcquiredEvent];
  released: [HoldEvent];
  extended: [HoldEvent];
  lost: [LockLostError];
  error: [Error];
}

/** How the runtime reports events (the Padlock's emitter, guarded). */
export type Emit = <E extends keyof PadlockEvents>(event: E, ...args: PadlockEvents[E]) => void;

/** Releasing on `close()` waits at most this long for Redis. */
const CLOSE_RELEASE_TIMEOUT_MS = 5_000;
/** A freed lock keeps its request log this long, so a resent release is recognised. */
export const TOMBSTONE_MS = 10_000;

export class Runtime implements LeaseHost {
  /** Identifies this Padlock's channel for fair-mutex handoffs. */
  readonly clientId = randomBytes(8).toString('hex');
  readonly runner: ScriptRunner;
  readonly subscriber: Subscriber;
  readonly watchdog: Watchdog;
  readonly #holds = new Map<string, Hold>();
  readonly #context = new AsyncLocalStorage<ReadonlyMap<string, Hold>>();
  readonly #closing = new AbortController();
  /** Clean-up calls sent on a caller's behalf after it stopped waiting (leaving a queue): close() waits for them. */
  readonly #cleanups = new Set<Promise<unknown>>();
  #closed: Promise<void> | undefined;

  constructor(
    readonly connection: CommandConnection,
    readonly prefix: string,
    readonly leaseMs: number,
    replyTimeoutMs: number,
    readonly emit: Emit,
  ) {
    this.runner = new ScriptRunner(connection, replyTimeoutMs);
    // Every pending acquire listens for close(): that is not a leak.
    setMaxListeners(0, this.#closing.signal);
    this.subscriber = new Subscriber(() => connection.openSubscriber(), (error) => this.reportError(error));
    this.watchdog = new Watchdog({
      renew: (holds) =>
        this.runner.run(
          renewScript,
          holds.map((h) => h.keys.lock),
          holds.flatMap((h) => [h.owner, h.leaseMs]),
        ),
      // One call per server; in a Cluster, one per slot (a script's keys must share one).
      groupOf: connection.isCluster ? (hold) => String(keySlot(hold.keys.lock)) : () => '',
      renewed: (hold) => this.emit('extended', holdEvent(hold)),
      lost: (hold, reason) => this.lost(hold, reason),
      failed: (error) => this.reportError(error),
    });
  }

  /** Aborted when `close()` starts. */
  get closing(): AbortSignal {
    return this.#closing.signal;
  }

  /** Throws if closed. */
  assertOpen(name?: string): void {
    if (this.#closing.signal.aborted) throw new PadlockClosedError(name);
  }

  /** The bounds of one acquire call on lock `name`: its `waitMs`, its `signal`, close(), and the reply time-out. */
  scope(name: string, waitMs: number, signal: AbortSignal | undefined): WaitScope {
    return new WaitScope(name, waitMs, signal, this.#closing.signal, this.runner.replyTimeoutMs, (lock, ms) => this.runner.noReply(lock, ms));
  }

  /**
   * Lets a clean-up call run on after its caller has moved on (the caller is not kept waiting);
   * close() waits for it, within its bound. The call must not reject.
   */
  track(cleanup: Promise<unknown>): void {
    this.#cleanups.add(cleanup);
    void cleanup.finally(() => this.#cleanups.delete(cleanup));
  }

  keys(name: string): LockKeys {
    return lockKeys(this.prefix, name);
  }

  /** Holds known to this Padlock (for tests and tooling). */
  get holds(): ReadonlyMap<string, Hold> {
    return this.#holds;
  }

  /** The hold of `lock` that the current async context runs under, if any and still alive. */
  contextHold(lock: string): Hold | undefined {
    const hold = this.#context.getStore()?.get(lock);
    return hold?.alive === true ? hold : undefined;
  }

  /** This process's hold of `lock` by `owner`, if any and still alive. */
  findHold(lock: string, owner: string): Hold | undefined {
    const hold = this.#holds.get(holdKey(lock, owner));
    return hold?.alive === true ? hold : undefined;
  }

  /** Runs `fn` with `hold` bound to the async context, so nested acquisitions re-enter it. */
  runInContext<T>(hold: Hold, fn: () => T): T {
    const parent = this.#context.getStore();
    const store = new Map(parent);
    store.set(hold.keys.lock, hold);
    return this.#context.run(store, fn);
  }

  /** Starts tracking a new hold. */
  register(hold: Hold): void {
    this.#holds.set(holdKey(hold.keys.lock, hold.owner), hold);
    this.watchdog.add(hold);
  }

  #forget(hold: Hold, state: 'released' | 'lost'): boolean {
    if (hold.state !== 'held') return false;
    hold.state = state;
    const key = holdKey(hold.keys.lock, hold.owner);
    if (this.#holds.get(key) === hold) this.#holds.delete(key);
    this.watchdog.remove(hold);
    return true;
  }

  /** Declares a hold lost: aborts its signal, emits `lost`. Idempotent. */
  lost(hold: Hold, reason: LockLostReason, cause?: unknown): void {
    if (!this.#forget(hold, 'lost')) return;
    const error = new LockLostError(hold.name, hold.owner, hold.fence, reason, cause === undefined ? undefined : { cause });
    hold.controller.abort(error);
    this.emit('lost', error);
  }

  /** Marks a hold released (its owner holds nothing more here). */
  released(hold: Hold): void {
    if (this.#forget(hold, 'released')) this.emit('released', holdEvent(hold));
  }

  /** Releases `count` holds of `hold` (the lease's `release`). */
  async release(hold: Hold, count: number): Promise<void> {
    if (hold.state === 'released') return; // released by close(): nothing left to do
    if (hold.state === 'lost' || !hold.alive) {
      // Known lost: still try to clean up in Redis (harmless if it is gone), but report the loss.
      this.lost(hold, 'expired');
      hold.ops.release(hold, hold.count).catch(() => undefined);
      throw new LockNotHeldError(hold.name, hold.owner, 'release');
    }
    let remaining: number;
    try {
      remaining = await hold.ops.release(hold, count);
    } catch (error) {
      if (error instanceof LockNotHeldError) this.lost(hold, 'taken');
      // Unreachable: stop renewing so the lease runs out by itself; the caller sees the error.
      else this.released(hold);
      throw error;
    }
    hold.count -= count;
    if (hold.count <= 0 || remaining === 0) this.released(hold);
  }

  /** Extends a hold to at least `ms` from now (the lease's `extend`). */
  async extend(hold: Hold, ms: unknown, leaseReleased: boolean): Promise<void> {
    const lease = checkLeaseMs('ms', ms);
    if (leaseReleased || !hold.alive) throw new LockNotHeldError(hold.name, hold.owner, 'extend');
    const sentAt = monotonicNow();
    const [pttl] = await this.runner.run(renewScript, [hold.keys.lock], [hold.owner, lease], hold.name);
    if (pttl === undefined || pttl <= 0) {
      this.lost(hold, 'taken');
      throw new LockNotHeldError(hold.name, hold.owner, 'extend');
    }
    if (!hold.alive) throw new LockNotHeldError(hold.name, hold.owner, 'extend');
    hold.renewed(sentAt, pttl);
    this.watchdog.update(hold);
    this.emit('extended', holdEvent(hold));
  }

  /** Reports an error on the `error` event. */
  reportError(error: unknown): void {
    this.emit('error', error instanceof Error ? error : new Error(String(error)));
  }

  /** Rejects waits, stops renewal, releases held locks and finishes clean-ups (best effort, bounded), closes the subscriber. */
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
          await hold.ops.release(hold, hold.count);
        } finally {
          this.released(hold);
        }
      }),
    );
    // Waits that close() just rejected send their clean-up as their rejection unwinds (microtasks,
    // all run before the next macrotask turn).
    await new Promise((resolve) => setImmediate(resolve));
    await settleWithin(Promise.allSettled([releases, ...this.#cleanups]), CLOSE_RELEASE_TIMEOUT_MS);
    for (const hold of holds) this.released(hold);
    await this.subscriber.close();
  }
}

/** A hold's key in the registry: one per lock and owner. */
function holdKey(lock: string, owner: string): string {
  return `${lock}\n${owner}`;
}

function holdEvent(hold: Hold): HoldEvent {
  return { name: hold.name, owner: hold.owner, fence: hold.fence, expiresAt: hold.expiresAt };
}
