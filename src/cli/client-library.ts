/**
 * The Redis client library the `padlock` command runs on: whichever of padlock's supported clients
 * the project has installed (they are optional peers: a project has one, not all), looked for in
 * the order ioredis, iovalkey, node-redis (`redis`, or `@redis/client` alone). `PADLOCK_CLIENT`
 * names one to use when several are installed. Loaded only when a command talks to Redis: `--help`
 * needs none.
 *
 * Each library is seen through {@link CliClient}, the little the commands need (send a command,
 * hear of errors and of the end, close), and gives the library's own object to `new Padlock`.
 */
import type { Cluster as IoredisCluster, Redis as IoredisRedis, RedisOptions } from 'ioredis';
import type { RedisClient } from '../stores/redis/adapters/clients.js';
import { CliError, ExitCode, firstLine, usageError } from './errors.js';

/** The client libraries the command knows, by package name. */
export const CLIENT_PACKAGES = ['ioredis', 'iovalkey', 'redis', '@redis/client'] as const;

/** One of {@link CLIENT_PACKAGES}. */
export type ClientPackage = (typeof CLIENT_PACKAGES)[number];

/** A connection of the command's to one server, a Sentinel-managed primary, or a Cluster. */
export interface CliClient {
  /** The library's own object, for `new Padlock({ redis })` and padlock's readers. */
  readonly client: RedisClient;
  /** Opens the connection; rejects at the first failure. */
  connect(): Promise<void>;
  /** Sends one command (on a Cluster, to the node of its key, or any node). */
  call(args: readonly (string | number)[]): Promise<unknown>;
  /** Hears the client's connection errors (without one, some libraries would throw them). */
  onError(listener: (error: Error) => void): void;
  /** Called once when the client has given up reconnecting (or was closed). */
  onEnd(listener: () => void): void;
  /** A Cluster's masters, each as a client of its own (already connected); `[this]` otherwise. */
  masters(): Promise<CliClient[]>;
  /** Drops the connection at once (nothing to flush: the command's writes were all answered). */
  close(): void;
}

/** Where a Sentinel-managed primary is, and the credentials of it and of the sentinels. */
export interface SentinelTarget {
  readonly sentinels: readonly { host: string; port: number }[];
  readonly name: string;
  readonly username?: string;
  readonly password?: string;
  readonly db?: number;
  readonly sentinelUsername?: string;
  readonly sentinelPassword?: string;
}

/** A loaded client library: how to make the command's clients with it. */
export interface ClientLibrary {
  /** The package it was loaded from. */
  readonly name: ClientPackage;
  /** A client of the server at `url` (`redis://…/db`), not connected yet. */
  server(url: string): CliClient;
  /** A client of the primary the sentinels name, not connected yet. */
  sentinel(target: SentinelTarget): CliClient;
  /** A client of the Cluster `url` (one node of it) belongs to, not connected yet. */
  cluster(url: URL): CliClient;
}

/** The time to open a TCP connection before it counts as failed. */
const CONNECT_TIMEOUT_MS = 3_000;
/** Reconnection attempts (100 ms, 200 ms, 300 ms apart) before a client gives up for good. */
const RETRIES = 3;

/** Says what to install, when no supported client is. */
export const NO_CLIENT_MESSAGE =
  'this command talks to Redis through a Redis client, and none padlock supports is installed: npm install ioredis (or iovalkey, or redis)';

/**
 * The first of {@link CLIENT_PACKAGES} installed, or the one `env.PADLOCK_CLIENT` names.
 * @throws CliError (exit code 1) saying what to install when none is; (exit code 2) when
 * `PADLOCK_CLIENT` names no supported client
 */
export async function loadClientLibrary(env: NodeJS.ProcessEnv): Promise<ClientLibrary> {
  const wanted = env['PADLOCK_CLIENT'];
  if (wanted !== undefined && wanted !== '' && !(CLIENT_PACKAGES as readonly string[]).includes(wanted)) {
    throw usageError(`PADLOCK_CLIENT must name one of ${CLIENT_PACKAGES.join(', ')}, got '${wanted}'`);
  }
  const order: readonly ClientPackage[] = wanted === undefined || wanted === '' ? CLIENT_PACKAGES : [wanted as ClientPackage];
  for (const name of order) {
    let module: unknown;
    try {
      module = await import(name);
    } catch (error) {
      if (isNotFound(error)) continue;
      throw new CliError(`the Redis client '${name}' is installed but does not load: ${firstLine(error)}`, ExitCode.failure, { cause: error });
    }
    return name === 'ioredis' || name === 'iovalkey' ? ioredisFamily(name, module as typeof import('ioredis')) : nodeRedis(name, module as NodeRedisModule);
  }
  throw new CliError(wanted === undefined || wanted === '' ? NO_CLIENT_MESSAGE : `PADLOCK_CLIENT is '${wanted}', which is not installed: npm install ${wanted}`);
}

