/**
 * The adapter for node-redis (`redis` 4, 5 and 6, or `@redis/client` alone): a client
 * (`createClient`), a cluster (`createCluster`) or, from `redis` 5 on, a sentinel
 * (`createSentinel`). Typed structurally, by the few members padlock calls, so that nothing here
 * needs the package installed.
 *
 * node-redis differs from ioredis in what matters here:
 * - commands go out as `sendCommand([...strings])`; those sent in one tick share one write, so a
 *   script and its `WAIT` sent back to back are pipelined on the connection;
 * - a client must be connected by its owner (`await client.connect()`) before padlock uses it;
 * - pub/sub needs a connection of its own: padlock connects a `duplicate()` (a sentinel keeps one
 *   of its own for pub/sub, which padlock shares, subscribing and unsubscribing only its channels);
 * - a cluster's `sSubscribe` routes each sharded channel to its slot's master;
 * - a sentinel does not keep the order of commands sent together (each waits for a lease on a
 *   master connection), so padlock sends its calls through one one at a time;
 * - Redis's error replies are instances of `ErrorReply` (v5+: its subclasses `SimpleError`,
 *   `BlobError`), whose `name` is plain `'Error'`.
 */
import type { Arg, CommandConnection, SubscriberConnection, WaitFor } from './connection.js';
import { settleAll } from './connection.js';
import { bound } from '../../../clock.js';
import { followFirstConnection, type ClientState } from './first-connection.js';
import { keySlot } from './slot.js';

/** A listener of node-redis pub/sub: message first, then channel. */
type PubSubListener = (message: string, channel: string) => void;

interface NodeRedisCommon {
  readonly isOpen: boolean;
  on(event: string, listener: (...args: never[]) => void): unknown;
  off?(event: string, listener: (...args: never[]) => void): unknown;
}

/** A node-redis client (`createClient`). */
export interface NodeRedisClient extends NodeRedisCommon {
  readonly isReady: boolean;
  readonly options?: { readonly url?: string | undefined; readonly socket?: { readonly host?: string | undefined; readonly port?: number | undefined; readonly path?: string | undefined } | undefined; readonly legacyMode?: boolean | undefined } | undefined;
  sendCommand(args: string[]): Promise<unknown>;
  duplicate(): NodeRedisClient;
  connect(): Promise<unknown>;
  subscribe(channel: string, listener: PubSubListener): Promise<unknown>;
  unsubscribe(channel: string, listener?: PubSubListener): Promise<unknown>;
  /** 4.x: closes the socket at once. Deprecated in 5 for `destroy()`. */
  disconnect(): Promise<unknown>;
  /** 5+: closes the socket at once. */
  destroy?(): void;
}

/** A node-redis cluster (`createCluster`). */
export interface NodeRedisCluster extends NodeRedisCommon {
  /** slot → its shard, whose master is `host:port`. */
  readonly slots: readonly ({ readonly master: { readonly host: string; readonly port: number } } | undefined)[];
  readonly masters: readonly unknown[];
  sendCommand(firstKey: string | undefined, isReadonly: boolean | undefined, args: string[]): Promise<unknown>;
  duplicate(): NodeRedisCluster;
  connect(): Promise<unknown>;
  sSubscribe(channel: string, listener: PubSubListener): Promise<unknown>;
  sUnsubscribe(channel: string, listener?: PubSubListener): Promise<unknown>;
  disconnect(): Promise<unknown>;
  destroy?(): void;
}

/** A node-redis sentinel (`createSentinel`, `redis` 5 and later). */
export interface NodeRedisSentinel extends NodeRedisCommon {
  readonly isReady: boolean;
  sendCommand(isReadonly: boolean | undefined, args: string[]): Promise<unknown>;
  /** Runs `fn` with one of the master's connections to itself (so a script and its WAIT share it). */
  use<T>(fn: (client: { sendCommand(isReadonly: boolean | undefined, args: string[]): Promise<unknown> }) => Promise<T>): Promise<T>;
  getMasterNode(): { readonly host: string; readonly port: number } | undefined;
  subscribe(channel: string, listener: PubSubListener): Promise<unknown>;
  unsubscribe(channel: string, listener?: PubSubListener): Promise<unknown>;
}

