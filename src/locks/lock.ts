/**
 * What every lock kind shares: validation, re-entry (by async context or by owner token), the
 * bounds of a wait, leases and their holds, `withLock`, and the books of a release or an extend. A
 * kind supplies its protocol: how to take, re-enter, renew and release one hold, and how to wait
 * for its turn, in its store (store.ts); nothing here knows which store that is.
 */
import { driftMs, monotonicNow } from '../clock.js';
import { newOwnerToken } from '../tokens.js';
import { LockNotHeldError, PadlockClosedError } from '../errors.js';
import { holdEvent } from '../events.js';
import { Hold, type HoldLock } from '../hold.js';
import { lockKeys, type LockKeys } from '../keys.js';
import { Lease } from '../lease.js';
import { checkLeaseMs, checkName, resolveAcquireOptions, type AcquireOptions, type ResolvedAcquireOptions } from '../options.js';
import type { Shared } from '../shared.js';
import { failedOutcome, since } from '../observability/metrics.js';
import type { LockKindName } from '../store.js';
import { WaitScope, withCallersStack } from '../wait-scope.js';
import { leaseOrNull, withLease } from './scoped.js';

/** A hold the server granted. */
export interface Grant {
  readonly fence: number;
  readonly holdCount: number;
  /** Remaining lease in ms, as the server said. */
  readonly pttl: number;
  /** Monotonic time at which the granting command was sent. */
  readonly sentAt: number;
}

/** The operations every lock offers. */
export interface Lockable {
  /** The lock's name. */
  readonly name: string;
  /**
   * Waits for the lock (up to `waitMs`, default forever) and returns its lease, which always has
   * time left by this client's conservative clock: a grant whose reply came after its lease ran out
   * (a stalled server) is renewed if still held, else given back and the wait goes on.
   * A wait rides through an outage it has time for (a failover: its calls are sent again after a
   * back-off within `waitMs`, or within `replyTimeoutMs` of the first failure when `waitMs` is ∞).
   * Rejects with `LockTimeoutError` when `waitMs` runs out, with `signal.reason` at once when
   * aborted, with `StoreUnavailableError` (on Redis, `RedisUnavailableError`) when the store does not answer a call in time.
   */
  acquire(options?: AcquireOptions): Promise<Lease>;
  /**
   * Takes the lock if it is free now: one attempt, never queued (with a `waitMs`, waits like
   * `acquire` up to that long); `null` when the lock is held.
   */
  tryAcquire(options?: AcquireOptions): Promise<Lease | null>;
  /**
   * Acquires, runs `fn` with the lease, and releases in `finally`. Inside `fn`, acquiring this lock
   * again through the same Padlock re-enters it. If the lock is lost while `fn` runs, the call
   * rejects with the `LockLostError` even when `fn` succeeded.
   */
  withLock<T>(fn: (lease: Lease) => T | Promise<T>, options?: AcquireOptions): Promise<T>;
  /** Whether anyone holds the lock now. Rejects with `PadlockClosedError` after `close()`. */
  isLocked(): Promise<boolean>;
  /**
   * Deletes the lock whoever holds it (operators only); true when it was held. Its holders are told
   * at once (within a second: their `lease.signal` aborts with `LockLostError`, reason `'taken'`),
   * not at their next renewal. Rejects with `PadlockClosedError` after `close()`.
   */
  forceRelease(): Promise<boolean>;
}

export abstract class Lock implements Lockable, HoldLock {
  readonly name: string;
  protected readonly keys: LockKeys;

  /** @param keysOf the kind's key layout (default: the mutex family's, keys.ts) */
  constructor(protected readonly shared: Shared, name: string, keysOf: (prefix: string, name: string) => LockKeys = lockKeys) {
    this.name = checkName(name);
    this.keys = keysOf(shared.prefix, this.name);
  }

  /** Holds of locks with the same family are renewed by the same script, so may share a call. */
  abstract readonly family: string;

  /** @internal The lock's identity in the hold registry and the async context (its lock key). */
  get identity(): string {
    return this.keys.lock;
  }

  /** The lock's kind, by its factory's name. */
  abstract readonly kind: LockKindName;

  /**
   * Renews `holds` of this lock (to their own lease, or to `ms` when given): each one's remaining
   * lease in ms, ≤ 0 where the store no longer has it. Rejects when the store does not answer.
   */
  abstract renew(holds: readonly Hold[], ms?: number): Promise<number[]>;

