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
 */
import { LockNotHeldError } from '../../errors.js';
import type { WaitScope } from '../../wait-scope.js';
import { queueOf, stemOf, turnOf, type Participant, type Role } from './znode-queue.js';
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

const countData = (count: number): Buffer => Buffer.from(String(count));

/** What this client last wrote to an owner's child: a release that finds it unchanged needs no read first. */
interface Known {
  readonly path: string;
  /** The child's data version after that write. */
  readonly version: number;
  readonly count: number;
}

export class ZooKeeperLock {
  /** Whether this client saw the lock's znode last time (so the next take tries the cheaper call first). */
  #znodeSeen = false;
  readonly #known = new Map<string, Known>();

  constructor(
    private readonly ops: ZooKeeperOps,
    /** The lock's znode. */
    readonly path: string,
    /** The lock's name, for errors. */
    readonly name: string,
    /** The semaphore's limit (1 for other kinds). */
    readonly limit: number,
  ) {}

  /**
   * Takes the lock for `request`, waiting within `scope` when `wait` (else one attempt: `null` when
   * held). An aborted or timed-out wait leaves nothing behind: its child is deleted.
   */
  async take(request: Request, scope: WaitScope, wait: boolean): Promise<ZooKeeperGrant | null> {
    const joined = await scope.race(this.#join(request), (late) => void this.#leave(late.path));
    const mine = joined.path;
    const name = mine.slice(this.path.length + 1);
    let waited = false;
    try {
      // The lock's first participant holds: its child's stat came in the same round trip.
      const firstStat = joined.first === undefined ? undefined : await scope.race(joined.first);
      if (firstStat !== undefined) return this.#granted(request.owner, mine, firstStat.version, creationZxid(firstStat));
      for (;;) {
        scope.check();
        let woken: (() => void) | undefined;
        const wake = new Promise<void>((resolve) => (woken = resolve));
        const [names, stat] = await scope.race(Promise.all([this.ops.children(this.path), this.ops.exists(mine)]));
        const turn = turnOf(queueOf(names ?? []), name, this.limit);
        if (turn === undefined || stat === undefined) throw new LockNotHeldError(this.name, request.owner, 'acquire');
        if (turn.holds) {
          const version = request.role === 'permit' && waited ? await this.#announce(mine) : stat.version;
          return this.#granted(request.owner, mine, version, creationZxid(stat));
        }
        scope.foundHeld();
        if (!wait) {
          await this.#leave(mine);
          return null;
        }
        // A watch on each child that may let us in; any one firing (or already gone) means look again.
        const watched = await scope.race(Promise.all(turn.watch.map((child) => this.ops.exists(`${this.path}/${child}`, () => woken?.()))));
        waited = true;
        if (watched.some((s) => s === undefined)) continue;
        await waitFor(wake, scope);
      }
    } catch (error) {
      void this.#leave(mine);
      throw error;
    }
  }

  /** Adds one hold to `owner`'s child (a re-entry); `null` when `owner` has none here. */
  async reenter(owner: string): Promise<ZooKeeperGrant | null> {
    for (;;) {
      const child = await this.#childOf(owner);
      if (child === undefined) return null;
      const read = await this.ops.data(child);
      if (read === undefined) return null;
      const count = Number(read.data.toString() || '1') + 1;
      try {
        const written = await this.ops.setData(child, countData(count), read.stat.version);
        this.#known.set(owner, { path: child, version: written.version, count });
        return { path: child, fence: creationZxid(read.stat), holdCount: count };
      } catch (error) {
        if (zkCode(error) === ZK.badVersion) continue; // another re-entry or release came between
        if (zkCode(error) === ZK.noNode) return null;
        throw error;
      }
    }
  }

  /** Releases `count` of `owner`'s holds; resolves with how many it has left. Rejects `LockNotHeldError`. */
  async release(owner: string, count: number): Promise<number> {
    const known = this.#known.get(owner);
    this.#known.delete(owner);
    if (known !== undefined) {
      // Unchanged since this client's own write (no re-entry elsewhere): one round trip, no read.
      try {
        const left = known.count - count;
        if (left <= 0) {
          if (await this.ops.removeWithParent(known.path, this.path, known.version)) return 0;
          throw new LockNotHeldError(this.name, owner, 'release');
        }
        const written = await this.ops.setData(known.path, countData(left), known.version);
        this.#known.set(owner, { path: known.path, version: written.version, count: left });
        return left;
      } catch (error) {
        if (zkCode(error) !== ZK.badVersion) throw error;
      }
    }
    for (;;) {
      const child = await this.#childOf(owner);
      const read = child === undefined ? undefined : await this.ops.data(child);
      if (child === undefined || read === undefined) throw new LockNotHeldError(this.name, owner, 'release');
      const left = Number(read.data.toString() || '1') - count;
      if (left <= 0) {
        if (!(await this.ops.removeWithParent(child, this.path))) throw new LockNotHeldError(this.name, owner, 'release');
        return 0;
      }
      try {
        await this.ops.setData(child, countData(left), read.stat.version);
        return left;
      } catch (error) {
        if (zkCode(error) !== ZK.badVersion) throw error;
      }
    }
  }

  /** Releases the hold whose child is `path` outright (every count); false when it was gone. */
  releasePath(path: string): Promise<boolean> {
    return this.ops.removeWithParent(path, this.path);
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
    const queue = queueOf((await this.ops.children(this.path)) ?? []);
    const holders: Participant[] = [];
    const waiters: Participant[] = [];
    queue.forEach((p, index) => (turnOf(queue, p.name, this.limit)?.holds === true && index >= 0 ? holders : waiters).push(p));
    return { holders, waiters };
  }

  /**
   * Creates this participant's child, and the lock's znode with it when there is none. A child that
   * created the lock's znode is its first (`<stem>-0000000000`, as a new znode's children count from
   * 0): its stat is asked for in the same round trip (`first`), and it holds without a look at the queue.
   */
  async #join(request: Request): Promise<{ path: string; first?: Promise<Stat | undefined> }> {
    const stem = stemOf(request.role, request.owner, request.permits);
    const data = countData(1);
    for (;;) {
      try {
        if (!this.#znodeSeen) {
          const created = this.ops.createWithParent(this.path, stem, data);
          // Sent right behind the create, on the same socket: answered after it, in one round trip.
          const first = this.ops.exists(`${this.path}/${stem}-0000000000`).catch(() => undefined);
          return { path: await created, first };
        }
        return { path: await this.ops.createSequential(this.path, stem, data) };
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

  /** Deletes a child this client made (an abandoned wait); the lock's znode too when it was the last. */
  async #leave(child: string): Promise<void> {
    await this.ops.removeWithParent(child, this.path).catch(() => undefined);
  }

  /** Tells the waiter behind a semaphore holder that it holds now (its watch on our data fires); the child's new data version. */
  async #announce(child: string): Promise<number> {
    return (await this.ops.setData(child, countData(1), -1).catch(() => undefined))?.version ?? -1;
  }

  /** A fresh grant, remembered for its release. */
  #granted(owner: string, path: string, version: number, fence: number): ZooKeeperGrant {
    this.#known.set(owner, { path, version, count: 1 });
    return { path, fence, holdCount: 1 };
  }

  /** `owner`'s child (a full path), if it has one. */
  async #childOf(owner: string): Promise<string | undefined> {
    const queue = queueOf((await this.ops.children(this.path)) ?? []);
    const child = queue.find((p) => p.owner === owner);
    return child === undefined ? undefined : `${this.path}/${child.name}`;
  }
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
