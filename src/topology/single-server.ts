/**
 * One Redis server, as a client reaches it: a standalone server, a Sentinel-managed primary (the
 * client follows failovers), or a Cluster through a cluster client (which routes each call to the
 * slot's master). Each call goes to one place; renewals are grouped per Cluster slot, since one
 * script's keys must share a slot.
 */
import type { CommandConnection, SubscriberConnection } from '../redis/connection.js';
import { ScriptRunner } from '../redis/script-runner.js';
import { keySlot } from '../redis/slot.js';
import type { RedisUnavailableError } from '../errors.js';
import type { ScriptCall, Topology } from './topology.js';

export class SingleServer implements Topology {
  readonly description: string;
  readonly #connection: CommandConnection;
  readonly #runner: ScriptRunner;

  constructor(connection: CommandConnection, readonly replyTimeoutMs: number) {
    this.#connection = connection;
    this.#runner = new ScriptRunner(connection, replyTimeoutMs);
    this.description = connection.isCluster ? 'a Redis Cluster' : 'a single Redis server';
  }

  run<Result>({ script, keys, args, lock }: ScriptCall<Result>): Promise<Result> {
    return this.#runner.run(script, keys, args, lock);
  }

  send<Result>({ script, keys, args, lock }: ScriptCall<Result>): Promise<Result> {
    return this.#runner.send(script, keys, args, lock);
  }

  noReply(lock: string | undefined, ms: number): RedisUnavailableError {
    return this.#runner.noReply(lock, ms);
  }

  groupOf(key: string): string {
    return this.#connection.isCluster ? String(keySlot(key)) : '';
  }

  openSubscriber(): SubscriberConnection {
    return this.#connection.openSubscriber();
  }
}
