/**
 * The narrow slice of a Redis client that padlock uses. Each client library arrives as a small
 * adapter producing these interfaces (./ioredis.ts for ioredis and its fork iovalkey,
 * ./node-redis.ts for node-redis), chosen by ./clients.ts when a Padlock is made. Nothing outside
 * src/stores/redis/adapters/ knows which client it talks to.
 */

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
  /** `EVALSHA`, then `WAIT`, pipelined on one connection: the script's reply (rejects with its error) and how many replicas acknowledged. */
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
  /**
   * Whether `error`, as this client raised it, is Redis's own error reply (`-NOSCRIPT …`,
   * `-WRONGTYPE …`), as opposed to the connection failing. Each client marks those its own way.
   */
  isReplyError(error: unknown): boolean;
  /** True for a Redis Cluster: a multi-key script call must stay within one slot. */
  readonly isCluster: boolean;
  /**
   * Whether the subscriber this connection opens listens on sharded channels (`SSUBSCRIBE`, so
   * releases must `SPUBLISH`): a Cluster client that routes sharded subscriptions by slot.
   */
  readonly shardedPubSub: boolean;
  /**
   * The connection a command sent now goes out on: the same object for as long as one TCP connection
   * to one server process lasts, another after any reconnect (a restart, a failover); `undefined`
   * where the client does not show it (a Cluster, node-redis). A reply read while it is still the
   * object read at the send came from the process that was listening then.
   */
  session(): object | undefined;
  /**
   * Until the client is first seen connected: `undefined` once it is (or where the client cannot
   * tell, or connects only when sent a command); else a promise that resolves when it connects and
   * rejects with its connection error (ECONNREFUSED, an unknown host, …) when it fails: at once with
   * the last one, if it failed already. So a Padlock whose client never reached Redis fails its
   * calls at once, naming why, instead of leaving them in the client's offline queue.
   */
  firstConnection(): Promise<void> | undefined;
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
  /** As {@link CommandConnection.isReplyError}, for a refused `SUBSCRIBE`. */
  isReplyError(error: unknown): boolean;
  /** Closes the connection. */
  close(): Promise<void>;
}

/** Settles every promise of `calls`, as {@link Settled} outcomes in order (a non-Error rejection is wrapped). */
export async function settleAll(calls: readonly Promise<unknown>[]): Promise<Settled[]> {
  const outcomes = await Promise.allSettled(calls);
  return outcomes.map((o): Settled => (o.status === 'fulfilled' ? { error: null, reply: o.value } : { error: o.reason instanceof Error ? o.reason : new Error(String(o.reason)) }));
}
