/**
 * The narrow slice of a Redis client that padlock uses, and the ioredis adapter for it.
 * A second client library would arrive as another small adapter producing these interfaces.
 */
import type { Cluster, Redis } from 'ioredis';
import { keySlot } from './slot.js';

/** A script argument as sent on the wire. */
export type Arg = string | number;

/** A `WAIT numreplicas timeout` sent right after a script, in the same round trip. */
export interface WaitFor {
  readonly replicas: number;
  readonly timeoutMs: number;
}

/** Sends commands. */
export interface CommandConnection {
  /** `EVALSHA sha numkeys key... arg...` */
  evalsha(sha: string, keys: readonly string[], args: readonly Arg[]): Promise<unknown>;
  /** `EVAL source numkeys key... arg...` (also loads the script into the server's cache). */
  eval(source: string, keys: readonly string[], args: readonly Arg[]): Promise<unknown>;
  /** `EVALSHA`, then `WAIT`, pipelined: the script's reply (rejects with its error) and how many replicas acknowledged. */
  evalshaThenWait(sha: string, keys: readonly string[], args: readonly Arg[], wait: WaitFor): Promise<readonly [unknown, number]>;
  /** `EVAL`, then `WAIT`, pipelined. */
  evalThenWait(source: string, keys: readonly string[], args: readonly Arg[], wait: WaitFor): Promise<readonly [unknown, number]>;
  /**
   * Several `EVALSHA`s in one round trip (their keys all served by one node): each one's reply or
   * error, in order.
   */
  evalshaMany(calls: readonly EvalshaCall[]): Promise<readonly Settled[]>;
  /** The node that serves `key`, as the client knows it (`host:port` of its master in a Cluster; `''` otherwise). */
  nodeOf(key: string): string;
  /** Opens a second connection to the same server(s) for pub/sub; the caller closes it. */
  openSubscriber(): SubscriberConnection;
  /** True for a Redis Cluster: a multi-key script call must stay within one slot. */
  readonly isCluster: boolean;
  /** The client's connection state, in its own words (ioredis: `ready`, `reconnecting`, …), for error messages. */
  readonly status: string;
  /** Where it connects, for messages (`host:port`). */
  readonly address: string;
}

/** One `EVALSHA` of a pipeline. */
export interface EvalshaCall {
  readonly sha: string;
  readonly keys: readonly string[];
  readonly args: readonly Arg[];
}

/** One pipelined command's outcome. */
export type Settled = { readonly error: null; readonly reply: unknown } | { readonly error: Error; readonly reply?: undefined };

/** A connection in subscriber mode. */
export interface SubscriberConnection {
  subscribe(channel: string): Promise<unknown>;
  unsubscribe(channel: string): Promise<unknown>;
  /** Calls `listener` for every message on a subscribed channel. */
  onMessage(listener: (channel: string, message: string) => void): void;
  /** Calls `listener` each time the connection is (re)established and resubscribed. */
  onReady(listener: () => void): void;
  /** Calls `listener` for connection errors (already retried by the client). */
  onError(listener: (error: Error) => void): void;
  /** Closes the connection. */
  close(): Promise<void>;
}

interface IoredisEval {
  evalsha(sha: string, numkeys: number, ...args: Arg[]): Promise<unknown>;
  eval(source: string, numkeys: number, ...args: Arg[]): Promise<unknown>;
  pipeline(): IoredisPipeline;
}

/** The promise-free, chainable form of the commands padlock pipelines. */
interface IoredisPipeline {
  evalsha(sha: string, numkeys: number, ...args: Arg[]): IoredisPipeline;
  eval(source: string, numkeys: number, ...args: Arg[]): IoredisPipeline;
  call(command: string, ...args: Arg[]): IoredisPipeline;
  exec(): Promise<[Error | null, unknown][] | null>;
}

