/**
 * One lock's recipe on ZooKeeper: take, wait (a watch, never a poll), re-enter, release,
 * force-release and read, for every role of znode-queue.ts.
 *
 * Layout: the lock is the persistent znode `/<prefix>/<family>/<name>`; each participant an
 * ephemeral sequential child of it (znode-queue.ts names them). The lock's znode exists only while
 * someone holds or waits: the first participant creates it in the same transaction as itself, and
 * the last one out deletes it in the same transaction as itself. Ephemeral children die with their
 * session, so a crashed client frees its locks when ZooKeeper expires its session; the lock's znode
 * it leaves behind is removed by the next participant to leave it.
 *
 * Fence: the creation zxid of the holder's own child. Zxids are assigned by the leader in one total
 * order across the ensemble and keep growing across leader changes (the epoch is their high half),
 * and a participant holds only after every earlier participant that excludes it is gone, so each
 * new holder's child was created after its predecessor's: its zxid is higher (docs/protocol.md).
 *
 * Hold count: the child's data (`<count>`), changed by compare-and-set on its version, so a
 * re-entry by owner token from another process counts once.
 *
 * Told at once: the read that gives a participant its own child's stat (the first participant's
 * read behind its create, a waiter's look at the queue, a re-entry's read) is a `getData` that leaves
 * a watch on that child, so an operator's force-release (a delete by another client) is heard at
 * once, at no request more per acquisition. The watch fires on this client's own writes too: a
 * delete of its own is ignored, a count written is read again (which sets the next watch).
 */
import { randomBytes } from 'node:crypto';
import { LockNotHeldError, PermitLimitError, StoreUnavailableError, ZooKeeperSessionExpiredError } from '../../errors.js';
import { Deadline } from '../../deadlines.js';
import type { WaitScope } from '../../wait-scope.js';
import { parseParticipant, queueOf, stemOf, turnOf, type Participant, type Role } from './znode-queue.js';
import type { Stat } from 'node-zookeeper-client';
import { creationZxid, ZK, zkCode, type ZooKeeperOps } from './zookeeper-client.js';

/** A hold ZooKeeper granted. */
export interface ZooKeeperGrant {
  /** The holder's child, a full path. */
  readonly path: string;
  readonly fence: number;
  readonly holdCount: number;
}

/** What one participant asks for. */
export interface Request {
  readonly role: Role;
  readonly owner: string;
  readonly permits: number;
}

/** A lock's state, as operators read it. */
export interface ZooKeeperLockState {
  readonly holders: readonly Participant[];
  readonly waiters: readonly Participant[];
}

/** The znode path of lock `name` of `family` under `root` (`/<prefix>`); the name is escaped into one path segment. */
export function lockPath(root: string, family: string, name: string): string {
  const segment = encodeURIComponent(name).replace(/\./g, '%2E').replace(/\*/g, '%2A');
  return `${root}/${family}/${segment}`;
}

/**
 * A hold count as a child's data, tagged with a random word unique to this write (`<count> <tag>`;
 * readers take the leading number, {@link countIn}): a write whose answer was lost can then tell its
 * own landing from another client's ({@link ZooKeeperLock.#writeCount}).
 */
const countData = (count: number): Buffer => Buffer.from(`${count} ${randomBytes(4).toString('hex')}`);

/** The hold count in a child's data (1 when it has none). */
export function countIn(data: Buffer): number {
  return Number.parseInt(data.toString('utf8'), 10) || 1;
}

/** What this client last wrote to an owner's child: a release that finds it unchanged needs no read first. */
interface Known {
  readonly path: string;
  /** The child's data version after that write. */
  readonly version: number;
  readonly count: number;
  /** Whether others were queued when this client last looked: its release then deletes the child alone first (the one transaction with the lock's znode would fail). */
  readonly queued: boolean;
}

export class ZooKeeperLock {
  /** Whether this client saw the lock's znode last time (so the next take tries the cheaper call first). */
  #znodeSeen = false;
  readonly #known = new Map<string, Known>();
  /** The children this client made here and has not removed yet: `close()` removes what is left. */
  readonly #mine = new Set<string>();
  /** The children of this client's that carry a watch now (one each: told at once when deleted by another). */
  readonly #watched = new Set<string>();
  /** Those of {@link #mine} that wait (not granted yet): a session that lived through a silent spell keeps them. */
  readonly #waiting = new Set<string>();
  /** Wakes each waiter to look at its queue again (a new session: its watches were the old one's). */
  readonly #wakers = new Set<() => void>();