  /**
   * Looks at `holds` without lengthening any lease (a hint said they may be gone): each one's
   * remaining lease, ≤ 0 where the store no longer has it. By default a renewal to what this client
   * counts left of them (its deadline is conservative: the store's lease ends later), which never
   * shortens a lease nor lengthens one, and gives a Redlock round its usual per-master time (a
   * renewal to 1 ms would get the shortest); a store whose renewal with `ms` moves a hold's own
   * expiry overrides it.
   */
  check(holds: readonly Hold[]): Promise<number[]> {
    const now = monotonicNow();
    const left = Math.min(...holds.map((hold) => hold.deadline - now));
    return this.renew(holds, Math.max(1, Math.floor(left)));
  }

  /** Releases `count` holds in the store; resolves with the holds the owner has left. Rejects `LockNotHeldError`. */
  abstract releaseInStore(hold: Hold, count: number): Promise<number>;

  /** Re-enters a hold of `owner` (count + 1); `null` when `owner` holds nothing. */
  protected abstract reenterOnce(owner: string, leaseMs: number): Promise<Grant | null>;

  /** Waits for a fresh hold for `owner` within `scope` (which bounds every step and aborts it). */
  protected abstract obtain(owner: string, options: ResolvedAcquireOptions, scope: WaitScope): Promise<Grant>;

  abstract isLocked(): Promise<boolean>;

  abstract forceRelease(): Promise<boolean>;

  acquire(options?: AcquireOptions): Promise<Lease> {
    return this.#acquire(options, Infinity);
  }

  /**
   * @internal Takes a fresh hold under `owner`, a token its caller made or holds other locks under
   * (a multi-lock's names share one owner), waiting as `acquire` does. The caller makes sure that
   * `owner` does not hold this lock already (that is a re-entry: `acquire({ owner })`).
   */
  acquireFresh(owner: string, options: AcquireOptions): Promise<Lease> {
    return this.#acquire(options, Infinity, owner);
  }

  /**
   * @internal Starts tracking a hold the store granted a fresh `owner` together with other locks'
   * (a multi-lock on a store that takes several names in one step, `Store.takeAll`), renewed first if
   * it came out of time, and hands out its lease.
   */
  async adoptFresh(owner: string, grant: Grant, options: ResolvedAcquireOptions, scope: WaitScope): Promise<Lease> {
    return this.#newHold(owner, inTime(grant, options.leaseMs) ? grant : await this.#obtainInTime(owner, grant, options, scope), options, scope);
  }

  /** @internal Gives back a hold the store granted `owner` that no lease was made for (best effort). */
  abandonFresh(owner: string): void {
    this.giveBack(owner, 1);
  }

