/**
 * The protocol of the semaphore: its keys, and which script each step runs with which arguments.
 * Calls are built here and run by a topology; their replies are typed in scripts/index.ts. See
 * docs/protocol.md, "Semaphore". Each call's quorum rule is one server's: servers that each cap their
 * own holders do not cap the holders of majorities, so a topology of several servers (Redlock) refuses
 * the kind.
 */
import { hashTag, waiterChannel, type LockKeys } from '../../../keys.js';
import {
  semaphoreAcquireScript,
  semaphoreForceReleaseScript,
  semaphoreInspectScript,
  semaphoreLeaveScript,
  semaphoreReenterScript,
  semaphoreReleaseScript,
  semaphoreRenewScript,
  semaphoreSetPermitsScript,
  type AcquireReply,
  type ReleaseReply,
  type SemaphoreInspectReply,
} from '../scripts/index.js';
import { newRequestId } from '../../../tokens.js';
import { oneServerOnly } from '../topology/quorum.js';
import type { Granted, ScriptCall } from '../topology/topology.js';
import { HEARTBEATS_ALLOWED, publishCommand, type QueueMode, type Renewable } from './mutex-protocol.js';

/**
 * A semaphore's keys: `P:{name}:semaphore` (meta: limit, fence, request log) stands as the lock key
 * (holds are found and grouped by it); holders and leases are derived from it
 * ({@link semaphoreScriptKeys}). None of the suffixes is one the CLI reads as a mutex's.
 */
export function semaphoreKeys(prefix: string, name: string): LockKeys {
  const base = `${prefix}:{${hashTag(name)}}`;
  return {
    name,
    lock: `${base}:semaphore`,
    queue: `${base}:semaphore-queue`,
    released: `${base}:semaphore-released`,
  };
}

/** The four keys the semaphore's scripts take, in their `KEYS` order: meta, holders, leases, queue. */
export function semaphoreScriptKeys(keys: LockKeys): string[] {
  return [keys.lock, `${keys.lock}-holders`, `${keys.lock}-leases`, keys.queue];
}

export class SemaphoreProtocol {
  constructor(
    readonly keys: LockKeys,
    /** The limit when none is stored in Redis: the `permits` the semaphore was made with. */
    readonly defaultLimit: number,
    /** The Padlock's id: its waiters' channel carries it, and the holds it takes record it. */
    readonly clientId: string,
    /** Whether the lock's channels are sharded (SPUBLISH/SSUBSCRIBE: a Cluster) or classic. */
    readonly sharded: boolean,
  ) {}

