/**
 * The narrow slice of a Redis client that padlock uses, and the ioredis adapter for it.
 * A second client library would arrive as another small adapter producing these interfaces.
 */
import type { Cluster, Redis } from 'ioredis';

/** A script argument as sent on the wire. */
export type Arg = string | number;

/** Sends commands. */
export interface CommandConnection {
  /** `EVALSHA sha numkeys key... arg...` */
  evalsha(sha: string, keys: readonly string[], args: readonly Arg[]): Promise<unknown>;
  /** `EVAL source numkeys key... arg...` (also loads the script into the server's cache). */
  eval(source: string, keys: readonly string[], args: readonly Arg[]): Promise<unknown>;
  /** Opens a second connection to the same server(s) for pub/sub; the caller closes it. */
  openSubscriber(): SubscriberConnection;
  /** True for a Redis Cluster: a multi-key script call must stay within one slot. */
  readonly isCluster: boolean;
  /** The client's connection state, in its own words (ioredis: `ready`, `reconnecting`, …), for error messages. */
  readonly status: string;
}

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
}

/** Adapts an ioredis `Redis` or `Cluster`. */
export function fromIoredis(client: Redis | Cluster): CommandConnection {
  // ioredis declares evalsha/eval with callback overloads; this is the promise form they all share.
  const commands = client as unknown as IoredisEval;
  return {
    evalsha: (sha, keys, args) => commands.evalsha(sha, keys.length, ...keys, ...args),
    eval: (source, keys, args) => commands.eval(source, keys.length, ...keys, ...args),
    openSubscriber: () => subscriberFromIoredis(client.duplicate()),
    isCluster: 'isCluster' in client && client.isCluster === true,
    get status() {
      return client.status;
    },
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
