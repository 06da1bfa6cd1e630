/**
 * One lock's recipe on etcd: take, wait (a watch, never a poll), re-enter, release, force-release
 * and read, for every role of etcd-queue.ts, and `takeAll` for several locks in one transaction.
 *
 * Layout: the lock is the key prefix `<root>/<family>/<escaped name>/`; each participant one key
 * under it (etcd-queue.ts names them), created in a transaction that fails if it exists, attached
 * to its client's one lease (lease-clock.ts). Nothing else is written: a lock with no participant
 * has no key, and a crashed client's keys are deleted by etcd when its lease expires.
 *
 * Waiting: the waiter reads the queue, and watches what can let it in from the revision after that
 * read: etcd replays any change made since, so no release is missed, and only the waiter(s) behind
 * a key watch it, so a release wakes one (and a waiter that heard nothing for a lease TTL looks
 * again: see waitForChange). Woken, it reads the queue again (and its lease): it reports
 * the lock held only if that linearizable read still has its own key and etcd says its lease lives.
 * (etcd 3.4.3's own lock could be granted after its lease expired, Jepsen 2020; Debian's 3.4.23
 * predates the fix: this recipe never trusts a wake-up, only a fresh read.)
 *
 * Fence: the holder's key's create revision. Revisions are assigned by the Raft log in one total
 * order across the cluster and keep growing across leader changes, and a participant holds only
 * after every earlier participant that excludes it is gone, so each new holder's key was created
 * after its predecessor's: its revision is higher.
 *
 * Hold count: the key's value, changed by compare-and-set on its mod revision, keeping its lease, so
 * a re-entry by owner token from another client counts once.
 */
import { randomBytes } from 'node:crypto';
import { monotonicNow } from '../../clock.js';
import { LockNotHeldError, PermitLimitError } from '../../errors.js';
import type { WaitScope } from '../../wait-scope.js';
import type { EtcdOps, Snapshot } from './etcd-client.js';
import { participantName, queueOf, turnOf, type Participant, type Role, type Turn } from './etcd-queue.js';
import type { LeaseClock } from './lease-clock.js';

/**
 * A hold count as a key's value, tagged with a random word unique to this write (`<count> <tag>`;
 * readers take the leading number): a write etcd3 sent again after a lost answer can then tell its
 * own first landing from another client's write (EtcdOps.replace).
 */
const countValue = (count: number): string => `${count} ${randomBytes(4).toString('hex')}`;

/** A hold etcd granted. */
export interface EtcdGrant {
  /** The holder's key, in full. */
  readonly key: string;
  /** The key's create revision. */
  readonly fence: number;
  readonly holdCount: number;
}

/** What one participant asks for. */
export interface Request {
  readonly role: Role;
  readonly owner: string;
  readonly permits: number;
  /** A read taken inside a write hold: the writer's owner, whose key it passes (etcd-queue.ts). */
  readonly passes?: string;
}

/** A lock's state, as operators read it. */
export interface EtcdLockState {
  readonly holders: readonly Participant[];
  readonly waiters: readonly Participant[];
  /** The limit in force (a semaphore's stored one, else the lock's own). */
  readonly limit: number;
}

/** The key prefix of lock `name` of `family` under `root`; the name is escaped into one segment. */
export function lockPrefix(root: string, family: string, name: string): string {
  return `${root}/${family}/${encodeURIComponent(name)}/`;
}

/** The lease (decimal id, as etcd3 gives it) a participant's key is attached to: its name says. */
export function leaseIdOfKey(key: string): string | undefined {
  const hex = /\.([0-9a-f]+)$/.exec(key)?.[1];
  return hex === undefined ? undefined : BigInt(`0x${hex}`).toString();
}

/** What this client last wrote to an owner's key: a release that finds it unchanged needs no read first. */
interface Known {
  readonly key: string;
  readonly modRevision: number;
  readonly count: number;
}

/** One participant of a take in progress. */
interface Seat {
  readonly lock: EtcdLock;
  readonly request: Request;
  readonly name: string;
  readonly key: string;
}

/** The client's lease: one given, or where to get the live one (a Padlock replaces a lost lease). */
export type LeaseSource = LeaseClock | (() => Promise<LeaseClock>);

/** What a lock of one kind adds to the recipe's defaults. */
export interface EtcdLockOptions {
  /** The role whose key `reenter` and `release` look for (a read/write lock's two sides share a prefix). */
  readonly role?: Role;
  /**
   * A key holding a stored limit that replaces `limit` while it exists (a semaphore's `setPermits`):
   * read with the queue in the same transaction, and watched by the first waiter (a raise lets it in).
   */
  readonly limitKey?: string;
}

