/**
 * Inside the Redis store (stores/redis/redis-store.ts): the seam between its lock kinds and the Redis
 * servers. A Redis kind says *what* to run (a {@link ScriptCall} of its protocol); a topology runs it
 * *where the keys live* and says what the answers add up to. The Redis kinds, the store's renewals
 * and its subscriber speak only to a topology; none of them knows whether it is one server, a
 * Sentinel-managed primary, a Cluster or a Redlock set of independent masters.
 *
 * Where the later topologies plug in:
 * - Redlock: `send`/`run` fan a call out to every master and combine the replies by the quorum rule
 *   the call states (quorum.ts); `groupOf` groups by master set (one round trip per master per tick).
 * - Replica acknowledgement: `run`/`send` pipeline `WAIT min timeout` after a call that writes.
 * - Cluster: the client routes by slot; `groupOf` groups renewals by the node that owns the slot.
 *
 * This seam speaks Redis (script calls, slots, pub/sub). The seam between stores is above the lock
 * kinds (store.ts).
 */
import type { RedisUnavailableError } from '../../../errors.js';
import type { SubscriberConnection } from '../adapters/connection.js';
import type { ScriptSend } from '../adapters/script-runner.js';
import type { Quorum } from './quorum.js';

export type { LockKindName } from '../../../store.js';
import type { LockKindName } from '../../../store.js';

/**
 * One call of a lock kind's protocol: a script, the keys it touches (all in one slot), its arguments
 * and the lock's name (for errors), with how a topology of several servers adds up their answers.
 */
export interface ScriptCall<Result> extends ScriptSend<Result> {
  /**
   * How a topology of several servers (Redlock) combines their replies: stated by whoever builds the
   * call, typed by its reply. A topology of one server ignores it.
   */
  readonly quorum: Quorum<Result>;
  /**
   * For a call that may grant or lengthen a hold: given its reply, whether it did (so a topology
   * that acknowledges writes must have it acknowledged), and the call that undoes it if that fails.
   * `undefined` (the default) for calls that only take holds away or read.
   */
  readonly grants?: ((result: Result) => Granted | undefined) | undefined;
  /**
   * For a call that may grant a hold to a fresh owner: what gives back a grant whose reply never
   * came (a master that did not answer in time may still have granted it). Harmless where it did not.
   */
  readonly undoUnanswered?: PlainCall | undefined;
  /**
   * For a call that may queue its owner: what takes the owner out of the queue again. A topology that
   * counts a grant from some servers while others queued the owner (Redlock) sends it to those, so
   * that no entry is left there for an owner that holds the lock.
   */
  readonly unqueue?: PlainCall | undefined;
  /**
   * For a call that may give a fresh hold a fence: the same call as a topology of several servers
   * sends it, with `fence` proposed for the hold (a server gives it unless its last fence is as high;
   * see _lock.lua), so that they agree; and with what else such a topology needs (a waiter's ticket,
   * by which every server orders its queue alike). Alone, a server reads its clock.
   */
  readonly proposing?: ((fence: number) => ScriptCall<Result>) | undefined;
}

/**
 * A call that cleans up after another, sent to one server by itself: no quorum rule, grant, undo,
 * proposal or unqueue of its own.
 */
export type PlainCall = ScriptSend<unknown>;

/** A call's reply granted or lengthened a hold. */
export interface Granted {
  /** The call that gives the grant back, if it must be (a renewal needs none). */
  readonly undo: PlainCall | undefined;
}

/**
 * Set by a caller that stopped waiting for a call (an `AbortSignal` will do): its call is then never
 * sent again. A plain flag, because a wait that never gives up (the common case) should not pay for
 * an `AbortController`.
 */
export interface GaveUp {
  readonly aborted: boolean;
}

/** Where locks live, and how a call reaches them. */
export interface Topology {
  /** What this topology is, for messages: e.g. `'a single Redis server'`. */
  readonly description: string;
  /** The longest any call waits for its reply, in ms (the Padlock's `replyTimeoutMs`). */
  readonly replyTimeoutMs: number;
  /**
   * How long a call may take beyond Redis's own answer (a `WAIT` for replicas, say), in ms: a wait's
   * grace for a call near its deadline grows by this much.
   */
  readonly extraReplyMs: number;
  /**
   * Whether a grant counts only once the topology has confirmed it (replicas acknowledged it): then
   * a waiter must claim a lock handed to it by a call of its own, never take the handoff message's
   * word.
   */
  readonly confirmsGrants: boolean;
  /**
   * How many wake-ups a woken waiter gathers before it tries again, each from a server that ran the
   * release (for at most a few ms after the first): 1 where one server decides; a majority
   * on Redlock, where an attempt sent on the first master's wake-up would reach masters that have
   * not yet run the release, find the lock still held there, and be wasted.
   */
  readonly wakeUps: number;
  /** Whether a lock's channels are sharded (SPUBLISH/SSUBSCRIBE, on a Cluster) rather than classic. */
  readonly shardedPubSub: boolean;
  /**
   * Runs `call` where its keys live; rejects with `RedisUnavailableError` if no answer comes within
   * `replyTimeoutMs`. Only for calls whose late success does no harm (release, renewal, a read,
   * leaving a queue): a late reply is dropped.
   */
  run<Result>(call: ScriptCall<Result>): Promise<Result>;
  /**
   * Runs `call` with no time limit of its own: the caller bounds it and receives a late reply (an
   * acquire attempt). Once `gaveUp` aborts, the call is never sent again (no NOSCRIPT re-send).
   */
  send<Result>(call: ScriptCall<Result>, gaveUp?: GaveUp): Promise<Result>;
  /** The error for a call with no reply within `ms`. */
  noReply(lock: string | undefined, ms: number): RedisUnavailableError;
  /** Which keys one script call may touch together: keys with the same group (one Cluster slot). */
  groupOf(key: string): string;
  /** Which calls may share a round trip: calls whose keys have the same node (a Cluster master). */
  nodeOf(key: string): string;
  /**
   * Runs `calls`, whose keys share one node, in as few round trips as it can (one), bounded like
   * {@link run}; each one's result or error, in order. For the watchdog's renewals.
   */
  runMany<Result>(calls: readonly ScriptCall<Result>[]): Promise<PromiseSettledResult<Result>[]>;
  /**
   * Why this topology cannot serve lock kind `kind` soundly (the Padlock then refuses to make such a
   * lock, naming both), or `undefined` when it can.
   */
  refuses(kind: LockKindName): string | undefined;
  /** Opens the Padlock's one pub/sub connection; the caller closes it. */
  openSubscriber(): SubscriberConnection;
}