function isNotFound(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND';
}

// ioredis and iovalkey (its fork: the same classes, the same options).

/**
 * ioredis options for the command's connections: lazy (the caller connects and learns the
 * outcome), a bounded TCP connect, and a few quick retries, so that a Redis that goes away fails
 * commands within seconds instead of queueing them forever.
 */
function ioredisOptions(): RedisOptions {
  return {
    lazyConnect: true,
    connectTimeout: CONNECT_TIMEOUT_MS,
    // disconnect() half-closes; a peer that never answers would keep the socket (and the process) alive.
    disconnectTimeout: 200,
    maxRetriesPerRequest: 1,
    retryStrategy: (times) => (times <= RETRIES ? 100 * times : null),
  };
}

function ioredisFamily(name: 'ioredis' | 'iovalkey', module: typeof import('ioredis')): ClientLibrary {
  const { Redis, Cluster } = module;
  return {
    name,
    server: (url) => fromIoredisClient(new Redis(url, ioredisOptions())),
    sentinel: (target) => {
      const options: RedisOptions = { ...ioredisOptions(), sentinels: [...target.sentinels], name: target.name, sentinelRetryStrategy: (times) => (times <= RETRIES ? 100 * times : null) };
      if (target.username !== undefined) options.username = target.username;
      if (target.password !== undefined) options.password = target.password;
      if (target.db !== undefined) options.db = target.db;
      if (target.sentinelUsername !== undefined) options.sentinelUsername = target.sentinelUsername;
      if (target.sentinelPassword !== undefined) options.sentinelPassword = target.sentinelPassword;
      return fromIoredisClient(new Redis(options));
    },
    cluster: (url) => {
      // A node's connecting and retries are the Cluster's business: it reconnects through the slot map.
      const redisOptions: RedisOptions = ioredisOptions();
      delete redisOptions.lazyConnect;
      delete redisOptions.retryStrategy;
      if (url.username !== '') redisOptions.username = decodeURIComponent(url.username);
      if (url.password !== '') redisOptions.password = decodeURIComponent(url.password);
      if (url.protocol === 'rediss:') redisOptions.tls = {};
      const cluster = new Cluster([{ host: hostOf(url), port: portOf(url) }], {
        lazyConnect: true,
        redisOptions,
        clusterRetryStrategy: (times) => (times <= RETRIES ? 100 * times : null),
        slotsRefreshTimeout: 2_000,
        enableOfflineQueue: true,
        maxRedirections: 8,
      });
      return fromIoredisClient(cluster);
    },
  };
}

function fromIoredisClient(client: IoredisRedis | IoredisCluster): CliClient {
  const self: CliClient = {
    client: client,
    connect: async () => {
      await client.connect();
    },
    call: ([command, ...args]) => client.call(String(command), ...args),
    onError: (listener) => void client.on('error', listener),
    onEnd: (listener) => void client.once('end', listener),
    masters: () => Promise.resolve('nodes' in client && typeof client.nodes === 'function' && 'isCluster' in client ? client.nodes('master').map(fromIoredisClient) : [self]),
    close: () => client.disconnect(),
  };
  return self;
}

// node-redis (`redis` 4 to 6, or `@redis/client`): typed by the few members used here, so that
// nothing needs its (very generic) declarations.

interface NodeRedisCommon {
  connect(): Promise<unknown>;
  on(event: string, listener: (...args: never[]) => void): unknown;
  /** 4.x: drops the socket at once (deprecated in 5 for destroy()). */
  disconnect?(): Promise<unknown>;
  destroy?(): void;
}

interface NodeRedisClientObject extends NodeRedisCommon {
  sendCommand(args: string[]): Promise<unknown>;
}

interface NodeRedisClusterObject extends NodeRedisCommon {
  readonly masters: readonly object[];
  nodeClient(node: object): NodeRedisClientObject | Promise<NodeRedisClientObject>;
  sendCommand(firstKey: string | undefined, isReadonly: boolean | undefined, args: string[]): Promise<unknown>;
}