/** One lock (one name of one kind) as one client sees it: its queue under `prefix`, its holds under `lease`. */
export class EtcdLock {
  readonly #known = new Map<string, Known>();
  /** Each owner's key, kept until its last hold is released (what renewals read). */
  readonly #keys = new Map<string, string>();
  readonly role: Role | undefined;
  readonly limitKey: string | undefined;

  constructor(
    private readonly ops: EtcdOps,
    /** The client's lease, which every key this lock writes is attached to. */
    private readonly lease: LeaseSource,
    /** The lock's key prefix (ends in `/`). */
    readonly prefix: string,
    /** The lock's name, for errors. */
    readonly name: string,
    /** The semaphore's limit (1 for other kinds), unless a stored one replaces it (`limitKey`). */
    readonly limit: number,
    options: EtcdLockOptions = {},
  ) {
    this.role = options.role;
    this.limitKey = options.limitKey;
  }

  /** The limit in force given the stored value read (`undefined`: none stored). */
  limitFrom(stored: string | undefined): number {
    const parsed = stored === undefined ? NaN : Number(stored);
    return Number.isInteger(parsed) && parsed >= 1 ? parsed : this.limit;
  }

  /** The lease this lock's keys live by now. */
  currentLease(): Promise<LeaseClock> {
    return typeof this.lease === 'function' ? this.lease() : Promise.resolve(this.lease);
  }

  /** The key `owner` holds this lock by (taken or re-entered through this instance), if any. */
  keyOf(owner: string): string | undefined {
    return this.#keys.get(owner);
  }

  /** The lease (decimal id) the key of `owner` is attached to, if this instance knows the key. */
  leaseOf(owner: string): string | undefined {
    const key = this.#keys.get(owner);
    return key === undefined ? undefined : leaseIdOfKey(key);
  }

  /**
   * Takes the lock for `request`, waiting within `scope` when `wait` (else one attempt: `null` when
   * held). An aborted or timed-out wait leaves nothing behind: its key is deleted.
   */
  async take(request: Request, scope: WaitScope, wait: boolean): Promise<EtcdGrant | null> {
    const grants = await EtcdLock.takeAll([{ lock: this, request }], scope, wait);
    return grants?.[0] ?? null;
  }

  /**
   * Takes every lock of `wanted` or none: one transaction creates all their keys (or none, if one
   * exists), and the caller holds once it is at the front of every queue. All keys of one take share
   * a create revision, and a participant only ever waits for ones created before it, so takes of
   * overlapping sets cannot deadlock. Every lock must be made with the same client and lease.
   */
  static async takeAll(wanted: readonly { lock: EtcdLock; request: Request }[], scope: WaitScope, wait: boolean): Promise<EtcdGrant[] | null> {
    const first = wanted[0];
    if (first === undefined) return [];
    const { ops } = first.lock;
    const lease = await scope.race(first.lock.currentLease());
    const seats: Seat[] = wanted.map(({ lock, request }) => {
      const name = participantName(request.role, request.owner, request.permits, lease.id, request.passes, request.role === 'permit' ? lock.limit : undefined);
      return { lock, request, name, key: lock.prefix + name };
    });
    const keys = seats.map((s) => s.key);
    const prefixes = seats.map((s) => s.lock.prefix);
    const leave = (): void => removeWhileLeased(ops, keys, lease);
    const notHeld = (): LockNotHeldError => new LockNotHeldError(first.lock.name, first.request.owner, 'acquire');
    if (!lease.alive) throw notHeld();
    // A semaphore's stored limit is read with its queue (extras[i] belongs to seats[i]).
    const limitKeys = seats.map((s) => s.lock.limitKey).filter((k): k is string => k !== undefined);
    const limitOf = (seat: Seat, view: Snapshot | undefined): number => {
      const at = seat.lock.limitKey === undefined ? -1 : limitKeys.indexOf(seat.lock.limitKey);
      return seat.lock.limitFrom(at < 0 ? undefined : view?.extras?.[at]);
    };
    const joining = ops.join(keys, '1', lease.id, prefixes, limitKeys).catch((error: unknown) => {
      // etcd no longer has the lease (revoked elsewhere, expired unseen): lost now, and this take fails as not held.
      if (error instanceof Error && /requested lease not found/.test(error.message)) {
        lease.gone();
        throw notHeld();
      }
      // The answer may be what was lost, not the write: our keys (this owner's, on this lease) go, or
      // they would wait in the queue, unowned, as long as the lease lives.
      leave();
      throw error;
    });
    const joined = await scope.race(joining, (late) => late.created && leave());
    let views: Snapshot[] = joined.snapshots;
    let waited = false;
    try {
      // The keys existed: this take's own create, applied though its answer was lost, and sent again
      // by the client (etcd3 retries on another member). A fresh owner's token is new to every take and
      // the key names the lease, so no other take wrote them: they are ours, and we read where they stand.
      if (!joined.created) views = await scope.race(ops.queues(prefixes, limitKeys));
      for (;;) {
        const turns = seats.map((seat, i) => {
          const queue = queueOf(views[i]?.entries ?? []);
          const limit = limitOf(seat, views[i]);
          // A request no limit can ever grant fails rather than waits forever (a lowered limit).
          if (seat.request.role === 'permit' && seat.request.permits > limit) throw new PermitLimitError(seat.lock.name, seat.request.permits, limit);
          return { seat, queue, turn: turnOf(queue, seat.name, limit) };
        });
        // Our key gone: the lease expired (or an operator force-released a waiter).
        if (turns.some((t) => t.turn === undefined)) throw notHeld();
        const blocked = turns.find((t) => !(t.turn as Turn).holds);
        if (blocked === undefined) {
          const grants: EtcdGrant[] = [];
          for (const { seat, queue } of turns) {
            const me = queue.find((p) => p.name === seat.name) as Participant;
            let modRevision = me.modRevision;
            // Tells the semaphore waiter behind us that it may hold now: its watch on our key fires.
            if (seat.request.role === 'permit' && waited) modRevision = (await scope.race(ops.replace(seat.key, countValue(1), me.modRevision)).catch(() => undefined)) ?? -1;
            seat.lock.#known.set(seat.request.owner, { key: seat.key, modRevision, count: 1 });
            seat.lock.#keys.set(seat.request.owner, seat.key);
            grants.push({ key: seat.key, fence: me.createRevision, holdCount: 1 });
          }
          return grants;
        }
        scope.foundHeld();
        if (!wait) {
          await scope.race(ops.remove(...keys)).catch(() => undefined);
          return null;
        }
        const watched = (blocked.turn as Turn).watch.map((name) => blocked.seat.lock.prefix + name);
        // The first waiter of a semaphore (it watches every holder) also watches the stored limit: a raise may let it in.
        const { limitKey } = blocked.seat.lock;
        if (limitKey !== undefined && (blocked.turn as Turn).first === true) watched.push(limitKey);
        await waitForChange(ops, lease, watched, (views[0]?.revision ?? 0) + 1, scope, notHeld);
        waited = true;
        // Never trust the wake-up: read the queues again, and ask etcd whether our lease still lives.
        const sent = monotonicNow();
        const [fresh, remainingMs] = await scope.race(Promise.all([ops.queues(prefixes, limitKeys), ops.leaseRemainingMs(lease.id)]));
        lease.confirm(sent, remainingMs);
        if (!lease.alive) throw notHeld();
        views = fresh;
      }
    } catch (error) {
      leave();
      throw error;
    }
  }