  constructor(
    private readonly ops: ZooKeeperOps,
    /** The lock's znode. */
    readonly path: string,
    /** The lock's name, for errors. */
    readonly name: string,
    /** The semaphore's limit while none is stored in the lock's znode (1 for other kinds). */
    readonly limit: number,
    /** Lets a clean-up run on after its caller moved on (close() waits for it). */
    private readonly track: (work: Promise<unknown>) => void = () => undefined,
    /** Told when a child of this client's was deleted by another (a force-release): its holds are checked at once. */
    private readonly gone: (name: string) => void = () => undefined,
    /**
     * Resolves once a live session serves (a new one after an expiry); rejects when none will
     * (`ZooKeeperSessionExpiredError`). A wait calls it after a lost connection or session.
     */
    private readonly session: () => Promise<void> = () => Promise.resolve(),
  ) {}

  /** The children this client made here and still has. */
  get children(): ReadonlySet<string> {
    return this.#mine;
  }

  /**
   * Takes the lock for `request`, waiting within `scope` when `wait` (else one attempt: `null` when
   * held). An aborted or timed-out wait leaves nothing behind: its child is deleted.
   */
  async take(request: Request, scope: WaitScope, wait: boolean): Promise<ZooKeeperGrant | null> {
    const joined = await this.#joinWithin(request, scope);
    let mine = joined.path;
    let name = mine.slice(this.path.length + 1);
    let waited = false;
    let woken: (() => void) | undefined;
    const wakeUp = (): void => woken?.();
    this.#wakers.add(wakeUp);
    try {
      // The lock's first participant holds: its child's stat came in the same round trip.
      const firstStat = joined.first === undefined ? undefined : await scope.race(joined.first).catch(() => undefined);
      if (firstStat !== undefined) return this.#granted(request.owner, mine, firstStat.version, creationZxid(firstStat), false);
      for (;;) {
        scope.check();
        const wake = new Promise<void>((resolve) => (woken = resolve));
        const permit = request.role === 'permit';
        const read = await scope.race(Promise.all([this.ops.children(this.path), this.#statWatched(mine), permit ? this.ops.data(this.path) : undefined])).catch((error: unknown) => lookAgain(error, scope));
        // The connection was lost (a server died): the session and its child live on; look again once
        // reconnected. The session lost: look again on the new one (the child is then found gone).
        // No reply in time (the ensemble down): look again while the wait has time (an outage ridden out).
        if (read === undefined) {
          await this.#backOff(scope);
          continue;
        }
        const [names, stat, stored] = read;
        const queue = queueOf(names ?? []);
        // A create of ours whose answer was lost with its server would wait ahead of us forever: it is
        // removed here, where any such earlier child is always seen (this server applied our own,
        // later create; right after the loss, the server we reconnected to may not have had it yet).
        const orphans = queue.filter((p) => p.owner === request.owner && p.role === request.role && p.name !== name);
        if (orphans.length > 0) {
          await scope.race(Promise.all(orphans.map((p) => this.#leave(`${this.path}/${p.name}`))));
          continue;
        }
        const limit = limitIn(stored?.data) ?? this.limit;
        if (permit && request.permits > limit) throw new PermitLimitError(this.name, request.permits, limit);
        const turn = turnOf(queue, name, limit);
        if (turn === undefined || stat === undefined) {
          // Its child is gone with its session (expired; a new one serves now): a wait goes on, queued
          // again at the end, never told "not held" (it held nothing yet).
          this.#mine.delete(mine);
          this.#waiting.delete(mine);
          mine = (await this.#joinWithin(request, scope)).path;
          name = mine.slice(this.path.length + 1);
          continue;
        }
        if (turn.holds) {
          const version = request.role === 'permit' && waited ? await this.#announce(mine) : stat.version;
          return this.#granted(request.owner, mine, version, creationZxid(stat), queue.length > 1);
        }
        scope.foundHeld();
        if (!wait) {
          await scope.race(this.#leave(mine));
          return null;
        }
        // A watch on each child that may let us in; any one firing (or already gone) means look again.
        const paths = turn.watch.map((child) => `${this.path}/${child}`);
        // A semaphore waiter also watches the stored limit (the lock's znode's data): a raise may let
        // it in, a cut refuse it. Only setPermits changes that data, so only it wakes them all.
        if (permit) paths.push(this.path);
        const watched = await scope.race(Promise.all(paths.map((path) => this.ops.exists(path, wakeUp)))).catch((error: unknown) => lookAgain(error, scope));
        waited = true;
        if (watched === undefined) await this.#backOff(scope);
        if (watched === undefined || watched.some((s) => s === undefined)) continue;
        // A watch's event lost with a killed server was seen to leave a waiter waiting for good: with
        // no event for a session's time-out, it looks at the queue again (and watches anew).
        const relook = new Deadline(this.ops.client.getSessionTimeout(), wakeUp);
        try {
          await waitFor(wake, scope);
        } finally {
          relook.cancel();
        }
      }
    } catch (error) {
      this.track(this.#leave(mine));
      throw error;
    } finally {
      this.#wakers.delete(wakeUp);
      this.#waiting.delete(mine);
    }
  }

  /**
   * Joins the queue within `scope`. A create whose answer was lost with the connection may have been
   * made: it is sent again, and {@link take}'s first look at the queue removes the one made before.
   */
  async #joinWithin(request: Request, scope: WaitScope): Promise<{ path: string; first?: Promise<Stat | undefined> }> {
    for (;;) {
      try {
        return await scope.race(this.#join(request), (late) => this.track(this.#leave(late.path)));
      } catch (error) {
        lookAgain(error, scope);
        await this.#backOff(scope);
      }
    }
  }

  /**
   * A read for `owner` beside the write hold of `writer` (a downgrade): granted at once while that
   * writer holds, never queued behind the writers waiting for it; `null` when `writer` holds no more.
   */
  async takeDowngrade(owner: string, writer: string, race: <T>(call: Promise<T>) => Promise<T>): Promise<ZooKeeperGrant | null> {
    const writerChild = await race(this.#childOf(writer, ['lock']));
    const sequence = writerChild === undefined ? undefined : parseParticipant(writerChild.slice(this.path.length + 1))?.sequence;
    if (writerChild === undefined || sequence === undefined) return null;
    const creating = this.ops.createSequential(this.path, stemOf('down', owner, sequence), countData(1));
    const path = await race(creating).catch((error: unknown) => {
      // Given up while the create was on its way: what it made is removed.
      void creating.then((late) => this.track(this.#leave(late)), () => undefined);
      throw error;
    });
    this.#mine.add(path);
    try {
      const [held, stat] = await race(Promise.all([this.ops.exists(writerChild), this.#statWatched(path)]));
      if (held === undefined || stat === undefined) {
        this.track(this.#leave(path));
        return null;
      }
      return this.#granted(owner, path, stat.version, creationZxid(stat), true);
    } catch (error) {
      this.track(this.#leave(path));
      throw error;
    }
  }

  /** Adds one hold to `owner`'s child of one of `roles` (a re-entry); `null` when `owner` has none here. */
  async reenter(owner: string, roles: readonly Role[]): Promise<ZooKeeperGrant | null> {
    for (;;) {
      const child = await this.#childOf(owner, roles);
      if (child === undefined) return null;
      const read = await this.#readWatched(child);
      if (read === undefined) return null;
      const count = countIn(read.data) + 1;
      const written = await this.#writeCount(child, count, read.stat.version);
      if (written === 'gone') return null;
      if (written === 'changed') continue; // another re-entry or release came between
      this.#known.set(knownKey(owner, roles), { path: child, version: written.version, count, queued: true });
      return { path: child, fence: creationZxid(read.stat), holdCount: count };
    }
  }

  /** Whether `owner` has a child of one of `roles` here. */
  async has(owner: string, roles: readonly Role[]): Promise<boolean> {
    return (await this.#childOf(owner, roles)) !== undefined;
  }

  /** The path of `owner`'s child of one of `roles`: as this client last wrote it, else as the lock's children say. */
  async childPath(owner: string, roles: readonly Role[]): Promise<string | undefined> {
    return this.#known.get(knownKey(owner, roles))?.path ?? (await this.#childOf(owner, roles));
  }

  /** Releases `count` of `owner`'s holds (its child of one of `roles`); resolves with how many it has left. Rejects `LockNotHeldError`. */
  async release(owner: string, count: number, roles: readonly Role[] = ROLES): Promise<number> {
    const key = knownKey(owner, roles);
    const known = this.#known.get(key);
    this.#known.delete(key);
    if (known !== undefined) {
      // Unchanged since this client's own write (no re-entry elsewhere): one round trip, no read.
      try {
        const left = known.count - count;
        if (left <= 0) {
          this.#mine.delete(known.path);
          const removed = known.queued ? this.ops.removeThenParent(known.path, this.path, known.version) : this.ops.removeWithParent(known.path, this.path, known.version);
          if (await removed) return 0;
          throw new LockNotHeldError(this.name, owner, 'release');
        }
        const written = await this.#writeCount(known.path, left, known.version);
        if (written === 'gone') throw new LockNotHeldError(this.name, owner, 'release');
        if (written !== 'changed') {
          this.#known.set(key, { path: known.path, version: written.version, count: left, queued: known.queued });
          return left;
        }
      } catch (error) {
        if (zkCode(error) !== ZK.badVersion) throw error;
      }
    }
    for (;;) {
      const child = await this.#childOf(owner, roles);
      const read = child === undefined ? undefined : await this.ops.data(child);
      if (child === undefined || read === undefined) throw new LockNotHeldError(this.name, owner, 'release');
      const left = countIn(read.data) - count;
      if (left <= 0) {
        this.#mine.delete(child);
        if (!(await this.ops.removeWithParent(child, this.path))) throw new LockNotHeldError(this.name, owner, 'release');
        return 0;
      }
      const written = await this.#writeCount(child, left, read.stat.version);
      if (written === 'gone') throw new LockNotHeldError(this.name, owner, 'release');
      if (written !== 'changed') return left;
    }
  }

  /**
   * Releases the hold whose child is `path` outright (every count); false when it was gone. A delete
   * that fails (the ensemble down past the session's time-out) leaves the child among this client's,
   * for the look after a silent spell, or close(), to remove.
   */
  releasePath(path: string): Promise<boolean> {
    this.#mine.delete(path);
    for (const [owner, known] of this.#known) if (known.path === path) this.#known.delete(owner);
    return this.ops.removeLeftover(path, this.path).catch((error: unknown) => {
      this.#mine.add(path);
      throw error;
    });
  }

  /** The limit stored in the lock's znode (`setPermits`), if any. */
  async storedLimit(): Promise<number | undefined> {
    return limitIn((await this.ops.data(this.path))?.data);
  }

  /**
   * Stores `limit` in the lock's znode, where every waiter reads it; false when there is no znode
   * (nobody holds or waits: nothing is stored, so nothing is left behind).
   */
  async storeLimit(limit: number): Promise<boolean> {
    try {
      await this.ops.setData(this.path, Buffer.from(String(limit)), -1);
      return true;
    } catch (error) {
      if (zkCode(error) === ZK.noNode) return false;
      throw error;
    }
  }

  /** Deletes every holder's child, whoever holds (operators); true when someone held. */
  async forceRelease(): Promise<boolean> {
    const state = await this.inspect();
    const removed = await Promise.all(state.holders.map((p) => this.ops.remove(`${this.path}/${p.name}`)));
    if (state.waiters.length === 0) await this.ops.remove(this.path).catch(() => false); // not empty: someone came
    return removed.some(Boolean);
  }

  /** Who holds and who waits now. */
  async inspect(): Promise<ZooKeeperLockState> {
    const [names, stored] = await Promise.all([this.ops.children(this.path), this.ops.data(this.path)]);
    const queue = queueOf(names ?? []);
    const limit = limitIn(stored?.data) ?? this.limit;
    const holders: Participant[] = [];
    const waiters: Participant[] = [];
    queue.forEach((p) => (turnOf(queue, p.name, limit)?.holds === true ? holders : waiters).push(p));
    return { holders, waiters };
  }

  /**
   * Creates this participant's child, and the lock's znode with it when there is none. A child that
   * created the lock's znode is its first (`<stem>-0000000000`, as a new znode's children count from
   * 0): its stat is asked for in the same round trip (`first`), and it holds without a look at the queue.
   */
  async #join(request: Request): Promise<{ path: string; first?: Promise<Stat | undefined> }> {
    const stem = stemOf(request.role, request.owner, request.permits, request.role === 'permit' ? this.limit : undefined);
    const data = countData(1);
    for (;;) {
      try {
        if (!this.#znodeSeen) {
          const created = this.ops.createWithParent(this.path, stem, data);
          // Sent right behind the create, on the same socket: answered after it, in one round trip.
          const first = this.#statWatched(`${this.path}/${stem}-0000000000`).catch(() => undefined);
          const path = await created;
          this.#mine.add(path);
          this.#waiting.add(path);
          return { path, first };
        }
        const path = await this.ops.createSequential(this.path, stem, data);
        this.#mine.add(path);
        this.#waiting.add(path);
        return { path };
      } catch (error) {
        const code = zkCode(error);
        // The lock's znode was there (someone holds or waits) or was just removed by the last one out.
        if (code === ZK.nodeExists) this.#znodeSeen = true;
        else if (code === ZK.noNode && this.#znodeSeen) this.#znodeSeen = false;
        else if (code === ZK.noNode) await this.ops.ensurePath(this.path.slice(0, this.path.lastIndexOf('/')));
        else throw error;
      }
    }
  }

  /** The stat of this client's child `child`, leaving a watch on it ({@link #readWatched}). */
  async #statWatched(child: string): Promise<Stat | undefined> {
    return (await this.#readWatched(child))?.stat;
  }

  /**
   * Reads this client's child `child`, leaving a watch on it unless one is there already: when it
   * fires and the child is still this client's, the child is read again (watched anew), and if
   * another client deleted it (a force-release), the lock's holds here are checked at once.
   */
  async #readWatched(child: string): Promise<{ data: Buffer; stat: Stat } | undefined> {
    const armed = !this.#watched.has(child);
    if (armed) this.#watched.add(child);
    const fired = (): void => {
      this.#watched.delete(child);
      if (!this.#mine.has(child)) return; // deleted by this client (released, left): nothing to tell
      this.#readWatched(child).then(
        (read) => {
          if (read === undefined && this.#mine.has(child)) this.gone(this.name);
        },
        () => undefined, // a lost connection: the next renewal looks
      );
    };
    try {
      const read = await this.ops.data(child, armed ? fired : undefined);
      if (read === undefined && armed) this.#watched.delete(child);
      return read;
    } catch (error) {
      if (armed) this.#watched.delete(child);
      throw error;
    }
  }

  /** Deletes a child this client made (an abandoned wait); the lock's znode too when it was the last. */
  async #leave(child: string): Promise<void> {
    this.#mine.delete(child);
    this.#waiting.delete(child);
    for (const [owner, known] of this.#known) if (known.path === child) this.#known.delete(owner);
    // Failed (the ensemble down past the session's time-out): left among this client's children, as releasePath does.
    await this.ops.removeLeftover(child, this.path).catch(() => this.#mine.add(child));
  }

  /** Removes every child this client still has here (close()); never rejects. */
  async removeMine(): Promise<void> {
    await Promise.all([...this.#mine].map((child) => this.#leave(child)));
  }

  /** Removes the children of this client's holds here, not its waiters' (holds told lost after a silent spell the session lived through); never rejects. */
  async removeHeld(): Promise<void> {
    await Promise.all([...this.#mine].filter((child) => !this.#waiting.has(child)).map((child) => this.#leave(child)));
  }

  /**
   * The session whose children this client knew is gone (expired, its children with it): forgets
   * them, and wakes every waiter to look again, on the new session (each is queued again there).
   */
  forgetSession(): void {
    this.#mine.clear();
    this.#known.clear();
    this.#watched.clear(); // the old session's watches: a new read on the new session arms its own
    for (const wake of this.#wakers) wake();
  }

  /** Waits a little before a call is sent again after a lost connection, and for a live session (a new one after an expiry). */
  async #backOff(scope: WaitScope): Promise<void> {
    await backOff(scope);
    await scope.race(this.session()).catch((error: unknown) => lookAgain(error, scope));
  }

  /** Tells the waiter behind a semaphore holder that it holds now (its watch on our data fires); the child's new data version. */
  async #announce(child: string): Promise<number> {
    return (await this.ops.setData(child, countData(1), -1).catch(() => undefined))?.version ?? -1;
  }

  /**
   * Writes hold count `count` into the child at `path` if its data version is still `version`:
   * `'changed'` when another write came first, `'gone'` when the child is gone. A write whose answer
   * was lost with the connection may or may not have been applied, and sent again blindly it would
   * count twice (a release taken twice frees the lock under its holder). So it looks: the child
   * holding this write's data (tagged, unique) is this write applied; still at `version`, it was not
   * (sent again, where a "bad version" means the first one just landed: look again).
   */
  async #writeCount(path: string, count: number, version: number): Promise<Stat | 'changed' | 'gone'> {
    const data = countData(count);
    try {
      return await this.ops.setData(path, data, version);
    } catch (error) {
      const code = zkCode(error);
      if (code === ZK.badVersion) return 'changed';
      if (code === ZK.noNode) return 'gone';
      if (code !== ZK.connectionLoss) throw error;
    }
    for (;;) {
      const read = await this.ops.whileConnectionLost(() => this.ops.data(path));
      if (read === undefined) return 'gone';
      if (read.data.equals(data)) return read.stat;
      if (read.stat.version !== version) return 'changed';
      try {
        return await this.ops.whileConnectionLost(() => this.ops.setData(path, data, version));
      } catch (error) {
        const code = zkCode(error);
        if (code === ZK.noNode) return 'gone';
        if (code !== ZK.badVersion) throw error;
      }
    }
  }

  /** A fresh grant, remembered for its release. */
  #granted(owner: string, path: string, version: number, fence: number, queued: boolean): ZooKeeperGrant {
    const role = parseParticipant(path.slice(this.path.length + 1))?.role ?? 'lock';
    this.#known.set(knownKey(owner, [role]), { path, version, count: 1, queued });
    return { path, fence, holdCount: 1 };
  }

  /** `owner`'s child of one of `roles` (a full path), if it has one. */
  async #childOf(owner: string, roles: readonly Role[]): Promise<string | undefined> {
    const queue = queueOf((await this.ops.children(this.path)) ?? []);
    const child = queue.find((p) => p.owner === owner && roles.includes(p.role));
    return child === undefined ? undefined : `${this.path}/${child.name}`;
  }
}

/** Waits a little before a call is sent again after a lost connection (a closed client loses every call at once). */
function backOff(scope: WaitScope): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const slept = new Promise<void>((resolve) => (timer = setTimeout(resolve, 50)));
  return waitFor(slept, scope).finally(() => clearTimeout(timer));
}

/**
 * `undefined` when a wait looks again: a lost connection or session (on a new session for the
 * latter), or a call with no reply in time while a finite `waitMs` has time left (an outage is
 * ridden out within it, as on Redis; a wait without one reports the first); else rethrows.
 */
function lookAgain(error: unknown, scope: WaitScope): undefined {
  const code = zkCode(error);
  if (code === ZK.connectionLoss || code === ZK.sessionExpired) return undefined;
  // No session will serve again (an expired one, and no factory to make another): said at once.
  if (error instanceof ZooKeeperSessionExpiredError && !error.renewing) throw error;
  if (error instanceof StoreUnavailableError && scope.waitMs > 0 && scope.waitMs !== Infinity && scope.remainingMs > 0) return undefined;
  throw error;
}

/** An owner's entry in what this client knows of its children: one per side (a downgrading writer has a write child and a read child). */
function knownKey(owner: string, roles: readonly Role[]): string {
  const role = roles[0] ?? 'lock';
  return `${role === 'down' ? 'read' : role}.${owner}`;
}

/** Every role (a release by owner alone). */
const ROLES: readonly Role[] = ['lock', 'read', 'down', 'permit'];

/** A limit stored in a lock's znode, if its data is one. */
export function limitIn(data: Buffer | undefined): number | undefined {
  const text = data?.toString() ?? '';
  const limit = Number(text);
  return text !== '' && Number.isInteger(limit) && limit >= 1 ? limit : undefined;
}

/** Resolves when `wake` does, or rejects with the scope's reason when it stops first. */
function waitFor(wake: Promise<void>, scope: WaitScope): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const stop = scope.stop.onAbort(() => reject(scope.stop.reason));
    void wake.then(() => {
      stop();
      resolve();
    });
  });
}
