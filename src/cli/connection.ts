/**
 * How the operator commands (`list`, `inspect`, `release`, `watch`) reach Redis: one server, a
 * Sentinel-managed primary, or a Cluster, from `--url` (or `REDIS_URL`) and `--cluster`.
 *
 * - `redis://[[user]:password@]host[:port][/db]`, `rediss://…` for TLS: one server. If that server
 *   is a Cluster node, the Cluster is used (as with `--cluster`).
 * - `redis+sentinel://[[user]:password@]host[:port][,host[:port]…]/masterName[/db]`: the primary
 *   the sentinels name (port 26379 by default; `?sentinelPassword=…&sentinelUsername=…` when the
 *   sentinels require their own credentials).
 * - `--cluster`: the URL is one node of a Cluster (an error if it is not one).
 *
 * Every failure is a one-line {@link CliError} within {@link CONNECT_TIMEOUT_MS}.
 */
import type { ScanNode } from '../stores/redis/inspection.js';
import { connectionFor, type RedisClient } from '../stores/redis/adapters/clients.js';
import { loadClientLibrary, type CliClient, type SentinelTarget } from './client-library.js';
import { CliError, firstLine, usageError } from './errors.js';
import { describeConnectError } from '../stores/redis/adapters/connect-errors.js';
import { checkRedisUrl, CONNECT_TIMEOUT_MS, redactUrl } from './redis-target.js';

/** The shape of Redis a command talks to. */
export type TopologyName = 'server' | 'sentinel' | 'cluster';

/** Where to connect, parsed from the command line. */
export type Target =
  | { readonly topology: 'server' | 'cluster'; readonly url: string; readonly parsed: URL; readonly displayUrl: string }
  | {
      readonly topology: 'sentinel';
      readonly displayUrl: string;
      readonly sentinels: readonly { host: string; port: number }[];
      readonly name: string;
      readonly options: Omit<SentinelTarget, 'sentinels' | 'name'>;
    };

/** An open connection to the Redis of a {@link Target}. */
export interface Connection {
  /** The client library's own object (a server's, a Sentinel primary's or a Cluster's), for `new Padlock`. */
  readonly client: RedisClient;
  /** The client library the command runs on (`ioredis`, `iovalkey`, `redis`). */
  readonly library: string;
  readonly topology: TopologyName;
  /** The URL without its password. */
  readonly displayUrl: string;
  /** For headers: `redis://127.0.0.1:6379 (one server, redis 7.2.4)`. */
  readonly description: string;
  /** Every node whose keys a `SCAN` must walk: the server, or each master of the Cluster. */
  scanNodes(): Promise<ScanNode[]>;
  /** The same nodes as servers to ask about themselves (`INFO`), each with its address. */
  servers(): Promise<ServerNode[]>;
  /** Calls `listener` once if the connection is lost for good (the client gave up reconnecting). */
  onLost(listener: (error: Error) => void): void;
  /** Closes the client. Safe to call twice. */
  close(): void;
}