  /** Adds one hold to `owner`'s key (a re-entry, from any client); `null` when `owner` has none here. */
  async reenter(owner: string): Promise<EtcdGrant | null> {
    for (;;) {
      const mine = await this.#participantOf(owner);
      if (mine === undefined) return null;
      const key = this.prefix + mine.name;
      const count = mine.count + 1;
      const modRevision = await this.ops.replace(key, countValue(count), mine.modRevision);
      if (modRevision === undefined) continue; // another re-entry or release came between, or it is gone
      this.#known.set(owner, { key, modRevision, count });
      this.#keys.set(owner, key);
      return { key, fence: mine.createRevision, holdCount: count };
    }
  }

  /** Releases `count` of `owner`'s holds; resolves with how many it has left. Rejects `LockNotHeldError`. */
  async release(owner: string, count: number): Promise<number> {
    try {
      const left = await this.#release(owner, count);
      if (left === 0) this.#keys.delete(owner);
      return left;
    } catch (error) {
      if (error instanceof LockNotHeldError) this.#keys.delete(owner);
      throw error;
    }
  }

  async #release(owner: string, count: number): Promise<number> {
    const known = this.#known.get(owner);
    this.#known.delete(owner);
    if (known !== undefined) {
      // Unchanged since this client's own write (no re-entry elsewhere): one round trip, no read.
      const left = known.count - count;
      if (left <= 0) {
        const removed = await this.ops.removeIf([known.key], [known.modRevision]);
        if (removed === true) return 0;
        if (removed === false) throw new LockNotHeldError(this.name, owner, 'release');
      } else {
        const modRevision = await this.ops.replace(known.key, countValue(left), known.modRevision);
        if (modRevision !== undefined) {
          this.#known.set(owner, { key: known.key, modRevision, count: left });
          return left;
        }
      }
    }
    for (;;) {
      const mine = await this.#participantOf(owner);
      if (mine === undefined) throw new LockNotHeldError(this.name, owner, 'release');
      const key = this.prefix + mine.name;
      const left = mine.count - count;
      if (left <= 0) {
        const removed = await this.ops.removeIf([key], [mine.modRevision]);
        if (removed === true) return 0;
        if (removed === false) throw new LockNotHeldError(this.name, owner, 'release');
        continue;
      }
      if ((await this.ops.replace(key, countValue(left), mine.modRevision)) !== undefined) return left;
    }
  }

  /**
   * Deletes `key` in the background, sending the delete again while it fails and the lease lives: for
   * a final release that could not reach etcd, whose key nothing else would delete while this
   * Padlock's lease is kept alive (the lease never runs out, as a Redis lock's would).
   */
  abandonKey(key: string): void {
    void this.currentLease().then((lease) => lease.alive && removeWhileLeased(this.ops, [key], lease), () => undefined);
  }

  /** Releases the hold whose key is `key` outright (every count); false when it was gone. */
  async releaseKey(key: string): Promise<boolean> {
    return (await this.ops.remove(key)) > 0;
  }

  /** Deletes every holder's key, whoever holds (operators); true when someone held. */
  /**
   * Deletes every holder's key, whoever holds (operators); true when someone held. `tell` is then
   * given the leases (decimal ids) of the holders whose keys were deleted, to tell them at once.
   */
  async forceRelease(tell?: (leases: readonly string[]) => Promise<void>): Promise<boolean> {
    const { holders } = await this.inspect();
    if (holders.length === 0) return false;
    const keys = holders.map((p) => this.prefix + p.name);
    const freed = (await this.ops.remove(...keys)) > 0;
    if (freed && tell !== undefined) await tell(keys.flatMap((key) => leaseIdOfKey(key) ?? []));
    return freed;
  }

  /** Who holds and who waits now. */
  async inspect(): Promise<EtcdLockState> {
    const [view] = await this.ops.queues([this.prefix], this.limitKey === undefined ? [] : [this.limitKey]);
    const queue = queueOf(view?.entries ?? []);
    const limit = this.limitFrom(view?.extras?.[0]);
    const holders: Participant[] = [];
    const waiters: Participant[] = [];
    for (const p of queue) (turnOf(queue, p.name, limit)?.holds === true ? holders : waiters).push(p);
    return { holders, waiters, limit };
  }

  /** `owner`'s key in the queue, if it has one. */
  async #participantOf(owner: string): Promise<Participant | undefined> {
    return queueOf((await this.ops.queue(this.prefix)).entries).find((p) => p.owner === owner && (this.role === undefined || p.role === this.role));
  }
}

