/**
 * The protocol of the read/write lock: its key layout and which script each step runs, with which
 * keys and arguments. Calls are built here and run by a topology; their replies are typed in
 * scripts/index.ts. See docs/protocol.md, "Read/write lock". Each call's quorum rule is one server's:
 * readers admitted together and a writer handed the lock are decided inside one server's scripts, so a
 * topology of several servers (Redlock) refuses the kind.
 */
import { hashTag, waiterChannel, type LockKeys } from '../../../keys.js';
import {
  readWriteAcquireScript,
  readWriteForceReleaseScript,
  readWriteInspectScript,
  readWriteLeaveScript,
  readWriteReenterScript,
  readWriteReleaseScript,
  readWriteRenewScript,
  type AcquireReply,
  type ReadWriteInspectReply,
  type ReadWriteReenterReply,
  type ReleaseReply,
} from '../scripts/index.js';
import { newRequestId } from '../../../tokens.js';
import { oneServerOnly } from '../topology/quorum.js';
import type { Granted, ScriptCall } from '../topology/topology.js';
import { HEARTBEATS_ALLOWED, publishCommand, type QueueMode } from './mutex-protocol.js';

/** The two sides of a read/write lock. */
export type ReadWriteSide = 'read' | 'write';

/**
 * The keys of one side of a read/write lock. Both sides share every key; they differ only in the
 * `lock` they present, which names the side in this process's hold registry and async context, so
 * that holding one side never makes an acquisition of the other a re-entry of it. Both are keys of
 * the lock (in its slot): the write side presents the state hash, the read side the leases set.
 */
export interface ReadWriteKeys extends LockKeys {
  readonly side: ReadWriteSide;
  /** Hash: `fence`, `log`, `writer` (the write hold's owner), and `r:<owner>` / `w:<owner>` → hold count. */
  readonly state: string;
  /** Sorted set: `r:<owner>` / `w:<owner>` → the hold's expiry, ms on the server's clock. */
  readonly leases: string;
}

/** The key layout of `side` of the read/write lock `name`; suffixes differ from the mutex family's, so `padlock list` never misreads them. */
export function readWriteKeys(side: ReadWriteSide): (prefix: string, name: string) => ReadWriteKeys {
  return (prefix, name) => {
    const base = `${prefix}:{${hashTag(name)}}`;
    const state = `${base}:rw`;
    const leases = `${base}:rwleases`;
    return {
      name,
      side,
      state,
      leases,
      lock: side === 'write' ? state : leases,
      queue: `${base}:rwqueue`,
      released: `${base}:rwreleased`,
    };
  };
}

/** Whether `keys` are a read/write lock's (every hold of the family carries them). */
export function isReadWriteKeys(keys: LockKeys): keys is ReadWriteKeys {
  return 'side' in keys && 'leases' in keys;
}

/** A hold's member in the leases set (and field in the state hash). */
export function holdMember(side: ReadWriteSide, owner: string): string {
  return `${side === 'write' ? 'w' : 'r'}:${owner}`;
}

/** A read/write hold as renewal needs it. */
export interface ReadWriteRenewable {
  readonly keys: LockKeys;
  readonly owner: string;
  readonly leaseMs: number;
}

export class ReadWriteProtocol {
  readonly #all: readonly string[];

  constructor(
    readonly keys: ReadWriteKeys,
    /** The Padlock's id: its waiters' channel carries it. */
    readonly clientId: string,
    /** Whether the lock's channels are sharded (SPUBLISH/SSUBSCRIBE: a Cluster) or classic. */
    readonly sharded: boolean,
  ) {
    this.#all = [keys.state, keys.leases, keys.queue];
  }

