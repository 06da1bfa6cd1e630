/**
 * The adapter for ioredis (5 and 6) and iovalkey, its fork (same classes, same surface): a `Redis`
 * on one server or in Sentinel mode, or a `Cluster`. Typed structurally, by the few members padlock
 * calls, so that nothing here needs either package installed.
 */
import type { Arg, CommandConnection, Settled, SubscriberConnection, WaitFor } from './connection.js';
import { followFirstConnection, type ClientState } from './first-connection.js';
import { keySlot } from './slot.js';

/** What padlock calls on an ioredis-family `Redis` or `Cluster` (the promise forms of its commands). */
export interface IoredisFamilyClient {
  /** `'wait'`, `'connecting'`, `'ready'`, `'reconnecting'`, `'end'`, … */
  readonly status: string;
  /** Set on a `Cluster` only. */
  readonly isCluster?: boolean;
  /** A `Redis`'s connection options (host, port; `sentinels` and `name` in Sentinel mode). */
  readonly options: {
    readonly host?: string | undefined;
    readonly port?: number | undefined;
    readonly shardedSubscribers?: boolean | undefined;
    readonly sentinels?: readonly unknown[] | null | undefined;
    readonly name?: string | undefined;
  };
  /** A `Redis`'s socket, once connected (in Sentinel mode: to the primary the sentinels named). */
  readonly stream?: { readonly remoteAddress?: string | undefined; readonly remotePort?: number | undefined } | undefined;
  /** A `Cluster`'s slot map: slot → [master, ...replicas] as `host:port`. */
  readonly slots?: readonly (readonly string[] | undefined)[];
  evalsha(sha: string, numkeys: number, ...args: Arg[]): Promise<unknown>;
  eval(source: string, numkeys: number, ...args: Arg[]): Promise<unknown>;
  pipeline(): IoredisPipeline;
  duplicate(...args: unknown[]): IoredisFamilyClient;
  subscribe(channel: string): Promise<unknown>;
  unsubscribe(channel: string): Promise<unknown>;
  ssubscribe(channel: string): Promise<unknown>;
  sunsubscribe(channel: string): Promise<unknown>;
  on(event: string, listener: (...args: never[]) => void): unknown;
  off?(event: string, listener: (...args: never[]) => void): unknown;
  disconnect(): void;
}

/** The promise-free, chainable form of the commands padlock pipelines. */
interface IoredisPipeline {
  evalsha(sha: string, numkeys: number, ...args: Arg[]): IoredisPipeline;
  eval(source: string, numkeys: number, ...args: Arg[]): IoredisPipeline;
  call(command: string, ...args: Arg[]): IoredisPipeline;
  exec(): Promise<[Error | null, unknown][] | null>;
}

/** The members an ioredis-family client must have (checked when a Padlock is made). */
export const IOREDIS_METHODS = ['evalsha', 'eval', 'pipeline', 'duplicate', 'subscribe', 'unsubscribe', 'on', 'disconnect'] as const;

/** ioredis and iovalkey mark Redis's error replies by the class `ReplyError` (from redis-errors). */
function isReplyError(error: unknown): boolean {
  return error instanceof Error && error.name === 'ReplyError';
}