  tryAcquire(options?: AcquireOptions): Promise<Lease | null> {
    return leaseOrNull(this.#acquire(options, 0));
  }

  withLock<T>(fn: (lease: Lease) => T | Promise<T>, options?: AcquireOptions): Promise<T> {
    return withLease(fn, () => this.acquire(options), (lease, body) => this.shared.runtime.runScoped([lease.hold], body));
  }

  /** A lease's `release()`: releases `count` holds of `hold`, and keeps the books. */
  async release(hold: Hold, count: number): Promise<void> {
    const { runtime } = this.shared;
    if (hold.state === 'released') return; // released by close(): nothing left to do
    if (hold.state === 'lost' || !hold.alive) {
      // Known lost: still try to clean up in the store (harmless if it is gone), but report the loss.
      runtime.lost(hold, 'expired');
      this.releaseInStore(hold, hold.count).catch(() => undefined);
      throw new LockNotHeldError(hold.name, hold.owner, 'release');
    }
    let remaining: number;
    // From here the release's answer decides the hold: released, or lost if the store no longer had it.
    if (count >= hold.count) hold.releasing = true;
    try {
      remaining = await this.releaseInStore(hold, count);
    } catch (error) {
      if (error instanceof LockNotHeldError) runtime.lost(hold, 'taken');
      // Unreachable: stop renewing so the lease runs out by itself (a consensus store, whose session or
      // lease outlives the hold, deletes the node in the background); the caller sees the error.
      else runtime.released(hold);
      throw error;
    }
    hold.count -= count;
    if (hold.count <= 0 || remaining === 0) runtime.released(hold);
  }

  /** A lease's `extend(ms)`: makes the hold last at least `ms` from now. */
  async extend(hold: Hold, ms: unknown, leaseReleased: boolean): Promise<void> {
    const lease = checkLeaseMs('ms', ms);
    if (leaseReleased || !hold.alive) throw new LockNotHeldError(hold.name, hold.owner, 'extend');
    const sentAt = monotonicNow();
    const [pttl] = await this.renew([hold], lease);
    if (pttl === undefined || pttl <= 0) {
      this.shared.runtime.lost(hold, 'taken');
      throw new LockNotHeldError(hold.name, hold.owner, 'extend');
    }
    if (!hold.alive) throw new LockNotHeldError(hold.name, hold.owner, 'extend');
    hold.renewed(sentAt, pttl);
    this.shared.watchdog.update(hold);
    if (this.shared.listens('extended')) this.shared.emit('extended', holdEvent(hold));
  }

  async #acquire(options: AcquireOptions | undefined, defaultWaitMs: number, freshOwner?: string): Promise<Lease> {
    const { runtime, store } = this.shared;
    const opts = resolveAcquireOptions(options, { waitMs: defaultWaitMs, leaseMs: this.shared.leaseMs });
    const existing = freshOwner !== undefined ? undefined : opts.owner === undefined ? runtime.contextHold(this.keys.lock) : runtime.findHold(this.keys.lock, opts.owner);
    // While close() drains, the functions it lets finish may still re-enter what they hold; nothing new starts.
    if (existing === undefined) runtime.assertOpen(this.name);
    else runtime.assertHolding(this.name);
    opts.signal?.throwIfAborted();
    const closing = existing === undefined ? runtime.closing : runtime.releasing;
    const scope = new WaitScope(this.name, opts.waitMs, opts.signal, closing, store.replyTimeoutMs, store.extraReplyMs, (lock, ms) => store.noReply(lock, ms));
    const { observer } = this.shared;
    if (observer !== undefined) scope.onHeld = (first) => observer.held(this, first);
    try {
      let lease: Lease;
      if (existing !== undefined) lease = await this.#reenter(existing, opts, scope);
      else if (opts.owner !== undefined) lease = await this.#reenterRemote(opts.owner, opts, scope);
      else {
        const owner = freshOwner ?? newOwnerToken();
        const grant = await this.obtain(owner, opts, scope);
        // A grant in time (nearly always) goes straight to its hold: no async step more per acquisition.
        lease = this.#newHold(owner, inTime(grant, opts.leaseMs) ? grant : await this.#obtainInTime(owner, grant, opts, scope), opts, scope);
      }
      observer?.acquireEnded(this, existing === undefined && opts.owner === undefined ? 'acquired' : 'reentered', scope.waitedMs, since(scope.firstHeldAt));
      return lease;
    } catch (error) {
      observer?.acquireEnded(this, failedOutcome(error, opts.signal), scope.waitedMs, since(scope.firstHeldAt));
      throw withCallersStack(error);
    } finally {
      scope.dispose();
    }
  }

  /**
   * Never a grant whose lease has already run out by this client's conservative clock (a server
   * stall, a late reply, a handoff read late): `first`, what {@link obtain} gave, or if it is out of
   * time, the same renewed at once if the server still has it for `owner`, else it is given back and
   * the wait goes on within its scope (a time-out then is `LockTimeoutError`, as for any wait).
   */
  async #obtainInTime(owner: string, first: Grant, opts: ResolvedAcquireOptions, scope: WaitScope): Promise<Grant> {
    let grant = first;
    while (!inTime(grant, opts.leaseMs)) {
      const renewed = await this.#renewGrant(owner, grant, opts, scope);
      if (renewed !== undefined) {
        grant = renewed;
        continue;
      }
      // Given back before the next attempt, which runs under the same owner: a release arriving
      // after it would take the new grant away.
      await scope.race(this.#releaseOrphan(owner, 1));
      scope.check();
      if (scope.remainingMs === 0) throw scope.timeout();
      grant = await this.obtain(owner, opts, scope);
    }
    return grant;
  }