/** Which of node-redis's three shapes a value has, if any. */
export type NodeRedisShape = 'client' | 'cluster' | 'sentinel';

/** Tells node-redis's shapes apart, by members no other one has; `undefined` for anything else. */
export function nodeRedisShape(value: object): NodeRedisShape | undefined {
  const v = value as Record<string, unknown>;
  if (typeof v['sendCommand'] !== 'function' || typeof v['isOpen'] !== 'boolean') return undefined;
  if (typeof v['getSlotMaster'] === 'function' && Array.isArray(v['slots'])) return 'cluster';
  if (typeof v['getMasterNode'] === 'function' && typeof v['use'] === 'function') return 'sentinel';
  if (typeof v['duplicate'] === 'function' && typeof v['connect'] === 'function' && typeof v['subscribe'] === 'function') return 'client';
  return undefined;
}

/** node-redis keeps its socket to itself: no connection is known to last from one call to the next. */
function noSession(): undefined {
  return undefined;
}

/** node-redis marks Redis's error replies by the class `ErrorReply` (and, from 5, its subclasses). */
function isReplyError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  for (let proto: unknown = Object.getPrototypeOf(error); proto !== null && proto !== Error.prototype; proto = Object.getPrototypeOf(proto)) {
    if ((proto as { constructor?: { name?: unknown } }).constructor?.name === 'ErrorReply') return true;
  }
  return false;
}

/** `EVALSHA sha n keys... args...` as node-redis sends it: every argument a string. */
function command(name: 'EVALSHA' | 'EVAL', script: string, keys: readonly string[], args: readonly Arg[]): string[] {
  return [name, script, String(keys.length), ...keys, ...args.map(String)];
}

/** Sends a script and `WAIT` back to back on one connection, and reads both replies as ioredis's pipeline does. */
async function thenWait(send: (args: string[]) => Promise<unknown>, script: string[], { replicas, timeoutMs }: WaitFor): Promise<readonly [unknown, number]> {
  const [reply, acks] = await settleAll([send(script), send(['WAIT', String(replicas), String(timeoutMs)])]);
  if (reply === undefined || acks === undefined) throw new Error('the pipelined script and WAIT were discarded');
  if (reply.error !== null) throw reply.error;
  if (acks.error !== null) throw acks.error;
  return [reply.reply, Number(acks.reply)];
}

/** The state node-redis reports, in ioredis's words where they mean the same. */
function statusOf(client: { readonly isOpen: boolean; readonly isReady?: boolean }): string {
  if (!client.isOpen) return 'closed';
  if (client.isReady === undefined) return 'open';
  return client.isReady ? 'ready' : 'reconnecting';
}

/**
 * A node-redis connection as a {@link ClientState}: one opened (`connect()` called) but not ready is
 * connecting; a cluster, which does not say whether it is ready, counts as connected.
 */
function stateOf(client: { readonly isOpen: boolean; readonly isReady?: boolean }): ClientState {
  if (!client.isOpen) return 'idle';
  return client.isReady === false ? 'connecting' : 'ready';
}

/** `host:port` of a client's server, from its options (never the URL itself: it may hold a password). */
function addressOf(client: NodeRedisClient): string {
  const socket = client.options?.socket;
  if (socket?.path !== undefined) return socket.path;
  const url = client.options?.url;
  if (url !== undefined && socket?.host === undefined) {
    try {
      const parsed = new URL(url);
      return `${parsed.hostname || 'localhost'}:${parsed.port || 6379}`;
    } catch {
      return 'a Redis server';
    }
  }
  return `${socket?.host ?? 'localhost'}:${socket?.port ?? 6379}`;
}