/**
 * Deletes the keys of a take that failed, sending the delete again (backing off up to 1 s) while it
 * fails and the lease lives: a key left behind waits in its queue, unowned, for as long as the lease
 * does, and every waiter behind it with it (a failed join's cleanup sent during an election did).
 */
function removeWhileLeased(ops: EtcdOps, keys: readonly string[], lease: LeaseClock, backOffMs = 50): void {
  ops.remove(...keys).catch(() => {
    if (lease.alive) setTimeout(() => removeWhileLeased(ops, keys, lease, Math.min(2 * backOffMs, 1_000)), backOffMs).unref();
  });
}

/**
 * Watches `keys` (in full) from `fromRevision` and resolves on the first change to any of them, or
 * once a lease TTL has passed without one; rejects with the scope's reason when it stops first, or
 * `notHeld()` when the lease is lost (our own key is gone with it). The watches are cancelled
 * either way.
 *
 * The TTL is a safety net, not a poll: the caller reads its queue again whenever this resolves, and
 * a watch of etcd3's that never confirmed, or went silent, would otherwise leave the waiter waiting
 * for ever (seen once in a loaded CI run: the next waiter not served 50 s after a release; etcd3's
 * own tracker has such reports, microsoft/etcd3#72 and #78). One read per waiter per TTL, against
 * a lease renewed three times per TTL.
 */
async function waitForChange(
  ops: EtcdOps,
  lease: LeaseClock,
  keys: readonly string[],
  fromRevision: number,
  scope: WaitScope,
  notHeld: () => Error,
): Promise<void> {
  let woken: (() => void) | undefined;
  const wake = new Promise<void>((resolve) => (woken = resolve));
  const lookAgain = setTimeout(() => woken?.(), lease.ttlMs);
  const watching = keys.map((key) => ops.watch(key, fromRevision, () => woken?.()));
  try {
    await Promise.race([scope.race(Promise.all(watching)), wake]);
    scope.check();
    await new Promise<void>((resolve, reject) => {
      const stops: (() => void)[] = [];
      const end = (settle: () => void): void => {
        for (const stop of stops) stop();
        settle();
      };
      stops.push(scope.stop.onAbort(() => end(() => reject(scope.stop.reason))));
      stops.push(lease.onLost(() => end(() => reject(notHeld()))));
      void wake.then(() => end(resolve));
    });
  } finally {
    clearTimeout(lookAgain);
    for (const watch of watching) void watch.then((w) => w.cancel(), () => undefined).catch(() => undefined);
  }
}
