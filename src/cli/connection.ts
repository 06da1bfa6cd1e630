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
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import { CliError, firstLine, usageError } from './errors.js';
import { checkRedisUrl, cliRedisOptions, CONNECT_TIMEOUT_MS, describeConnectError, redactUrl } from './redis-target.js';

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
      readonly options: Pick<RedisOptions, 'username' | 'password' | 'db' | 'sentinelUsername' | 'sentinelPassword'>;
    };

/** An open connection to the Redis of a {@link Target}. */
export interface Connection {
  /** The client: a `Redis` (one server, or Sentinel mode) or a `Cluster`. */
  readonly client: Redis | Cluster;
  readonly topology: TopologyName;
  /** The URL without its password. */
  readonly displayUrl: string;
  /** For headers: `redis://127.0.0.1:6379 (one server, redis 7.2.4)`. */
  readonly description: string;
  /** Every node whose keys a `SCAN` must walk: the server, or each master of the Cluster. */
  scanNodes(): Redis[];
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
  const options: Record<string, string | number> = {};
  if (username !== undefined) options['username'] = username;
  if (password !== undefined) options['password'] = password;
  if (db !== undefined) options['db'] = Number(db);
  const sentinelUsername = params.get('sentinelUsername');
  const sentinelPassword = params.get('sentinelPassword');
  if (sentinelUsername !== null) options['sentinelUsername'] = sentinelUsername;
  if (sentinelPassword !== null) options['sentinelPassword'] = sentinelPassword;
  const displayUrl = redactUrl(url).replace(/([?&]sentinelPassword=)[^&#]*/, '$1***');
  return { topology: 'sentinel', displayUrl, sentinels, name: decode(name) ?? name, options };
}

/**
 * Connects to `target` and checks it answers, within {@link CONNECT_TIMEOUT_MS}; a server found to
 * be a Cluster node is reconnected to as a Cluster.
 * @throws CliError (exit code 1) naming the URL and the reason
 */
export async function connect(target: Target): Promise<Connection> {
  if (target.topology === 'sentinel') {
    const client = new Redis({
      ...cliRedisOptions(),
      ...target.options,
      sentinels: [...target.sentinels],
      name: target.name,
      sentinelRetryStrategy: (times) => (times <= 3 ? 100 * times : null),
    });
    await ready(client, target.displayUrl, () => client.ping());
    return connection(client, 'sentinel', target.displayUrl, await version(client), `Sentinel primary '${target.name}'`);
  }
  // One server first, even with --cluster: it tells a Cluster node from a server, and gives a
  // clearer error than a Cluster client's for a server that is down.
  const client = new Redis(target.url, cliRedisOptions());
  await ready(client, target.displayUrl, () => client.ping());
  const info = await client.info('cluster').catch(() => '');
  if (!/^cluster_enabled:1/m.test(info)) {
    if (target.topology === 'server') return connection(client, 'server', target.displayUrl, await version(client), 'one server');
    client.disconnect();
    throw usageError(`--cluster was given, but ${target.displayUrl} is not a Cluster node (cluster_enabled is not 1)`);
  }
  client.disconnect();
  const cluster = new Cluster([{ host: target.parsed.hostname.replace(/^\[|\]$/g, ''), port: Number(target.parsed.port || 6379) }], clusterOptions(target.parsed));
  await ready(cluster, target.displayUrl, async () => {
    const info = String(await cluster.call('CLUSTER', 'INFO'));
    if (!/^cluster_state:ok/m.test(info)) throw new Error(`the Cluster's state is not ok (${/^cluster_state:(\w+)/m.exec(info)?.[1] ?? '?'})`);
  });
  const masters = cluster.nodes('master').length;
  return connection(cluster, 'cluster', target.displayUrl, await version(cluster), `Cluster of ${masters} master${masters === 1 ? '' : 's'}`);
}

function clusterOptions(url: URL): ClusterOptions {
  // A node's connecting and retries are the Cluster's business: it reconnects through the slot map.
  const redisOptions: RedisOptions = cliRedisOptions();
  delete redisOptions.lazyConnect;
  delete redisOptions.retryStrategy;
  if (url.username !== '') redisOptions.username = decodeURIComponent(url.username);
  if (url.password !== '') redisOptions.password = decodeURIComponent(url.password);
  if (url.protocol === 'rediss:') redisOptions.tls = {};
  return {
    lazyConnect: true,
    redisOptions,
    clusterRetryStrategy: (times) => (times <= 3 ? 100 * times : null),
    slotsRefreshTimeout: 2_000,
    enableOfflineQueue: true,
    maxRedirections: 8,
  };
}

/** Connects `client` and runs `check`, within the time limit; on failure closes it and throws a one-line error. */
async function ready(client: Redis | Cluster, displayUrl: string, check: () => Promise<unknown>): Promise<void> {
  // connect() rejects with a bare "Connection is closed."; the socket's error (ECONNREFUSED,
  // ENOTFOUND, …) arrives as an event just before, and says more.
  let socketError: unknown;
  const onError = (error: unknown): void => void (socketError ??= error);
  client.on('error', onError);
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
    client.disconnect();
    const cause = socketError ?? error;
    throw new CliError(`cannot reach Redis at ${displayUrl}: ${describeConnectError(cause)}`, undefined, { cause });
  } finally {
    clearTimeout(timer);
    client.off('error', onError);
  }
}

async function version(client: Redis | Cluster): Promise<string> {
  const info = await client.info('server').catch(() => '');
  return /redis_version:([^\r\n]+)/.exec(info)?.[1] ?? '?';
}

function connection(client: Redis | Cluster, topology: TopologyName, displayUrl: string, redisVersion: string, what: string): Connection {
  const lost: ((error: Error) => void)[] = [];
  let lastError: Error | undefined;
  let closed = false;
  client.on('error', (error: Error) => void (lastError = error));
  // 'end': the client gave up reconnecting (the retry strategies above stop after 3 attempts).
  client.on('end', () => {
    if (closed) return;
    const error = new Error(lastError === undefined ? 'the connection was closed' : describeConnectError(lastError));
    for (const listener of lost.splice(0)) listener(error);
  });
  return {
    client,
    topology,
    displayUrl,
    description: `${displayUrl} (${what}, redis ${redisVersion})`,
    scanNodes: () => (client instanceof Cluster ? client.nodes('master') : [client]),
    onLost: (listener) => void lost.push(listener),
    close: () => {
      if (closed) return;
      closed = true;
      client.disconnect();
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