const SENTINEL_URL = /^(rediss?)\+sentinel:\/\/(?:([^@/]*)@)?([^/?#]+)\/([^/?#]+)(?:\/(\d+))?\/?(?:\?([^#]*))?$/i;
const URL_FORMS =
  'expected redis://[[user]:password@]host[:port][/db], rediss://… for TLS, or redis+sentinel://[[user]:password@]host[:port][,host[:port]…]/masterName[/db]';

/**
 * Parses the target: `url` (from `--url`), else `env.REDIS_URL`.
 * @throws CliError (exit code 2) when neither is given, the URL is malformed, or `--cluster` is
 * combined with a Sentinel URL
 */
export function parseTarget(options: { url: string | undefined; cluster: boolean; env: NodeJS.ProcessEnv }): Target {
  const given = options.url !== undefined ? { url: options.url, source: '--url' } : options.env['REDIS_URL'] ? { url: options.env['REDIS_URL'], source: 'REDIS_URL' } : undefined;
  if (given === undefined) throw usageError('no Redis given: pass --url redis://host:port or set REDIS_URL');
  const { url, source } = given;
  if (/^[a-z]+\+sentinel:/i.test(url)) {
    if (options.cluster) throw usageError(`--cluster does not go with a Sentinel URL (${source})`);
    return parseSentinelUrl(url, source);
  }
  let parsed: URL;
  try {
    parsed = checkRedisUrl(url, source);
  } catch {
    throw usageError(`invalid Redis URL '${redactUrl(url)}' in ${source}: ${URL_FORMS}`);
  }
  if (options.cluster && parsed.pathname.replace(/^\//, '') !== '' && parsed.pathname !== '/0') {
    throw usageError(`a Redis Cluster has only database 0: drop the '${parsed.pathname}' from ${source}`);
  }
  return { topology: options.cluster ? 'cluster' : 'server', url, parsed, displayUrl: redactUrl(url) };
}

function parseSentinelUrl(url: string, source: string): Target {
  const invalid = (why: string): CliError => usageError(`invalid Sentinel URL '${redactUrl(url)}' in ${source}: ${why}`);
  const match = SENTINEL_URL.exec(url);
  if (match === null) throw invalid('expected redis+sentinel://[[user]:password@]host[:port][,host[:port]…]/masterName[/db]');
  const [, scheme = '', userinfo, hostList = '', name = '', db, query] = match;
  if (scheme.toLowerCase() === 'rediss') throw invalid('TLS to Sentinel (rediss+sentinel://) is not supported by the padlock CLI yet');
  const sentinels = hostList.split(',').map((hostPort) => {
    const m = /^(?:\[([0-9a-f:.]+)\]|([^:[\]]+))(?::(\d{1,5}))?$/i.exec(hostPort);
    const host = m?.[1] ?? m?.[2];
    const port = m?.[3] === undefined ? 26379 : Number(m[3]);
    if (host === undefined || port < 1 || port > 65535) throw invalid(`'${hostPort}' is not host[:port]`);
    return { host, port };
  });
  const decode = (text: string | undefined): string | undefined => {
    if (text === undefined || text === '') return undefined;
    try {
      return decodeURIComponent(text);
    } catch {
      throw invalid(`'${text}' is not percent-encoded properly`);
    }
  };
  const colon = userinfo?.indexOf(':') ?? -1;
  const username = decode(colon >= 0 ? userinfo?.slice(0, colon) : userinfo);
  const password = decode(colon >= 0 ? userinfo?.slice(colon + 1) : undefined);
  const params = new URLSearchParams(query ?? '');
  for (const key of params.keys()) {
    if (key !== 'sentinelPassword' && key !== 'sentinelUsername') throw invalid(`unknown parameter '${key}' (sentinelPassword and sentinelUsername are known)`);
  }
  const sentinelUsername = params.get('sentinelUsername');
  const sentinelPassword = params.get('sentinelPassword');
  const options: Omit<SentinelTarget, 'sentinels' | 'name'> = {
    ...(username === undefined ? {} : { username }),
    ...(password === undefined ? {} : { password }),
    ...(db === undefined ? {} : { db: Number(db) }),
    ...(sentinelUsername === null ? {} : { sentinelUsername }),
    ...(sentinelPassword === null ? {} : { sentinelPassword }),
  };
  const displayUrl = redactUrl(url).replace(/([?&]sentinelPassword=)[^&#]*/, '$1***');
  return { topology: 'sentinel', displayUrl, sentinels, name: decode(name) ?? name, options };
}

/**
 * Connects to `target` through the client library installed (client-library.ts) and checks it
 * answers, within {@link CONNECT_TIMEOUT_MS}; a server found to be a Cluster node is reconnected to
 * as a Cluster; a database the server does not have (`/99`) is an error, not database 0.
 * @throws CliError (exit code 1) naming the URL and the reason
 */
export async function connect(target: Target, env: NodeJS.ProcessEnv): Promise<Connection> {
  const library = await loadClientLibrary(env);
  if (target.topology === 'sentinel') {
    const client = library.sentinel({ ...target.options, sentinels: target.sentinels, name: target.name });
    await ready(client, target.displayUrl, () => checkRedis(client));
    return connection(client, library.name, 'sentinel', target.displayUrl, await version(client), `Sentinel primary '${target.name}'`);
  }
  // One server first, even with --cluster: it tells a Cluster node from a server, and gives a
  // clearer error than a Cluster client's for a server that is down.
  const client = library.server(target.url);
  await ready(client, target.displayUrl, () => checkRedis(client));
  const info = String(await client.call(['INFO', 'cluster']).catch(() => ''));
  if (!/^cluster_enabled:1/m.test(info)) {
    if (target.topology === 'server') {
      await selectDatabase(client, target).catch((error: unknown) => {
        client.close();
        throw error;
      });
      return connection(client, library.name, 'server', target.displayUrl, await version(client), 'one server');
    }
    client.close();
    throw usageError(`--cluster was given, but ${target.displayUrl} is not a Cluster node (cluster_enabled is not 1)`);
  }
  client.close();
  const cluster = library.cluster(target.parsed);
  await ready(cluster, target.displayUrl, async () => {
    const info = String(await cluster.call(['CLUSTER', 'INFO']));
    if (!/^cluster_state:ok/m.test(info)) throw new Error(`the Cluster's state is not ok (${/^cluster_state:(\w+)/m.exec(info)?.[1] ?? '?'})`);
  });
  const masters = (await cluster.masters()).length;
  return connection(cluster, library.name, 'cluster', target.displayUrl, await version(cluster), `Cluster of ${masters} master${masters === 1 ? '' : 's'}`);
}

/**
 * PING, and on the answer check the server is a Redis: a server of another protocol (HTTP, …)
 * makes the clients fail with their own words ("Unknown RESP type", "Protocol error").
 */
async function checkRedis(client: CliClient): Promise<void> {
  const reply = await client.call(['PING']);
  if (reply !== 'PONG') throw new Error(`it answered PING with ${JSON.stringify(reply)}, not PONG: is it a Redis server?`);
}

/**
 * SELECTs the URL's database once more, to learn whether the server has it: clients that fail it
 * on connecting only emit an error and go on in database 0.
 * @throws CliError naming the database and the server's answer
 */
async function selectDatabase(client: CliClient, target: Extract<Target, { topology: 'server' | 'cluster' }>): Promise<void> {
  const db = target.parsed.pathname.replace(/^\//, '');
  if (db === '' || db === '0') return;
  try {
    await client.call(['SELECT', db]);
  } catch (error) {
    throw new CliError(`Redis at ${target.displayUrl} has no database ${db}: ${firstLine(error)}`, undefined, { cause: error });
  }
}

/** Connects `client` and runs `check`, within the time limit; on failure closes it and throws a one-line error. */
async function ready(client: CliClient, displayUrl: string, check: () => Promise<unknown>): Promise<void> {
  // connect() rejects with a bare "Connection is closed."; the socket's error (ECONNREFUSED,
  // ENOTFOUND, …) arrives as an event just before, and says more. The listener stays (node-redis
  // throws an error nobody listens to), but only the first error counts.
  let socketError: unknown;
  let connecting = true;
  client.onError((error) => {
    if (connecting) socketError ??= error;
  });
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      (async () => {
        await client.connect();
        await check();
      })(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${CONNECT_TIMEOUT_MS / 1000} s`)), CONNECT_TIMEOUT_MS);
      }),
    ]);
  } catch (error) {
    client.close();
    const cause = socketError ?? error;
    throw new CliError(`cannot reach Redis at ${displayUrl}: ${describeConnectError(cause)}`, undefined, { cause });
  } finally {
    connecting = false;
    clearTimeout(timer);
  }
}

async function version(client: CliClient): Promise<string> {
  const info = String(await client.call(['INFO', 'server']).catch(() => ''));
  return /redis_version:([^\r\n]+)/.exec(info)?.[1] ?? '?';
}

/** One server the command's locks live on, to ask about itself. */
export interface ServerNode {
  /** `host:port`, as padlock's own adapter names it (`?` when it cannot). */
  readonly address: string;
  /** Sends one command to that server. */
  call(args: readonly (string | number)[]): Promise<unknown>;
}

function serverNode(client: CliClient): ServerNode {
  let address = '?';
  try {
    address = connectionFor('redis', client.client).address;
  } catch {
    // an object padlock's adapters do not read (a Cluster's node client of an older library): no address
  }
  return { address, call: (args) => client.call(args) };
}

/** `SCAN` on one node, as padlock's readers call it. */
function scanNode(client: CliClient): ScanNode {
  return { scan: async (cursor, match, pattern, count, n) => (await client.call(['SCAN', cursor, match, pattern, count, n])) as [string, string[]] };
}

function connection(client: CliClient, library: string, topology: TopologyName, displayUrl: string, redisVersion: string, what: string): Connection {
  const lost: ((error: Error) => void)[] = [];
  let lastError: Error | undefined;
  let closed = false;
  client.onError((error: Error) => void (lastError = error));
  // 'end': the client gave up reconnecting (the retry strategies stop after 3 attempts).
  client.onEnd(() => {
    if (closed) return;
    const error = new Error(lastError === undefined ? 'the connection was closed' : describeConnectError(lastError));
    for (const listener of lost.splice(0)) listener(error);
  });
  return {
    client: client.client,
    library,
    topology,
    displayUrl,
    description: `${displayUrl} (${what}, redis ${redisVersion})`,
    // The masters of the moment: a Cluster's may change while `watch` runs.
    scanNodes: async () => (await client.masters()).map(scanNode),
    servers: async () => (await client.masters()).map(serverNode),
    onLost: (listener) => void lost.push(listener),
    close: () => {
      if (closed) return;
      closed = true;
      client.close();
    },
  };
}

/**
 * The one-line error for a Redis call that failed on an open connection (a padlock error whose
 * cause is the client's, or the client's own).
 */
export function redisFailure(error: unknown, connection: Pick<Connection, 'displayUrl'>): CliError {
  if (error instanceof CliError) return error;
  const cause = error instanceof Error && error.cause !== undefined ? error.cause : error;
  const name = error instanceof Error ? error.name : '';
  if (name === 'RedisCommandError') return new CliError(`Redis at ${connection.displayUrl} refused a command: ${firstLine(cause)}`, undefined, { cause: error });
  return new CliError(`lost the connection to Redis at ${connection.displayUrl}: ${describeConnectError(cause)}`, undefined, { cause: error });
}
