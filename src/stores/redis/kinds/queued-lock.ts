/**
 * Waiting without polling, shared by every kind whose protocol keeps a queue in Redis (mutex, fair
 * mutex, read/write lock, semaphore). A waiter that finds the lock taken subscribes to its client's
 * channel, then joins the queue in Redis in the same call that finds the lock still taken, and
 * sleeps until a message names it (woken: try again; handed the hold: take it), its heartbeat is
 * due, or the holder's lease runs out. Giving up leaves the queue, passing on whatever it was given.
 * A call that fails while Redis fails over is sent again after a back-off, within the wait
 * (src/outage.ts); any other failure ends the wait.
 */
import { driftMs, monotonicNow } from '../../../clock.js';
import { MAX_MS, type ResolvedAcquireOptions } from '../../../options.js';
import { tellHoldersScript, unqueueScript, type AcquireReply } from '../scripts/index.js';
import type { Watch } from '../subscriber.js';
import type { Hold } from '../../../hold.js';
import { forcedChannel, type LockKeys } from '../../../keys.js';
import type { Shared } from '../../../shared.js';
import type { RedisContext } from '../redis-store.js';
import { anyQuorum, oneServerOnly } from '../topology/quorum.js';
import type { ScriptCall } from '../topology/topology.js';
import type { WaitScope } from '../../../wait-scope.js';
import { Lock, type Grant } from '../../../locks/lock.js';
import { Outage } from '../../../outage.js';
import { isTransient } from '../adapters/transient.js';
import { publishCommand, type QueueMode } from './mutex-protocol.js';

/** A waiter refreshes its place in the queue at least this often. */
const HEARTBEAT_MS = 1_000;

/**
 * The longest a woken waiter waits for the other servers' wake-ups where it needs several
 * (`Topology.wakeUps`): a release is sent to every master at once, so the others' follow within a
 * round trip or two; a master that never sends one (down, or its queue named another waiter)
 * costs at most this, less than a split vote's back-off (5–50 ms).
 */
const WAKE_GATHER_MS = 10;

/** The calls a queued wait makes: a kind's protocol provides them. */
export interface QueueProtocol {
  /** The channel on which this Padlock's waiters of this lock are woken or handed the hold. */
  readonly waiterChannel: string;
  /**
   * Takes a hold for a fresh `owner` if it may; `try` never queues; `queue` (tail) and `requeue`
   * (head) join the queue or refresh the owner's heartbeat there. `ticket` and `place` (how the
   * script finds the waiter's entry): see MutexProtocol.attempt.
   */
  attempt(owner: string, leaseMs: number, mode: QueueMode, heartbeatMs: number, ticket: number, place: string): ScriptCall<AcquireReply>;
  /** Takes a waiter that gave up out of the queue, passing on a turn it was given. Idempotent. */
  leave(owner: string): ScriptCall<boolean>;
}

/** Every Redis kind: its calls run through the Redis store's topology, its waiters queue in Redis. */
export abstract class QueuedLock extends Lock {
  protected abstract readonly protocol: QueueProtocol;

  constructor(
    shared: Shared,
    /** What the Redis store's kinds share. */
    protected readonly redis: RedisContext,
    name: string,
    keysOf?: (prefix: string, name: string) => LockKeys,
  ) {
    super(shared, name, keysOf);
  }

  /** The call that renews `holds` (to their own lease, or to `ms` when given): the watchdog batches these. */
  abstract renewCall(holds: readonly Hold[], ms?: number): ScriptCall<number[]>;

  renew(holds: readonly Hold[], ms?: number): Promise<number[]> {
    return this.redis.topology.run(this.renewCall(holds, ms));
  }

  /**
   * After a force-release: when it freed a hold (`freed`), names this lock on the force-release
   * channel, where every holding Padlock listens, so that its holders check at once rather than at
   * their next renewal (tell-holders.lua). Best effort: a holder not told learns at that renewal.
   */
  protected async tellHolders(freed: boolean): Promise<boolean> {
    if (!freed) return false;
    const { topology } = this.redis;
    const channel = forcedChannel(this.shared.prefix);
    const call: ScriptCall<boolean> = { script: tellHoldersScript, keys: [channel], args: [this.name, publishCommand(topology.shardedPubSub)], lock: this.name, quorum: anyQuorum };
    await topology.run(call).catch(() => undefined);
    return true;
  }

  /**
   * The grant a message from a release carries, or `null` when the waiter must ask Redis again.
   * A mutex waiter is only woken; the fair mutex reads its handoff here.
   */
  protected grantFrom(_message: string, _lastSentAt: number): Grant | null {
    return null;
  }

