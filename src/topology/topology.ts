/**
 * The seam between lock kinds and where their data lives. A lock kind says *what* to run (a
 * {@link ScriptCall} of its protocol); a topology runs it *where the keys live* and says what the
 * answers add up to. Locks, the watchdog and the subscriber speak only to a topology; none of them
 * knows whether it is one server, a Sentinel-managed primary, a Cluster or (later) a Redlock set of
 * independent masters.
 *
 * Where the later topologies plug in:
 * - Redlock: `send`/`run` fan a call out to every master and combine the replies by a quorum rule
 *   the call declares; `groupOf` groups by master set (one round trip per master per tick).
 * - Replica acknowledgement: `run`/`send` pipeline `WAIT min timeout` after a call that writes.
 * - Cluster: the client routes by slot; `groupOf` groups renewals by the node that owns the slot.
 * - A non-Redis CP store (etcd: leases and revisions) would implement the same interface with its
 *   own protocols: a kind's protocol is chosen by the topology, not by the lock.
 */
import type { RedisUnavailableError } from '../errors.js';
import type { Arg, SubscriberConnection } from '../redis/connection.js';
import type { Script } from '../redis/script-runner.js';

/** One call of a lock kind's protocol: a script, the keys it touches (all in one slot) and its arguments. */
export interface ScriptCall<Result> {
  readonly script: Script<Result>;
  readonly keys: readonly string[];
  readonly args: readonly Arg[];
  /** The lock's name, for errors. */
  readonly lock: string | undefined;
}

/** Where locks live, and how a call reaches them. */
export interface Topology {
  /** What this topology is, for messages: e.g. `'a single Redis server'`. */
  readonly description: string;
  /** The longest any call waits for its reply, in ms (the Padlock's `replyTimeoutMs`). */
  readonly replyTimeoutMs: number;
  /**
   * Runs `call` where its keys live; rejects with `RedisUnavailableError` if no answer comes within
   * `replyTimeoutMs`. Only for calls whose late success does no harm (release, renewal, a read,
   * leaving a queue): a late reply is dropped.
   */
  run<Result>(call: ScriptCall<Result>): Promise<Result>;
  /** Runs `call` with no time limit of its own: the caller bounds it and receives a late reply (an acquire attempt). */
  send<Result>(call: ScriptCall<Result>): Promise<Result>;
  /** The error for a call with no reply within `ms`. */
  noReply(lock: string | undefined, ms: number): RedisUnavailableError;
  /** Which calls may share a round trip: keys with the same group can go in one script call. */
  groupOf(key: string): string;
  /** Opens the Padlock's one pub/sub connection; the caller closes it. */
  openSubscriber(): SubscriberConnection;
}