  get #publish(): 'SPUBLISH' | 'PUBLISH' {
    return publishCommand(this.sharded);
  }

  /** The channel on which this Padlock's waiters of this semaphore are handed their permits. */
  get waiterChannel(): string {
    return waiterChannel(this.keys, this.clientId);
  }

  /**
   * Takes `permits` for a fresh `owner` if they are free and nobody live waits ahead; `try` never
   * queues, `queue` joins at the tail (or refreshes the owner's place: a heartbeat), `requeue` at the
   * head. `place`: the waiter's entry as its last call returned it (see MutexProtocol.attempt).
   */
  attempt(owner: string, permits: number, leaseMs: number, mode: QueueMode, heartbeatMs: number, place = ''): ScriptCall<AcquireReply> {
    const where = mode === 'try' ? 'try' : mode === 'queue' ? 'tail' : 'head';
    const args = [owner, leaseMs, permits, this.defaultLimit, this.clientId, where, heartbeatMs * HEARTBEATS_ALLOWED, this.keys.released, this.#publish, place];
    // The owner is fresh: releasing one hold of it where nothing was granted changes nothing.
    const undo = this.release(owner, 1);
    return { script: semaphoreAcquireScript, keys: semaphoreScriptKeys(this.keys), args, lock: this.keys.name, quorum: oneServerOnly(), grants: this.#grants(owner), undoUnanswered: undo };
  }

  /** Adds one hold (on the same permits) for an `owner` that holds permits (`not-held` otherwise); never shortens the lease. */
  reenter(owner: string, leaseMs: number): ScriptCall<AcquireReply> {
    const args = [owner, leaseMs, newRequestId(), this.clientId, this.defaultLimit, this.keys.released, this.#publish];
    return { script: semaphoreReenterScript, keys: semaphoreScriptKeys(this.keys), args, lock: this.keys.name, quorum: oneServerOnly(), grants: this.#grants(owner) };
  }

  /** An acquire reply grants one hold of `owner`, which a release of one gives back. */
  #grants(owner: string): (reply: AcquireReply) => Granted | undefined {
    return (reply) => (reply.status === 'acquired' ? { undo: this.release(owner, 1) } : undefined);
  }

  /** Releases `count` holds of `owner`; the last one returns its permits and admits the waiters that fit. */
  release(owner: string, count: number): ScriptCall<ReleaseReply> {
    const args = [owner, count, newRequestId(), this.defaultLimit, this.keys.released, this.#publish];
    return { script: semaphoreReleaseScript, keys: semaphoreScriptKeys(this.keys), args, lock: this.keys.name, quorum: oneServerOnly() };
  }

  /** Takes a waiter that gave up out of the queue, returning permits handed to it meanwhile. Idempotent. */
  leave(owner: string): ScriptCall<boolean> {
    const args = [owner, this.defaultLimit, this.keys.released, this.#publish];
    return { script: semaphoreLeaveScript, keys: semaphoreScriptKeys(this.keys), args, lock: this.keys.name, quorum: oneServerOnly() };
  }

  /** Frees every permit whoever holds it, and admits the waiters that fit. */
  forceRelease(): ScriptCall<boolean> {
    const args = [this.defaultLimit, this.keys.released, this.#publish];
    return { script: semaphoreForceReleaseScript, keys: semaphoreScriptKeys(this.keys), args, lock: this.keys.name, quorum: oneServerOnly() };
  }

  /** Stores the limit `permits`: waiters that now fit are admitted, those asking more than it are refused. */
  setPermits(permits: number): ScriptCall<number> {
    const args = [permits, this.keys.released, this.#publish];
    return { script: semaphoreSetPermitsScript, keys: semaphoreScriptKeys(this.keys), args, lock: this.keys.name, quorum: oneServerOnly() };
  }

  /** Reads the limit and the permits held, on the server's clock. */
  inspect(): ScriptCall<SemaphoreInspectReply> {
    return { script: semaphoreInspectScript, keys: semaphoreScriptKeys(this.keys), args: [this.defaultLimit], lock: this.keys.name, quorum: oneServerOnly() };
  }

  /** Reads the limit, each live holder, the first `waiters` queued waiters and the keys' TTLs (the CLI's `inspect`). */
  describe(waiters: number): ScriptCall<SemaphoreInspectReply> {
    return { script: semaphoreInspectScript, keys: semaphoreScriptKeys(this.keys), args: [this.defaultLimit, waiters], lock: this.keys.name, quorum: oneServerOnly() };
  }

  /** Lengthens each hold's lease to at least its `leaseMs` (or `ms`) while its owner holds permits; 0 for those it does not. */
  static renew(holds: readonly Renewable[], ms?: number): ScriptCall<number[]> {
    return {
      script: semaphoreRenewScript,
      keys: holds.flatMap((h) => semaphoreScriptKeys(h.keys).slice(0, 3)),
      args: holds.flatMap((h) => [h.owner, ms ?? h.leaseMs]),
      lock: holds.length === 1 ? holds[0]?.keys.name : undefined,
      quorum: oneServerOnly(),
      // A renewal lengthens holds; one that replicas did not acknowledge simply does not count.
      grants: () => ({ undo: undefined }),
    };
  }
}