  get #publish(): 'SPUBLISH' | 'PUBLISH' {
    return publishCommand(this.sharded);
  }

  /** The channel on which this Padlock's waiters of this lock are handed their hold. */
  get waiterChannel(): string {
    return waiterChannel(this.keys, this.clientId);
  }

  /** Takes this side for a fresh `owner` if the lock allows it; `queue`/`requeue` join the queue (tail/head) or refresh the owner's place there. */
  attempt(owner: string, leaseMs: number, mode: QueueMode, heartbeatMs: number, _ticket = 0, place = ''): ScriptCall<AcquireReply> {
    const where = mode === 'try' ? 'try' : mode === 'queue' ? 'tail' : 'head';
    return this.#acquire(owner, leaseMs, where, heartbeatMs * HEARTBEATS_ALLOWED, '', place);
  }

  /** A read hold for a fresh `owner` whose async context holds the write lock as `writer`: granted whatever is queued, while `writer` holds it. */
  downgrade(owner: string, writer: string, leaseMs: number): ScriptCall<AcquireReply> {
    return this.#acquire(owner, leaseMs, 'try', 0, writer, '');
  }

  #acquire(owner: string, leaseMs: number, where: string, allowanceMs: number, writer: string, place: string): ScriptCall<AcquireReply> {
    // The owner is fresh: releasing one hold of it where nothing was granted changes nothing.
    const undo = this.release(owner, 1);
    return {
      script: readWriteAcquireScript,
      keys: this.#all,
      args: [this.keys.side, owner, leaseMs, where, this.clientId, allowanceMs, writer, this.keys.released, this.#publish, place],
      lock: this.keys.name,
      quorum: oneServerOnly(),
      grants: (reply) => (reply.status === 'acquired' ? { undo } : undefined),
      undoUnanswered: undo,
    };
  }

  /** One more hold for an `owner` that holds this side (read side: or the write side, a downgrade); `upgrade` when a reader asks for the write side. */
  reenter(owner: string, leaseMs: number): ScriptCall<ReadWriteReenterReply> {
    return {
      script: readWriteReenterScript,
      keys: [this.keys.state, this.keys.leases],
      args: [this.keys.side, owner, leaseMs, newRequestId()],
      lock: this.keys.name,
      quorum: oneServerOnly(),
      grants: (reply): Granted | undefined => (reply.status === 'acquired' ? { undo: this.release(owner, 1) } : undefined),
    };
  }

  /** Releases `count` holds of `owner` on this side; the last one admits the waiters the lock then allows. */
  release(owner: string, count: number): ScriptCall<ReleaseReply> {
    return {
      script: readWriteReleaseScript,
      keys: this.#all,
      args: [this.keys.side, owner, count, newRequestId(), this.keys.released, this.#publish],
      lock: this.keys.name,
      quorum: oneServerOnly(),
    };
  }

  /** Takes a waiter that gave up out of the queue, freeing what it was given meanwhile. Idempotent. */
  leave(owner: string): ScriptCall<boolean> {
    return { script: readWriteLeaveScript, keys: this.#all, args: [owner, this.keys.released, this.#publish], lock: this.keys.name, quorum: oneServerOnly() };
  }

  /** Takes away every hold of this side, whoever holds it. */
  forceRelease(): ScriptCall<boolean> {
    return { script: readWriteForceReleaseScript, keys: this.#all, args: [this.keys.side, this.keys.released, this.#publish], lock: this.keys.name, quorum: oneServerOnly() };
  }

  /** Reads who holds the lock. */
  inspect(): ScriptCall<ReadWriteInspectReply> {
    return { script: readWriteInspectScript, keys: [this.keys.state, this.keys.leases], args: [], lock: this.keys.name, quorum: oneServerOnly() };
  }

  /** Reads who holds the lock, each hold, the first `waiters` queued waiters and the keys' TTLs (the CLI's `inspect`). */
  describe(waiters: number): ScriptCall<ReadWriteInspectReply> {
    return { script: readWriteInspectScript, keys: this.#all, args: [waiters], lock: this.keys.name, quorum: oneServerOnly() };
  }

  /** Lengthens each hold's own lease to at least its `leaseMs` (or `ms`, for one) while it is held; 0 for those that are not. */
  static renew(holds: readonly ReadWriteRenewable[], ms?: number): ScriptCall<number[]> {
    const keys: string[] = [];
    const args: (string | number)[] = [];
    for (const hold of holds) {
      if (!isReadWriteKeys(hold.keys)) throw new TypeError(`not a read/write lock's hold: ${hold.keys.name}`);
      keys.push(hold.keys.state, hold.keys.leases);
      args.push(holdMember(hold.keys.side, hold.owner), ms ?? hold.leaseMs);
    }
    return {
      script: readWriteRenewScript,
      keys,
      args,
      lock: holds.length === 1 ? holds[0]?.keys.name : undefined,
      quorum: oneServerOnly(),
      // A renewal lengthens holds; one that replicas did not acknowledge simply does not count.
      grants: () => ({ undo: undefined }),
    };
  }
}