  /** Renews a grant not yet handed out: the same grant with the server's new remaining lease, or `undefined` if `owner` no longer holds it. */
  async #renewGrant(owner: string, grant: Grant, opts: ResolvedAcquireOptions, scope: WaitScope): Promise<Grant | undefined> {
    const hold = new Hold(this.keys, owner, grant.fence, this, opts.leaseMs, opts.autoExtend, grant.sentAt, grant.pttl);
    const sentAt = monotonicNow();
    const [pttl] = await scope.race(this.renew([hold], opts.leaseMs));
    return pttl !== undefined && pttl > 0 ? { ...grant, pttl, sentAt } : undefined;
  }

  /** Starts tracking a hold the store just granted, and hands out its first lease. */
  #newHold(owner: string, grant: Grant, opts: ResolvedAcquireOptions, scope: WaitScope): Lease {
    if (this.shared.runtime.closing.aborted) {
      // Granted as close() began: close() will not see this hold, so give it back here.
      this.giveBack(owner, 1);
      throw new PadlockClosedError(this.name);
    }
    const hold = new Hold(this.keys, owner, grant.fence, this, opts.leaseMs, opts.autoExtend, grant.sentAt, grant.pttl);
    hold.count = 1;
    this.shared.runtime.register(hold);
    if (this.shared.listens('acquired')) this.shared.emit('acquired', { name: this.name, owner, fence: grant.fence, holdCount: grant.holdCount, waitedMs: scope.waitedMs });
    return new Lease(hold, grant.holdCount);
  }

  /** Re-enters a hold this process has: count + 1, same fence, lease never shortened. */
  async #reenter(hold: Hold, opts: ResolvedAcquireOptions, scope: WaitScope): Promise<Lease> {
    const sentAt = monotonicNow();
    const grant = await this.#reentryAttempt(hold.owner, opts, scope);
    if (hold.state !== 'held') {
      // Lost while re-entering: give the new count back and report.
      this.giveBack(hold.owner, 1);
      throw new LockNotHeldError(this.name, hold.owner, 're-enter');
    }
    hold.count++;
    hold.leaseMs = Math.max(hold.leaseMs, opts.leaseMs);
    hold.autoExtend ||= opts.autoExtend;
    hold.renewed(sentAt, grant.pttl);
    this.shared.watchdog.update(hold);
    if (this.shared.listens('acquired')) this.shared.emit('acquired', { name: this.name, owner: hold.owner, fence: hold.fence, holdCount: grant.holdCount, waitedMs: scope.waitedMs });
    return new Lease(hold, grant.holdCount);
  }

  /** Re-enters a hold taken elsewhere (another Padlock or process) under `owner`. */
  async #reenterRemote(owner: string, opts: ResolvedAcquireOptions, scope: WaitScope): Promise<Lease> {
    return this.#newHold(owner, await this.#reentryAttempt(owner, opts, scope), opts, scope);
  }

  async #reentryAttempt(owner: string, opts: ResolvedAcquireOptions, scope: WaitScope): Promise<Grant> {
    const grant = await scope.race(this.reenterOnce(owner, opts.leaseMs), (late) => {
      if (late !== null) this.giveBack(owner, 1);
    });
    if (grant === null) throw new LockNotHeldError(this.name, owner, 're-enter');
    if (inTime(grant, opts.leaseMs)) return grant;
    // Out of time on arrival (a stall): renewed if still held, else the count goes back and the caller hears the loss.
    const renewed = await this.#renewGrant(owner, grant, opts, scope);
    if (renewed !== undefined && inTime(renewed, opts.leaseMs)) return renewed;
    this.giveBack(owner, 1);
    throw new LockNotHeldError(this.name, owner, 're-enter');
  }

  /** Releases holds obtained by an attempt whose caller had already given up (best effort). */
  protected giveBack(owner: string, count: number): void {
    void this.#releaseOrphan(owner, count);
  }

  /** Releases `count` holds of `owner` that no lease was made for; never rejects (they may be gone already). */
  #releaseOrphan(owner: string, count: number): Promise<void> {
    const orphan = new Hold(this.keys, owner, 0, this, this.shared.leaseMs, false, 0, 0);
    return this.releaseInStore(orphan, count).then(
      () => undefined,
      () => undefined,
    );
  }
}

/** Whether a grant still has lease left by this client's conservative clock (hold.ts's deadline). */
function inTime(grant: Grant, leaseMs: number): boolean {
  return monotonicNow() < grant.sentAt + grant.pttl - driftMs(leaseMs);
}