/** Adapts an ioredis or iovalkey `Redis` or `Cluster`. */
export function fromIoredis(value: object): CommandConnection {
  // ioredis declares evalsha/eval with callback overloads; this is the promise form they all share.
  const client = value as IoredisFamilyClient;
  const cluster = client.isCluster === true;
  // ioredis (≥ 5.5, and 6) routes SSUBSCRIBE by slot when a Cluster is told to, and its default
  // options name the setting; iovalkey 0.4 sends every subscription to one node, which refuses a
  // sharded channel of another's slot. Without it, waiters use classic pub/sub (a release's message
  // reaches every node of the Cluster).
  const sharded = cluster && 'shardedSubscribers' in client.options;
  // Read on every call (the eviction check follows a Sentinel failover by it): made once where it
  // cannot change, so that a call costs no string.
  const fixedAddress = cluster ? 'a Redis Cluster' : followsSentinel(client) ? undefined : addressOf(client);
  const firstConnection = followFirstConnection(client, () => stateOf(client.status));
  return {
    evalsha: (sha, keys, args) => client.evalsha(sha, keys.length, ...keys, ...args),
    eval: (source, keys, args) => client.eval(source, keys.length, ...keys, ...args),
    evalshaThenWait: (sha, keys, args, wait) => thenWait(client.pipeline().evalsha(sha, keys.length, ...keys, ...args), wait),
    evalThenWait: (source, keys, args, wait) => thenWait(client.pipeline().eval(source, keys.length, ...keys, ...args), wait),
    evalshaMany: async (calls) => {
      const pipeline = client.pipeline();
      for (const { sha, keys, args } of calls) pipeline.evalsha(sha, keys.length, ...keys, ...args);
      const results = (await pipeline.exec()) ?? [];
      return calls.map((_, i): Settled => {
        const [error, reply] = results[i] ?? [new Error('the pipelined call was discarded'), undefined];
        return error === null ? { error, reply } : { error };
      });
    },
    // ioredis keeps the slot map it follows (slot → [master, ...replicas]); a stale entry only
    // sends a batch to a node that redirects it, which the client follows.
    nodeOf: (key) => (cluster ? (client.slots?.[keySlot(key)]?.[0] ?? '') : ''),
    // A Cluster's waiters use sharded pub/sub where the client routes it: each lock's channels live
    // on its slot's shard, so a release is not broadcast to every node. ioredis must be told to
    // route SSUBSCRIBE by slot.
    // No ready check on the classic subscriber: its INFO can be sent after a SUBSCRIBE the
    // connection already took, and fails in subscriber mode ("Can't execute 'info'", seen under load
    // by the bench; redis/ioredis#2037).
    openSubscriber: () =>
      sharded
        ? shardedSubscriber(client.duplicate([], { shardedSubscribers: true }))
        : subscriberOf(cluster ? client.duplicate() : client.duplicate({ enableReadyCheck: false })),
    isReplyError,
    // ioredis makes a new socket for every connection it opens (commands it sends again after a
    // reconnect go out on the new one): a socket is one TCP connection to one process.
    session: () => (cluster ? undefined : client.stream),
    isCluster: cluster,
    shardedPubSub: sharded,
    get address() {
      return fixedAddress ?? addressOf(client);
    },
    firstConnection,
    get status() {
      return client.status;
    },
  };
}

/**
 * An ioredis status as a {@link ClientState}: `wait` (lazyConnect: the first command connects) and
 * `end` (closed for good: a call fails at once by itself) are neither connected nor connecting.
 */
function stateOf(status: string): ClientState {
  if (status === 'ready' || status === 'monitoring') return 'ready';
  return status === 'wait' || status === 'end' ? 'idle' : 'connecting';
}

/** `host:port` of a `Redis`'s server: in Sentinel mode the primary it is connected to now (its options name none). */
function addressOf(client: IoredisFamilyClient): string {
  const { host, port, name } = client.options;
  if (!followsSentinel(client)) return `${host ?? 'localhost'}:${port ?? 6379}`;
  const remote = client.stream;
  return remote?.remoteAddress === undefined ? `the Sentinel-managed primary '${name ?? '?'}'` : `${remote.remoteAddress}:${remote.remotePort ?? '?'}`;
}

/** Whether the client finds its server through Sentinel (so the server it reaches can change). */
function followsSentinel(client: IoredisFamilyClient): boolean {
  const { sentinels } = client.options;
  return sentinels !== undefined && sentinels !== null && sentinels.length > 0;
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

/** A Cluster client in sharded pub/sub: SSUBSCRIBE, SUNSUBSCRIBE, `smessage`. */
function shardedSubscriber(client: IoredisFamilyClient): SubscriberConnection {
  return {
    ...subscriberOf(client),
    subscribe: (channel) => client.ssubscribe(channel),
    unsubscribe: (channel) => client.sunsubscribe(channel),
    onMessage: (listener) => void client.on('smessage', listener),
  };
}

function subscriberOf(client: IoredisFamilyClient): SubscriberConnection {
  return {
    subscribe: (channel) => client.subscribe(channel),
    unsubscribe: (channel) => client.unsubscribe(channel),
    onMessage: (listener) => void client.on('message', listener),
    onReady: (listener) => void client.on('ready', listener),
    onError: (listener) => void client.on('error', listener),
    isReplyError,
    // Not QUIT: it would queue behind an UNSUBSCRIBE held for a dead server (ioredis 6 holds it
    // for over a minute). A subscriber has nothing to flush; dropping the socket is the clean end.
    close: () => {
      client.disconnect();
      return Promise.resolve();
    },
  };
}