/** Adapts a node-redis client, cluster or sentinel (as {@link nodeRedisShape} tells). */
export function fromNodeRedis(value: object, shape: NodeRedisShape): CommandConnection {
  switch (shape) {
    case 'client':
      return fromClient(value as NodeRedisClient);
    case 'cluster':
      return fromCluster(value as NodeRedisCluster);
    case 'sentinel':
      return fromSentinel(value as NodeRedisSentinel);
    default:
      throw new Error(`unknown node-redis shape ${String(shape satisfies never)}`);
  }
}

function fromClient(client: NodeRedisClient): CommandConnection {
  const send = (args: string[]): Promise<unknown> => client.sendCommand(args);
  return {
    evalsha: (sha, keys, args) => send(command('EVALSHA', sha, keys, args)),
    eval: (source, keys, args) => send(command('EVAL', source, keys, args)),
    evalshaThenWait: (sha, keys, args, wait) => thenWait(send, command('EVALSHA', sha, keys, args), wait),
    evalThenWait: (source, keys, args, wait) => thenWait(send, command('EVAL', source, keys, args), wait),
    // Sent in one tick: one write, one round trip.
    evalshaMany: (calls) => settleAll(calls.map(({ sha, keys, args }) => send(command('EVALSHA', sha, keys, args)))),
    nodeOf: () => '',
    openSubscriber: () => {
      const duplicate = client.duplicate();
      return ownSubscriber(duplicate, {
        subscribe: (channel, listener) => duplicate.subscribe(channel, listener),
        unsubscribe: (channel, listener) => duplicate.unsubscribe(channel, listener),
      });
    },
    isReplyError,
    isCluster: false,
    shardedPubSub: false,
    address: addressOf(client),
    session: noSession,
    firstConnection: followFirstConnection(client, () => stateOf(client)),
    get status() {
      return statusOf(client);
    },
  };
}

function fromCluster(cluster: NodeRedisCluster): CommandConnection {
  // Routed by the script's first key; every key of one call shares its slot.
  const send = (keys: readonly string[], args: string[]): Promise<unknown> => cluster.sendCommand(keys[0], false, args);
  const waitUnsupported = (): Promise<never> => Promise.reject(new Error('replica acknowledgement (WAIT) is not offered on a Cluster'));
  return {
    evalsha: (sha, keys, args) => send(keys, command('EVALSHA', sha, keys, args)),
    eval: (source, keys, args) => send(keys, command('EVAL', source, keys, args)),
    evalshaThenWait: waitUnsupported,
    evalThenWait: waitUnsupported,
    // One node's calls, sent in one tick over its one connection: one write, one round trip.
    evalshaMany: (calls) => settleAll(calls.map(({ sha, keys, args }) => send(keys, command('EVALSHA', sha, keys, args)))),
    nodeOf: (key) => {
      const master = cluster.slots[keySlot(key)]?.master;
      return master === undefined ? '' : `${master.host}:${master.port}`;
    },
    // sSubscribe routes each channel to its slot's master, on pub/sub connections of the duplicate.
    openSubscriber: () => {
      const duplicate = cluster.duplicate();
      return ownSubscriber(duplicate, {
        subscribe: (channel, listener) => duplicate.sSubscribe(channel, listener),
        unsubscribe: (channel, listener) => duplicate.sUnsubscribe(channel, listener),
      });
    },
    isReplyError,
    isCluster: true,
    shardedPubSub: true,
    address: 'a Redis Cluster',
    session: noSession,
    firstConnection: followFirstConnection(cluster, () => stateOf(cluster)),
    get status() {
      return statusOf(cluster);
    },
  };
}