  /**
   * For kinds whose releases hand the hold to a waiter outright (fair mutex, and others that admit
   * waiters in their scripts): the grant a handoff message carries, or `null` to ask Redis. Where
   * grants count only once confirmed (replicas acknowledged them), always `null`: the waiter claims
   * it with a call of its own.
   */
  protected handedOver(message: string, lastSentAt: number): Grant | null {
    if (this.redis.topology.confirmsGrants) return null;
    return handoffGrant(message, lastSentAt);
  }

  /**
   * The error for an attempt refused outright because it asks more than the lock can ever give (a
   * semaphore request over its limit; no other kind's scripts answer so).
   */
  protected overLimit(limit: number): Error {
    return new TypeError(`lock "${this.name}" refused an attempt over its limit (${limit}), which only a semaphore may do`);
  }

  protected async obtain(owner: string, options: ResolvedAcquireOptions, scope: WaitScope): Promise<Grant> {
    // Short leases need frequent heartbeats: a fair handoff's lease counts from the last one sent.
    const heartbeatMs = Math.max(5, Math.min(HEARTBEAT_MS, options.leaseMs / 3));
    const { subscriber, topology, liveness, reaper } = this.redis;
    const channel = this.protocol.waiterChannel;
    let watch: Watch | undefined;
    // Set before the first call that may queue this waiter is sent, not when its reply comes: a wait
    // that ends while that call is in flight must still leave the queue, or it leaves a ghost there.
    let queued = false;
    // Aborted when this wait ends in failure, before the leave is sent: an attempt still in flight
    // must not be re-sent after the leave (a NOSCRIPT fallback would queue the waiter again).
    const gaveUp = { aborted: false };
    // When this wait began, on this client's clock: Redlock's masters order their queues by it.
    const ticket = Date.now();
    // Where this waiter's entry is in the queue, for the scripts to find it without an index: the
    // entry the last call returned; '' while it is in no queue; '?' when a topology of several
    // servers answered (each master's entry differs: they search).
    let place = '';
    // How the wait stands, for a reply that comes after its call was given up on (no reply in time):
    // while it waits on, its next attempt (a resend for the same owner, which only reads the hold
    // back) takes that grant; once it has failed, the grant is given back; once granted, only
    // another hold is (a later fence: the call ran after the lease it returned was released).
    let ended: 'waiting' | 'failed' | Grant = 'waiting';
    let lateHoldCount = 0;
    const abandon = (late: AcquireReply): void => {
      if (late.status !== 'acquired') return;
      if (ended === 'waiting') lateHoldCount = late.holdCount;
      else if (ended === 'failed' || late.fence !== ended.fence) this.giveBack(owner, late.holdCount);
    };
    const outage = new Outage(scope, this.redis.contact, isTransient);
    const endWait = liveness.beginWait();
    try {
      // While this client already listens (other local waiters), join the queue at once; a call
      // that may not wait (tryAcquire) only ever tries.
      let mode: QueueMode = scope.waitMs > 0 && subscriber.isSubscribed(channel) ? 'queue' : 'try';
      for (;;) {
        const triedAt = monotonicNow();
        let sentAt: number;
        let reply: AcquireReply;
        try {
          if (mode !== 'try') {
            // Listen before joining the queue, so that the wake-up or handoff cannot be missed.
            const listening: Watch = (watch ??= subscriber.watch(channel));
            try {
              await outage.race(scope.race(listening.ready));
            } catch (error) {
              // Not subscribed (the subscriber's server failing over): subscribe afresh next time.
              listening.close();
              watch = undefined;
              throw error;
            }
            queued = true;
          }
          // A grant records this client as the holder: its liveness key must exist first.
          const alive = liveness.ensure();
          if (alive !== undefined) await outage.race(scope.race(alive));
          // A first try that awaited nothing since triedAt (the common case): that is its send time.
          sentAt = alive === undefined && mode === 'try' ? triedAt : monotonicNow();
          reply = await outage.race(scope.race(topology.send(this.protocol.attempt(owner, options.leaseMs, mode, heartbeatMs, ticket, place), gaveUp), abandon), abandon);
        } catch (error) {
          // A failover, a moving slot, a reconnect: try again after a back-off, within the wait.
          // A queue call that failed may have run: where its entry is, if anywhere, is not known.
          if (queued) place = '?';
          await outage.pause(error, triedAt);
          continue;
        }
        outage.answered();
        if (reply.status === 'acquired') return (ended = { fence: reply.fence, holdCount: reply.holdCount, pttl: reply.pttl, sentAt });
        if (reply.status === 'over-limit') throw this.overLimit(reply.limit);
        if (reply.status === 'busy') {
          scope.foundHeld();
          if (mode !== 'try') place = reply.place ?? '?';
        }
        if (scope.waitMs === 0 || reply.status === 'not-held') throw scope.timeout();
        // reapDeadHolders: a queued waiter checks whether its holder is dead (at most once a heartbeat per lock).
        if (reaper !== undefined && mode !== 'try' && reply.holder !== undefined) reaper.check(this.keys, reply.holder, heartbeatMs);
        if (mode === 'try') {
          mode = 'queue';
          continue;
        }
        // Sleep until a release turns to us, the next heartbeat, or the holder's lease runs out
        // (a crashed holder releases nothing).
        const fallback: number = reply.pttl > 0 ? reply.pttl + 1 : heartbeatMs;
        const message: string | null | undefined = watch?.take(owner) ?? (await watch?.sleep(Math.min(heartbeatMs, fallback, scope.remainingMs, MAX_MS), scope.stop, owner));
        if (message !== undefined && message !== null) {
          const grant = this.grantFrom(message, sentAt);
          if (grant !== null) {
            // Handed the turn for another entry than its latest: its first join was resent, and the latest is still queued.
            if (isPlace(place) && !takenOut(message, place)) this.#unqueue(owner, place);
            return (ended = grant);
          }
          if (watch !== undefined) await gatherWakeUps(watch, owner, this.redis.topology.wakeUps - 1, scope);
        }
        // Woken but beaten to the lock: back to the head of the queue, not the tail.
        mode = message === undefined || message === null ? 'queue' : 'requeue';
        if (mode === 'requeue' && takenOut(message ?? '', place)) place = '';
        scope.check();
      }
    } catch (error) {
      // The caller is told at once; leaving runs on (after any call still in flight, on the same
      // connection) and close() waits for it. Leaving frees a hold a late attempt got; out of a
      // queue, such a hold is given back here.
      ended = 'failed';
      gaveUp.aborted = true;
      if (queued) this.#leave(owner);
      else if (lateHoldCount > 0) this.giveBack(owner, lateHoldCount);
      throw outage.outcome(error);
    } finally {
      endWait();
      watch?.close();
    }
  }