interface NodeRedisSentinelObject extends NodeRedisCommon {
  sendCommand(isReadonly: boolean | undefined, args: string[]): Promise<unknown>;
}

interface NodeRedisModule {
  createClient(options: object): NodeRedisClientObject;
  createCluster(options: object): NodeRedisClusterObject;
  /** From `redis` 5 on. */
  createSentinel?(options: object): NodeRedisSentinelObject;
}

/** node-redis's socket options for the command: a bounded connect, a few quick reconnections. */
function nodeRedisSocket(): object {
  return {
    connectTimeout: CONNECT_TIMEOUT_MS,
    reconnectStrategy: (retries: number, cause: Error) => (retries < RETRIES ? 100 * (retries + 1) : cause),
  };
}

function nodeRedis(name: 'redis' | '@redis/client', module: NodeRedisModule): ClientLibrary {
  return {
    name,
    server: (url) => {
      const client = module.createClient({ url, socket: nodeRedisSocket(), disableOfflineQueue: true });
      return fromNodeRedisObject(client, (args) => client.sendCommand(args));
    },
    sentinel: (target) => {
      if (module.createSentinel === undefined) throw new CliError(`Sentinel needs node-redis 5 or later (${name} here has no createSentinel), or ioredis`);
      const nodeClientOptions: Record<string, unknown> = { socket: nodeRedisSocket() };
      if (target.username !== undefined) nodeClientOptions['username'] = target.username;
      if (target.password !== undefined) nodeClientOptions['password'] = target.password;
      if (target.db !== undefined) nodeClientOptions['database'] = target.db;
      const sentinelClientOptions: Record<string, unknown> = { socket: nodeRedisSocket() };
      if (target.sentinelUsername !== undefined) sentinelClientOptions['username'] = target.sentinelUsername;
      if (target.sentinelPassword !== undefined) sentinelClientOptions['password'] = target.sentinelPassword;
      const sentinel = module.createSentinel({ name: target.name, sentinelRootNodes: target.sentinels.map(({ host, port }) => ({ host, port })), nodeClientOptions, sentinelClientOptions });
      return fromNodeRedisObject(sentinel, (args) => sentinel.sendCommand(false, args));
    },
    cluster: (url) => {
      const defaults: Record<string, unknown> = { socket: { ...nodeRedisSocket(), ...(url.protocol === 'rediss:' ? { tls: true } : {}) } };
      if (url.username !== '') defaults['username'] = decodeURIComponent(url.username);
      if (url.password !== '') defaults['password'] = decodeURIComponent(url.password);
      const cluster = module.createCluster({ rootNodes: [{ socket: { host: hostOf(url), port: portOf(url) } }], defaults, maxCommandRedirections: 8 });
      // The commands sent through the Cluster itself (INFO, CLUSTER INFO) go to any node.
      const self = fromNodeRedisObject(cluster, (args) => cluster.sendCommand(undefined, false, args));
      return {
        ...self,
        masters: async () => Promise.all(cluster.masters.map(async (master) => {
          const node = await cluster.nodeClient(master);
          return fromNodeRedisObject(node, (args) => node.sendCommand(args), { owned: false });
        })),
      };
    },
  };
}

function fromNodeRedisObject(client: NodeRedisCommon, send: (args: string[]) => Promise<unknown>, { owned = true } = {}): CliClient {
  let closed = false;
  const self: CliClient = {
    client: client as unknown as RedisClient,
    connect: async () => {
      await client.connect();
    },
    // RESP3 answers INFO with a verbatim string object: the commands read text.
    call: async (args) => normalize(await send(args.map(String))),
    onError: (listener) => void client.on('error', listener),
    onEnd: (listener) => void client.on('end', () => listener()),
    masters: () => Promise.resolve([self]),
    close: () => {
      // A Cluster's node clients are the Cluster's to close.
      if (closed || !owned) return;
      closed = true;
      if (typeof client.destroy === 'function') client.destroy();
      else void client.disconnect?.().catch(() => undefined);
    },
  };
  return self;
}

/** Replies as ioredis gives them: strings for text (node-redis 5+ may give a `VerbatimString` or Buffer). */
function normalize(reply: unknown): unknown {
  if (Array.isArray(reply)) return reply.map(normalize);
  if (reply instanceof String || Buffer.isBuffer(reply)) return reply.toString();
  return reply;
}

function hostOf(url: URL): string {
  return url.hostname.replace(/^\[|\]$/g, '');
}

function portOf(url: URL): number {
  return Number(url.port || 6379);
}
