/**
 * The protocol of the mutex family (`mutex` and `fairMutex`, which share one hash and queue): which
 * script each step runs, with which keys and arguments. Calls are built here and run by a topology;
 * their replies are typed in scripts/index.ts. See docs/protocol.md.
 */
import { scriptKeys, waiterChannel, type LockKeys } from '../../../keys.js';
import {
  acquireScript,
  enqueueScript,
  forceReleaseScript,
  inspectScript,
  leaveScript,
  reapScript,
  reenterScript,
  releaseScript,
  renewScript,
  type AcquireReply,
  type HolderReply,
  type InspectReply,
  type ReapReply,
  type ReleaseReply,
} from '../scripts/index.js';
import type { Arg } from '../adapters/connection.js';
import { newRequestId } from '../../../tokens.js';
import { anyQuorum, grantQuorum, readQuorum, reapQuorum, releaseQuorum, renewQuorum } from '../topology/quorum.js';
import type { Granted, ScriptCall } from '../topology/topology.js';

/** A waiter that missed this many heartbeats in a row is taken for dead and skipped. */
export const HEARTBEATS_ALLOWED = 3;

/** How an attempt treats the queue: take a free lock only, or also join (or refresh) the queue, at its tail or head. */
export type QueueMode = 'try' | 'queue' | 'requeue';

/** How a free lock is shared out: anyone may take it (`mutex`), or the queue's head first (`fair`). */
export type MutexKind = 'mutex' | 'fair';

/** A hold as renewal needs it. */
export interface Renewable {
  readonly keys: LockKeys;
  readonly owner: string;
  readonly leaseMs: number;
}

export class MutexProtocol {
  constructor(
    readonly keys: LockKeys,
    readonly kind: MutexKind,
    /** The Padlock's id: its waiters' channel carries it, and the holds it takes record it. */
    readonly clientId: string,
    /** Whether the lock's channels are sharded (SPUBLISH/SSUBSCRIBE: a Cluster) or classic. */
    readonly sharded = false,
  ) {}