  /** Takes this waiter's entry at `place` out of the queue, and nothing more. Idempotent; never throws. */
  #unqueue(owner: string, place: string): void {
    // Only where a handoff message is taken at its word (one server): a topology of several confirms grants itself.
    const call: ScriptCall<number> = { script: unqueueScript, keys: [this.keys.queue], args: [owner, place], lock: this.name, quorum: oneServerOnly() };
    this.shared.runtime.track(this.redis.topology.run(call).catch(() => undefined));
  }

  /** Leaves the queue, passing on a lock or wake-up given meanwhile. Idempotent; never throws. */
  #leave(owner: string): void {
    const leave = this.redis.topology.run(this.protocol.leave(owner));
    this.shared.runtime.track(leave.catch(() => undefined));
  }
}

/**
 * Waits, briefly, for `more` wake-ups addressed to `owner` (the other masters' for the same release),
 * so that the waiter's next attempt finds the release run on a majority.
 */
async function gatherWakeUps(watch: Watch, owner: string, more: number, scope: WaitScope): Promise<void> {
  const until = monotonicNow() + WAKE_GATHER_MS;
  for (let got = 0; got < more; got++) {
    const left = Math.min(until - monotonicNow(), scope.remainingMs);
    if (left <= 0) return;
    const message = watch.take(owner) ?? (await watch.sleep(left, scope.stop, owner));
    if (message === null) return;
  }
}

/** Whether `place` is an entry as a script wrote it (not `''`, in no queue, nor `'?'`, not known). */
export function isPlace(place: string): boolean {
  return place !== '' && place !== '?';
}

/**
 * Whether the release that sent `message` took out the entry at `place`, this waiter's latest: a
 * wake-up (`"<owner> wake <expiry>"`) or a handoff (`"<owner> <fence> <pttl> <expiry>"`) names the
 * expiry of the entry it took out. Then the waiter is in no queue now, and its next call need not
 * look for it; otherwise an entry it wrote later may still be queued.
 */
export function takenOut(message: string, place: string): boolean {
  const parts = message.split(' ');
  const expiry = parts[1] === 'wake' ? parts[2] : parts[3];
  return expiry !== undefined && /^\d+$/.test(expiry) && isPlace(place) && place.endsWith(`|${expiry}`);
}

/**
 * Reads a fair handoff, `"<owner> <fence> <pttl> <expiry>"`. The lease began after the waiter's last queue
 * call was sent (the handoff can only follow it), so that call's send time bounds it safely. A
 * lease that would already be nearly over by that bound is confirmed by another attempt instead
 * (which also claims it), so `null` here means "ask Redis".
 */
export function handoffGrant(message: string, lastSentAt: number): Grant | null {
  const [, fenceText, pttlText] = message.split(' ');
  const fence = Number(fenceText);
  const pttl = Number(pttlText);
  if (!Number.isInteger(fence) || !Number.isInteger(pttl)) return null;
  const remaining = lastSentAt + pttl - driftMs(pttl) - monotonicNow();
  if (remaining < pttl / 2) return null;
  return { fence, holdCount: 1, pttl, sentAt: lastSentAt };
}
