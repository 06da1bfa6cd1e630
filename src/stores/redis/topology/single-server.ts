/**
 * One Redis server, as a client reaches it: a standalone server, a Sentinel-managed primary (the
 * client follows failovers), or a Cluster through a cluster client (which routes each call to the
 * slot's master). Each call goes to one place; renewals are grouped per Cluster slot, since one
 * script's keys must share a slot.
 *
 * With `replicas`, a call that may grant or lengthen a hold is followed in the same round trip by
 * `WAIT min timeoutMs`; a grant fewer replicas acknowledged is undone and fails with
 * `ReplicaAckError`, a renewal so acknowledged fails (it does not count).
 */
import { bound } from '../../../clock.js';
import { ReplicaAckError, type RedisUnavailableError } from '../../../errors.js';
import type { ReplicaOptions } from '../../../options.js';
import type { CommandConnection, SubscriberConnection } from '../adapters/connection.js';
import { EvictionPolicyCheck } from '../adapters/eviction-policy.js';
import { ScriptRunner } from '../adapters/script-runner.js';
import { keySlot } from '../adapters/slot.js';
import type { GaveUp, Granted, ScriptCall, Topology } from './topology.js';

/** A call as one server runs it: a call's quorum rule is for topologies of several servers, so none is read here. */
type OneServerCall<Result> = Omit<ScriptCall<Result>, 'quorum'>;

export class SingleServer implements Topology {
  readonly description: string;
  readonly extraReplyMs: number;
  readonly confirmsGrants: boolean;
  readonly wakeUps = 1;
  readonly shardedPubSub: boolean;
  readonly #connection: CommandConnection;
  readonly #runner: ScriptRunner;
  readonly #replicas: ReplicaOptions | undefined;
  readonly #evictions: EvictionPolicyCheck;

  constructor(connection: CommandConnection, readonly replyTimeoutMs: number, replicas?: ReplicaOptions) {
    this.#connection = connection;
    this.#runner = new ScriptRunner(connection);
    this.#evictions = new EvictionPolicyCheck(this.#runner, connection);
    this.#replicas = replicas;
    this.extraReplyMs = replicas?.timeoutMs ?? 0;
    this.confirmsGrants = replicas !== undefined;
    this.shardedPubSub = connection.shardedPubSub;
    const where = connection.isCluster ? 'a Redis Cluster' : 'a single Redis server';
    this.description = replicas === undefined ? where : `${where} with ${replicas.min} replica acknowledgement(s)`;
  }

  /** As {@link send}, but rejects with `RedisUnavailableError` when no reply comes within `replyTimeoutMs` (whatever the client's own retry settings). */
  run<Result>(call: OneServerCall<Result>): Promise<Result> {
    const ms = this.replyTimeoutMs;
    return bound(this.#send(call), { ms, timeout: () => this.noReply(call.lock, ms) });
  }

  send<Result>(call: OneServerCall<Result>, gaveUp?: GaveUp): Promise<Result> {
    return this.#send(call, gaveUp);
  }

  #send<Result>(call: OneServerCall<Result>, gaveUp?: GaveUp): Promise<Result> {
    const { script, keys, args, lock } = call;
    this.#evictions.check(keys); // once per server: beside this call, never before it
    // `grants` is read only where replicas acknowledge grants (an attempt makes it when read).
    const grants = this.#replicas === undefined ? undefined : call.grants;
    if (this.#replicas === undefined || grants === undefined) return this.#runner.send(script, keys, args, lock, gaveUp);
    return this.#acknowledged(call, grants, this.#replicas, gaveUp);
  }

  async #acknowledged<Result>(call: OneServerCall<Result>, grants: (result: Result) => Granted | undefined, replicas: ReplicaOptions, gaveUp: GaveUp | undefined): Promise<Result> {
    const { script, keys, args, lock } = call;
    const wait = { replicas: replicas.min, timeoutMs: replicas.timeoutMs };
    const [result, acknowledged] = await this.#runner.sendThenWait(script, keys, args, lock, wait, gaveUp);
    const granted = grants(result);
    if (granted === undefined || acknowledged >= replicas.min) return result;
    if (granted.undo !== undefined) await this.run(granted.undo).catch(() => undefined); // best effort: else the lease runs out
    throw new ReplicaAckError(lock, acknowledged, replicas.min);
  }

  noReply(lock: string | undefined, ms: number): RedisUnavailableError {
    return this.#runner.noReply(lock, ms);
  }

  groupOf(key: string): string {
    return this.#connection.isCluster ? String(keySlot(key)) : '';
  }

  /** One server (as the client reaches it) serves every kind. */
  refuses(): undefined {
    return undefined;
  }

  nodeOf(key: string): string {
    return this.#connection.nodeOf(key);
  }

  runMany<Result>(calls: readonly OneServerCall<Result>[]): Promise<PromiseSettledResult<Result>[]> {
    // One call, or calls that must each be acknowledged: as they are. Else one pipeline.
    if (calls.length <= 1 || this.#replicas !== undefined) return Promise.allSettled(calls.map((call) => this.run(call)));
    const ms = this.replyTimeoutMs;
    const sent = this.#runner.sendMany(calls);
    return bound(sent, { ms, timeout: () => this.noReply(undefined, ms) }).catch((error: unknown) =>
      calls.map((): PromiseSettledResult<Result> => ({ status: 'rejected', reason: error })),
    );
  }

  openSubscriber(): SubscriberConnection {
    return this.#connection.openSubscriber();
  }
}