/** Adapts an ioredis `Redis` or `Cluster`. */
export function fromIoredis(client: Redis | Cluster): CommandConnection {
  // ioredis declares evalsha/eval with callback overloads; this is the promise form they all share.
  const commands = client as unknown as IoredisEval;
  return {
    evalsha: (sha, keys, args) => commands.evalsha(sha, keys.length, ...keys, ...args),
    eval: (source, keys, args) => commands.eval(source, keys.length, ...keys, ...args),
    evalshaThenWait: (sha, keys, args, wait) => thenWait(commands.pipeline().evalsha(sha, keys.length, ...keys, ...args), wait),
    evalThenWait: (source, keys, args, wait) => thenWait(commands.pipeline().eval(source, keys.length, ...keys, ...args), wait),
    evalshaMany: async (calls) => {
      const pipeline = commands.pipeline();
      for (const { sha, keys, args } of calls) pipeline.evalsha(sha, keys.length, ...keys, ...args);
      const results = (await pipeline.exec()) ?? [];
      return calls.map((_, i): Settled => {
        const [error, reply] = results[i] ?? [new Error('the pipelined call was discarded'), undefined];
        return error === null ? { error, reply } : { error };
      });
    },
    // ioredis keeps the slot map it follows (slot → [master, ...replicas]); a stale entry only
    // sends a batch to a node that redirects it, which the client follows.
    nodeOf: (key) => ('slots' in client ? (client.slots[keySlot(key)]?.[0] ?? '') : ''),
    // A Cluster's waiters use sharded pub/sub: each lock's channels live on its slot's shard, so a
    // release is not broadcast to every node. ioredis must be told to route SSUBSCRIBE by slot.
    openSubscriber: () =>
      isCluster(client) ? shardedSubscriber(client.duplicate([], { shardedSubscribers: true })) : subscriberFromIoredis(client.duplicate()),
    isCluster: isCluster(client),
    address: isCluster(client) ? 'a Redis Cluster' : `${client.options.host ?? 'localhost'}:${client.options.port ?? 6379}`,
    get status() {
      return client.status;
    },
  };
}

/** Adds `WAIT` to a pipeline holding one script call, sends both, and reads the two replies. */
async function thenWait(pipeline: IoredisPipeline, { replicas, timeoutMs }: WaitFor): Promise<readonly [unknown, number]> {
  const results = await pipeline.call('WAIT', replicas, timeoutMs).exec();
  const [script, wait] = results ?? [];
  if (script === undefined || wait === undefined) throw new Error('the pipelined script and WAIT were discarded');
  if (script[0] !== null) throw script[0];
  if (wait[0] !== null) throw wait[0];
  return [script[1], Number(wait[1])];
}

function isCluster(client: Redis | Cluster): client is Cluster {
  return 'isCluster' in client && client.isCluster === true;
}

/** A Cluster client in sharded pub/sub: SSUBSCRIBE, SUNSUBSCRIBE, `smessage`. */
function shardedSubscriber(client: Cluster): SubscriberConnection {
  return {
    ...subscriberFromIoredis(client),
    subscribe: (channel) => client.ssubscribe(channel),
    unsubscribe: (channel) => client.sunsubscribe(channel),
    onMessage: (listener) => void client.on('smessage', listener),
  };
}

function subscriberFromIoredis(client: Redis | Cluster): SubscriberConnection {
  return {
    subscribe: (channel) => client.subscribe(channel),
    unsubscribe: (channel) => client.unsubscribe(channel),
    onMessage: (listener) => void client.on('message', listener),
    onReady: (listener) => void client.on('ready', listener),
    onError: (listener) => void client.on('error', listener),
    // Not QUIT: it would queue behind an UNSUBSCRIBE held for a dead server (ioredis 6 holds it
    // for over a minute). A subscriber has nothing to flush; dropping the socket is the clean end.
    close: () => {
      client.disconnect();
      return Promise.resolve();
    },
  };
}