  /** The command the scripts publish with. */
  get #publish(): 'SPUBLISH' | 'PUBLISH' {
    return publishCommand(this.sharded);
  }

  /** The channel on which this Padlock's waiters of this lock are woken or handed the lock. */
  get waiterChannel(): string {
    return waiterChannel(this.keys, this.clientId);
  }

  /**
   * Takes the lock for a new `owner` if free. `try` never queues; `queue` (at the tail) and `requeue`
   * (at the head) make an owner that must wait join the queue, or refresh its heartbeat there.
   * `ticket` is when the wait began (ms, this client's clock): sent only by a topology of several
   * servers (with the fence it proposes, see `ScriptCall.proposing`), where every server orders its
   * queue by it, so that they all wake the same waiter first. One server orders waiters as they come.
   * `place` finds the waiter's entry in the queue: the entry its last call returned (busy replies
   * carry it), `''` when it is in no queue (its first join, or woken with its entry taken out), `'?'`
   * when it does not know (then the queue is searched).
   */
  attempt(owner: string, leaseMs: number, mode: QueueMode, heartbeatMs: number, ticket = 0, place = ''): ScriptCall<AcquireReply> {
    return new AttemptCall(this, owner, leaseMs, mode, heartbeatMs, ticket, place, 0);
  }

  /** @internal An attempt as {@link attempt} builds it, proposing `fence` (0: none). */
  attemptProposing(owner: string, leaseMs: number, mode: QueueMode, heartbeatMs: number, ticket: number, place: string, fence: number): ScriptCall<AcquireReply> {
    return new AttemptCall(this, owner, leaseMs, mode, heartbeatMs, ticket, place, fence);
  }

  /** @internal An acquire reply grants one hold of `owner`, which a release of one gives back. */
  grantsOf(owner: string): (reply: AcquireReply) => Granted | undefined {
    return this.#grants(owner);
  }

  /** Adds one hold for an `owner` that holds the lock (`not-held` otherwise), and this client to its clients; never shortens the lease. */
  reenter(owner: string, leaseMs: number): ScriptCall<AcquireReply> {
    const quorum = grantQuorum(owner, leaseMs, false);
    return { script: reenterScript, keys: [this.keys.lock], args: [owner, leaseMs, newRequestId(), this.clientId], lock: this.keys.name, quorum, grants: this.#grants(owner) };
  }

  /** An acquire reply grants one hold of `owner`, which a release of one gives back. */
  #grants(owner: string): (reply: AcquireReply) => Granted | undefined {
    return (reply) => (reply.status === 'acquired' ? { undo: this.release(owner, 1) } : undefined);
  }

  /** Releases `count` holds of `owner`; the last one frees the lock and gives the turn to the queue. */
  release(owner: string, count: number): ScriptCall<ReleaseReply> {
    return { script: releaseScript, keys: scriptKeys(this.keys), args: [owner, count, newRequestId(), this.keys.released, this.#publish], lock: this.keys.name, quorum: releaseQuorum };
  }

  /** Takes a waiter that gave up out of the queue, passing on a turn it was given (`only`: leaves the queue and nothing more). Idempotent. */
  leave(owner: string, only = false): ScriptCall<boolean> {
    return { script: leaveScript, keys: scriptKeys(this.keys), args: [owner, this.keys.released, this.#publish, only ? 'only' : 'pass-on'], lock: this.keys.name, quorum: anyQuorum };
  }

  /** Deletes the lock whoever holds it and gives the turn to the queue. */
  forceRelease(): ScriptCall<boolean> {
    return { script: forceReleaseScript, keys: scriptKeys(this.keys), args: [this.keys.released, this.#publish], lock: this.keys.name, quorum: anyQuorum };
  }

  /** Reads the lock's holders, fence and remaining lease. */
  inspect(): ScriptCall<InspectReply> {
    return { script: inspectScript, keys: [this.keys.lock], args: [], lock: this.keys.name, quorum: readQuorum };
  }

  /**
   * Frees the lock of `keys` if `holder` still holds it and its clients are dead, giving the turn to
   * the queue: `liveness` are the clients' liveness keys, checked in the script (on the lock's
   * server); `undefined` when the caller checked them elsewhere just before (a Cluster).
   */
  static reap(keys: LockKeys, holder: HolderReply, liveness: readonly string[] | undefined, sharded: boolean): ScriptCall<ReapReply> {
    return {
      script: reapScript,
      keys: [...scriptKeys(keys), ...(liveness ?? [])],
      args: [holder.owner, holder.clients, keys.released, publishCommand(sharded), liveness === undefined ? 'checked' : 'here'],
      lock: keys.name,
      quorum: reapQuorum,
    };
  }

  /** Lengthens each hold's lease to at least its `leaseMs` (or `ms`, for one) while its owner still holds it; 0 for those it does not. */
  static renew(holds: readonly Renewable[], ms?: number): ScriptCall<number[]> {
    return {
      script: renewScript,
      keys: holds.map((h) => h.keys.lock),
      args: holds.flatMap((h) => [h.owner, ms ?? h.leaseMs]),
      lock: holds.length === 1 ? holds[0]?.keys.name : undefined,
      quorum: renewQuorum(holds.length, Math.min(...holds.map((h) => ms ?? h.leaseMs))),
      // A renewal lengthens holds; one that replicas did not acknowledge simply does not count.
      grants: () => ({ undo: undefined }),
    };
  }
}

/**
 * An attempt (acquire.lua, or enqueue.lua when it may queue). What only a topology of several servers
 * or one that acknowledges grants reads (its quorum rule, the calls that undo it, the same call
 * proposing a fence) is made when first read, once: one server, the common case, never reads it, and
 * an uncontended acquisition is spared a release call (with its request id) and four closures.
 */
class AttemptCall implements ScriptCall<AcquireReply> {
  readonly script: ScriptCall<AcquireReply>['script'];
  readonly keys: readonly string[];
  readonly args: readonly Arg[];
  readonly lock: string;
  #quorum: ScriptCall<AcquireReply>['quorum'] | undefined;
  #undoUnanswered: ScriptCall<ReleaseReply> | undefined;
  #unqueue: ScriptCall<boolean> | undefined;

  constructor(
    private readonly protocol: MutexProtocol,
    private readonly owner: string,
    private readonly leaseMs: number,
    private readonly mode: QueueMode,
    private readonly heartbeatMs: number,
    private readonly ticket: number,
    private readonly place: string,
    fence: number,
  ) {
    const { keys, kind, clientId } = protocol;
    this.keys = scriptKeys(keys);
    this.lock = keys.name;
    if (mode === 'try') {
      this.script = acquireScript;
      this.args = [owner, leaseMs, kind, fence, clientId];
    } else {
      this.script = enqueueScript;
      const allowance = heartbeatMs * HEARTBEATS_ALLOWED;
      this.args = [owner, leaseMs, kind, clientId, allowance, mode === 'queue' ? 'tail' : 'head', fence, fence > 0 ? ticket : 0, place];
    }
  }

  get quorum(): ScriptCall<AcquireReply>['quorum'] {
    return (this.#quorum ??= grantQuorum(this.owner, this.leaseMs, true));
  }

  get grants(): (reply: AcquireReply) => Granted | undefined {
    return this.protocol.grantsOf(this.owner);
  }

  /** The owner is fresh: releasing one hold of it where nothing was granted changes nothing. */
  get undoUnanswered(): ScriptCall<ReleaseReply> {
    return (this.#undoUnanswered ??= this.protocol.release(this.owner, 1));
  }

  get unqueue(): ScriptCall<boolean> | undefined {
    if (this.mode === 'try') return undefined;
    return (this.#unqueue ??= this.protocol.leave(this.owner, true));
  }

  get proposing(): (proposed: number) => ScriptCall<AcquireReply> {
    return (proposed) => this.protocol.attemptProposing(this.owner, this.leaseMs, this.mode, this.heartbeatMs, this.ticket, this.place, proposed);
  }
}

/** The command the scripts publish with: sharded on a Cluster. Every kind's protocol uses it. */
export function publishCommand(sharded: boolean): 'SPUBLISH' | 'PUBLISH' {
  return sharded ? 'SPUBLISH' : 'PUBLISH';
}