function fromSentinel(sentinel: NodeRedisSentinel): CommandConnection {
  // A sentinel hands each command a lease on one of its master connections, after an await that
  // not every command takes: two commands sent in order can reach Redis in the other order. padlock
  // needs its calls to run in the order it sends them (a wait's leave after the call that queued
  // it), so it sends them one after another, each once the one before has its answer.
  const inOrder = orderOf(sentinel);
  const send = (args: string[]): Promise<unknown> => inOrder(() => sentinel.sendCommand(false, args));
  // With a pool of master connections, a script and its WAIT must go out on the same one.
  const onOne = (script: string[], wait: WaitFor): Promise<readonly [unknown, number]> =>
    inOrder(() => sentinel.use((client) => thenWait((args) => client.sendCommand(false, args), script, wait)));
  return {
    evalsha: (sha, keys, args) => send(command('EVALSHA', sha, keys, args)),
    eval: (source, keys, args) => send(command('EVAL', source, keys, args)),
    evalshaThenWait: (sha, keys, args, wait) => onOne(command('EVALSHA', sha, keys, args), wait),
    evalThenWait: (source, keys, args, wait) => onOne(command('EVAL', source, keys, args), wait),
    // Renewals of independent holds: their order does not matter, so they go out together.
    evalshaMany: (calls) => inOrder(() => settleAll(calls.map(({ sha, keys, args }) => sentinel.sendCommand(false, command('EVALSHA', sha, keys, args))))),
    nodeOf: () => '',
    openSubscriber: () => sharedSubscriber(sentinel),
    isReplyError,
    isCluster: false,
    shardedPubSub: false,
    get address() {
      const master = sentinel.getMasterNode();
      return master === undefined ? 'a Sentinel-managed primary' : `${master.host}:${master.port}`;
    },
    session: noSession,
    firstConnection: followFirstConnection(sentinel, () => stateOf(sentinel)),
    get status() {
      return statusOf(sentinel);
    },
  };
}

/** Runs one piece of work at a time, each once the one before has settled, in the order given. */
export type InOrder = <T>(work: () => Promise<T>) => Promise<T>;

const orders = new WeakMap<object, InOrder>();

/**
 * The one queue of a node-redis sentinel's calls, shared by every Padlock on it (and by tests,
 * which read behind padlock's calls).
 * @internal
 */
export function orderOf(sentinel: object): InOrder {
  let order = orders.get(sentinel);
  if (order === undefined) {
    let tail: Promise<unknown> = Promise.resolve();
    order = <T>(work: () => Promise<T>): Promise<T> => {
      const next = tail.then(work, work);
      tail = next.catch(() => undefined);
      return next;
    };
    orders.set(sentinel, order);
  }
  return order;
}

/** How to (un)subscribe one channel on a node-redis pub/sub connection. */
interface ChannelCommands {
  subscribe(channel: string, listener: PubSubListener): Promise<unknown>;
  unsubscribe(channel: string, listener: PubSubListener): Promise<unknown>;
}

/**
 * A duplicate of the user's client or cluster, connected here, used for pub/sub only, and closed
 * by padlock. node-redis resubscribes on reconnect before it says `ready`.
 */
