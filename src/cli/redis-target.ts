/**
 * Where a CLI command finds Redis: `--url`, else `REDIS_URL`, else (for commands that allow it) a
 * private `redis-server` on a free loopback port that is stopped when the command ends. Every way
 * of failing becomes a one-line {@link CliError} within a bounded time.
 */
import { RedisServerStartError, startRedisServer, type RedisServer } from '../devserver/redis-server.js';
import { loadClientLibrary, type CliClient } from './client-library.js';
import { describeConnectError } from '../stores/redis/adapters/connect-errors.js';
import { CliError, firstLine, usageError } from './errors.js';

/** How long connecting and the first PING may take before Redis counts as unreachable. */
export const CONNECT_TIMEOUT_MS = 5_000;

/** The Redis a command talks to. */
export interface RedisTarget {
  /** The URL to connect to (may hold a password: print {@link RedisTarget.displayUrl} instead). */
  readonly url: string;
  /** The URL with any password replaced by `***`. */
  readonly displayUrl: string;
  /** Where the URL came from. */
  readonly source: '--url' | 'REDIS_URL' | 'private';
  /** The private server, when the command started one. */
  readonly server: RedisServer | undefined;
  /** Stops the private server, if any. Safe to call twice. */
  stop(): Promise<void>;
}

/**
 * Checks that `url` is a `redis://` or `rediss://` URL with a host.
 * @param source how the user gave it, for the message
 * @throws CliError (exit code 2) saying what a valid URL looks like
 */
export function checkRedisUrl(url: string, source: string): URL {
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    parsed = undefined;
  }
  const db = parsed?.pathname.replace(/^\//, '') ?? '';
  if (parsed === undefined || (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') || parsed.hostname === '' || !/^\d*$/.test(db)) {
    throw usageError(`invalid Redis URL '${redactUrl(url)}' in ${source}: expected redis://[[user]:password@]host[:port][/db] (or rediss:// for TLS)`);
  }
  return parsed;
}

/** `url` with its password (if any) replaced by `***`. */
export function redactUrl(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:@/]*:)[^@/]*@/i, '$1***@');
}

/**
 * Resolves the Redis to use: `url` (from `--url`), else `env.REDIS_URL`, else a private
 * `redis-server` when `allowPrivate` is true.
 * @throws CliError for a malformed URL (exit code 2), or when no URL was given and `redis-server` cannot be started
 */
export async function resolveRedisTarget(options: { url: string | undefined; env: NodeJS.ProcessEnv; allowPrivate: boolean }): Promise<RedisTarget> {
  const given = options.url !== undefined ? { url: options.url, source: '--url' as const } : options.env['REDIS_URL'] ? { url: options.env['REDIS_URL'], source: 'REDIS_URL' as const } : undefined;
  if (given !== undefined) {
    checkRedisUrl(given.url, given.source);
    return { ...given, displayUrl: redactUrl(given.url), server: undefined, stop: () => Promise.resolve() };
  }
  if (!options.allowPrivate) throw usageError('no Redis given: pass --url redis://host:port or set REDIS_URL');
  let server: RedisServer;
  try {
    server = await startRedisServer();
  } catch (error) {
    if (error instanceof RedisServerStartError) throw new CliError(firstLine(error).replace(/:$/, ''), undefined, { cause: error });
    throw error;
  }
  return { url: server.url, displayUrl: server.url, source: 'private', server, stop: () => server.stop() };
}

/**
 * Connects to `target` through the client library installed, and checks it answers PING, within
 * {@link CONNECT_TIMEOUT_MS}.
 * @throws CliError naming the URL and the reason (refused, unknown host, timeout, auth, no client installed)
 */
export async function connectRedis(target: Pick<RedisTarget, 'url' | 'displayUrl'>, env: NodeJS.ProcessEnv): Promise<CliClient> {
  const client = (await loadClientLibrary(env)).server(target.url);
  // connect() rejects with a bare "Connection is closed."; the socket's error (ECONNREFUSED,
  // ENOTFOUND, …) arrives as an event just before, and says more.
  let socketError: unknown;
  client.onError((error) => (socketError ??= error));
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      (async () => {
        await client.connect();
        await client.call(['PING']);
      })(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${CONNECT_TIMEOUT_MS / 1000} s`)), CONNECT_TIMEOUT_MS);
      }),
    ]);
    return client;
  } catch (error) {
    // connect() rejects at the first failure; close() also stops the reconnection attempts.
    client.close();
    const cause = socketError ?? error;
    throw new CliError(`cannot reach Redis at ${target.displayUrl}: ${describeConnectError(cause)}`, undefined, { cause });
  } finally {
    clearTimeout(timer);
  }
}

/** The server's `redis_version`, or `'?'`. */
export async function serverVersion(client: CliClient): Promise<string> {
  const info = String(await client.call(['INFO', 'server']));
  return /redis_version:([^\r\n]+)/.exec(info)?.[1] ?? '?';
}