function ownSubscriber(connection: NodeRedisClient | NodeRedisCluster, commands: ChannelCommands): SubscriberConnection {
  const { listener, onMessage } = fanOut();
  const errors = new Set<(error: Error) => void>();
  const report = (error: unknown): void => errors.forEach((l) => l(error instanceof Error ? error : new Error(String(error))));
  // Registered before connecting: node-redis throws an 'error' event that nobody listens to.
  connection.on('error', report);
  // node-redis 6 refuses a subscription before the connection is up (5 queues it): each waits for
  // it. A connect that gave up (the client's reconnectStrategy said so) is tried again by the next.
  let connecting: Promise<unknown> | undefined;
  let inFlight = false;
  let closed = false;
  // Once closed, nothing may touch the connection again: a subscription would open a new one.
  const connected = async (): Promise<void> => {
    if (!closed && (connecting === undefined || !connection.isOpen)) {
      inFlight = true;
      connecting = connection.connect();
      connecting.then(() => (inFlight = false), (error: unknown) => {
        inFlight = false;
        report(error);
      });
    }
    await connecting;
    if (closed) throw new Error('the pub/sub connection is closed');
  };
  connected().catch(() => undefined);
  // Subscription changes under way: a cluster opens a node's pub/sub connection for one, and one
  // destroyed meanwhile opens it after, with nothing left to close it (node-redis 5).
  const changing = new Set<Promise<unknown>>();
  const change = async (send: () => Promise<unknown>): Promise<unknown> => {
    await connected();
    const sent = send();
    changing.add(sent);
    try {
      return await sent;
    } finally {
      changing.delete(sent);
    }
  };
  return {
    subscribe: (channel) => change(() => commands.subscribe(channel, listener)),
    unsubscribe: (channel) => change(() => commands.unsubscribe(channel, listener)),
    onMessage,
    onReady: (ready) => void connection.on('ready', ready),
    onError: (listener) => void errors.add(listener),
    isReplyError,
    // Not QUIT: it would queue behind an UNSUBSCRIBE held for a dead server. A subscriber has
    // nothing to flush; dropping the socket is the clean end.
    close: async () => {
      if (closed) return;
      closed = true;
      // A cluster destroyed while it is still discovering its nodes opens their connections after
      // (node-redis 6), and nothing closes them: let a connect under way end first (for a second
      // at most: a server that does not answer keeps it going).
      // Likewise a subscription change under way, within that second, or a quarter of one when no
      // connect is (a healthy server answers in ms; one that is down would hold close() past its bound).
      const connectingNow = inFlight && connecting !== undefined ? [connecting] : [];
      const underWay = [...connectingNow, ...changing];
      const ms = connectingNow.length > 0 ? 1_000 : 250;
      if (underWay.length > 0) await bound(Promise.allSettled(underWay), { ms, timeout: () => new Error('still connecting') }).catch(() => undefined);
      await drop(connection);
    },
  };
}

/** Closes a node-redis connection at once: `destroy()` (5+) or `disconnect()` (4). */
async function drop(connection: NodeRedisClient | NodeRedisCluster): Promise<void> {
  try {
    if (connection.destroy !== undefined) connection.destroy();
    else await connection.disconnect();
  } catch {
    // Already closed.
  }
}

/**
 * A node-redis sentinel's own pub/sub connection (it keeps one apart from its command connections,
 * and moves it to each new master), shared with the user: padlock subscribes and unsubscribes its
 * own listener only, and closing unsubscribes padlock's channels rather than closing the connection.
 */
function sharedSubscriber(sentinel: NodeRedisSentinel): SubscriberConnection {
  const { listener, onMessage } = fanOut();
  const channels = new Set<string>();
  let closed = false;
  const guarded: PubSubListener = (message, channel) => {
    if (!closed) listener(message, channel);
  };
  return {
    subscribe: (channel) => {
      channels.add(channel);
      return sentinel.subscribe(channel, guarded);
    },
    unsubscribe: (channel) => {
      channels.delete(channel);
      return sentinel.unsubscribe(channel, guarded);
    },
    onMessage,
    // A new master: the sentinel resubscribes there; messages sent meanwhile are gone.
    onReady: (ready) => {
      ready();
      sentinel.on('topology-change', (event: { readonly type?: unknown }) => {
        if (event.type === 'MASTER_CHANGE') ready();
      });
    },
    onError: (listener) => void sentinel.on('error', listener),
    isReplyError,
    close: () => {
      closed = true;
      // Not awaited: an UNSUBSCRIBE to a dead master would hold close() up.
      for (const channel of channels) sentinel.unsubscribe(channel, guarded).catch(() => undefined);
      channels.clear();
      return Promise.resolve();
    },
  };
}

/** One node-redis listener that passes every message on to padlock's listeners (channel first). */
function fanOut(): { readonly listener: PubSubListener; readonly onMessage: (listener: (channel: string, message: string) => void) => void } {
  const listeners: ((channel: string, message: string) => void)[] = [];
  return {
    listener: (message, channel) => listeners.forEach((l) => l(channel, message)),
    onMessage: (l) => void listeners.push(l),
  };
}
