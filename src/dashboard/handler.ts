/**
 * `createDashboard(options)`: the dashboard as a `node:http` request listener, which also works as
 * Express or Fastify middleware (`app.use('/locks', dashboard)`) and under a path prefix of a plain
 * server (`basePath`). Routes, relative to where it is mounted:
 * - `GET /` the page (HTML, its CSS and script inline: nothing is fetched from elsewhere);
 * - `GET /events` the live feed (server-sent events: `snapshot` and `problem` events);
 * - `GET /snapshot.json` one snapshot;
 * - `POST /release` `{ name, kind, confirm, why }`, only with `allowRelease`: force-releases the
 *   lock when `confirm` is its name, and records who/when/why in the audit log.
 * `authorize(req)` is asked before any of them.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { LockKind } from '../lock-state.js';
import type { Padlock } from '../padlock.js';
import type { RedisClient } from '../stores/redis/adapters/clients.js';
import { CatalogSource } from './catalog-source.js';
import { LiveFeed } from './live-feed.js';
import { pageHtml } from './page.js';
import { RedisSource } from './redis-source.js';
import type { DashboardSource } from './source.js';

/** Who may use the dashboard: `false` refuses (403); a string names the operator in the audit log; `true` allows (the audit log then names the remote address). */
export type Authorize = (req: IncomingMessage) => boolean | string | Promise<boolean | string>;

/** Options of {@link createDashboard}: a Redis client (or a Padlock with it), a Padlock on another store, or a source of any kind. */
export interface DashboardOptions {
  /** The application's Redis client (one server, Sentinel, Cluster), or its Redlock masters. Either this or `source`. */
  readonly redis?: RedisClient | readonly RedisClient[] | undefined;
  /**
   * The application's Padlock on that Redis: its prefix is used, and force-releases go through it.
   * Without `redis`: a Padlock on ZooKeeper, etcd or PostgreSQL, whose locks are read through its
   * store's catalog (`CatalogSource`).
   */
  readonly padlock?: Padlock | undefined;
  /** The key prefix of the locks. @default the Padlock's, else `'padlock'` */
  readonly prefix?: string | undefined;
  /** What to call the store in the page's header. @default its kind and the prefix, e.g. `a Redis Cluster, prefix padlock` */
  readonly description?: string | undefined;
  /** A store other than Redis (see {@link DashboardSource}), instead of `redis`. */
  readonly source?: DashboardSource | undefined;
  /** Offer Force release on each held lock. @default false (read-only) */
  readonly allowRelease?: boolean | undefined;
  /** Asked before every request. @default everyone may (mount it behind your own authentication) */
  readonly authorize?: Authorize | undefined;
  /** The path prefix it serves under on a plain `node:http` server (`/admin/locks`); not needed under Express's `app.use(path, …)`. */
  readonly basePath?: string | undefined;
  /** Time between two reads while a page is open, in ms (100 to 60 000). @default 1000 */
  readonly intervalMs?: number | undefined;
}

/** A request listener (and middleware) serving the dashboard. */
export interface Dashboard {
  /** Serves one request; `next` (middleware) is called for a path outside `basePath`. */
  (req: IncomingMessage, res: ServerResponse, next?: (error?: unknown) => void): void;
  /** Ends the open pages' streams and lets go of what the dashboard opened (never the application's client or Padlock). */
  close(): Promise<void>;
}

/** The body of a force-release request. */
interface ReleaseRequest {
  readonly name: string;
  readonly kind: LockKind;
  readonly confirm: string;
  readonly why: string;
}

const KINDS: readonly LockKind[] = ['mutex', 'readWrite', 'semaphore'];
/** A release request's body is small; more is refused. */
const MAX_BODY = 16_384;
/** The longest reason kept in the audit log. */
const MAX_WHY = 500;

/**
 * Makes the dashboard's request listener.
 * @example
 * ```ts
 * import { createServer } from 'node:http';
 * import { createDashboard } from 'padlock/dashboard';
 * createServer(createDashboard({ redis, padlock })).listen(8080, '127.0.0.1');
 * ```
 * @throws TypeError for options it cannot use (none of `redis`, `padlock`, `source`; a bad `intervalMs` or `basePath`)
 */
export function createDashboard(options: DashboardOptions): Dashboard {
  const source =
    options.source ??
    (options.redis !== undefined
      ? new RedisSource({ redis: options.redis, padlock: options.padlock, prefix: options.prefix, description: options.description })
      : options.padlock !== undefined
        ? new CatalogSource({ padlock: options.padlock, description: options.description })
        : undefined);
  if (source === undefined) throw new TypeError('createDashboard needs { redis } (the Redis client, or the Redlock masters), { padlock } (a Padlock on ZooKeeper, etcd or PostgreSQL) or { source }');
  const intervalMs = options.intervalMs ?? 1_000;
  if (!Number.isInteger(intervalMs) || intervalMs < 100 || intervalMs > 60_000) throw new TypeError(`intervalMs must be an integer from 100 to 60000, got ${String(intervalMs)}`);
  const basePath = (options.basePath ?? '').replace(/\/+$/, '');
  if (basePath !== '' && !basePath.startsWith('/')) throw new TypeError(`basePath must start with '/', got '${basePath}'`);
  const allowRelease = options.allowRelease === true;
  const feed = new LiveFeed(source, { intervalMs, allowRelease });

  const handle = async (req: IncomingMessage, res: ServerResponse, next: ((error?: unknown) => void) | undefined): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://dashboard');
    let path = url.pathname;
    if (basePath !== '') {
      if (path !== basePath && !path.startsWith(`${basePath}/`)) return next !== undefined ? next() : send(res, 404, 'text/plain', 'not found');
      path = path.slice(basePath.length);
    }
    const allowed = options.authorize === undefined ? true : await options.authorize(req);
    if (allowed === false) return send(res, 403, 'text/plain', 'forbidden');
    const who = typeof allowed === 'string' ? allowed : (req.socket.remoteAddress ?? 'unknown');
    const method = req.method ?? 'GET';
    if (path === '' || path === '/') {
      if (method !== 'GET' && method !== 'HEAD') return send(res, 405, 'text/plain', 'method not allowed', { allow: 'GET' });
      const original = (req as { originalUrl?: string }).originalUrl ?? req.url ?? '/';
      const originalPath = original.split('?', 1)[0] ?? '/';
      // Relative links (events, release) need the page's URL to end with '/'.
      if (!originalPath.endsWith('/')) return send(res, 308, 'text/plain', 'moved', { location: `${originalPath}/${url.search}` });
      const nonce = randomBytes(16).toString('base64');
      return send(res, 200, 'text/html; charset=utf-8', pageHtml(nonce), {
        'content-security-policy': `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`,
        'x-content-type-options': 'nosniff',
        'referrer-policy': 'no-referrer',
      });
    }
    if (path === '/events' && method === 'GET') return feed.listen(res);
    if (path === '/snapshot.json' && method === 'GET') return send(res, 200, 'application/json', JSON.stringify(await feed.snapshot()));
    if (path === '/release') {
      if (method !== 'POST') return send(res, 405, 'text/plain', 'method not allowed', { allow: 'POST' });
      if (!allowRelease) return sendJson(res, 403, { error: 'this dashboard is read-only (start it with --allow-release, or allowRelease: true)' });
      // A custom header: a cross-site form cannot send it, and a cross-site fetch would need CORS approval.
      if (req.headers['x-padlock-dashboard'] !== '1' || !/^application\/json\b/.test(req.headers['content-type'] ?? '')) return sendJson(res, 400, { error: 'send JSON with the x-padlock-dashboard: 1 header' });
      const request = releaseRequest(await readBody(req));
      if (typeof request === 'string') return sendJson(res, 400, { error: request });
      if (request.confirm !== request.name) return sendJson(res, 400, { error: "the name typed does not match the lock's name" });
      const outcome = await source.forceRelease(request.name, request.kind);
      const entry = { at: new Date().toISOString(), who, name: request.name, kind: request.kind, fence: outcome.fence, why: request.why, released: outcome.released };
      await source.audit(entry);
      feed.refresh();
      return sendJson(res, 200, entry);
    }
    return send(res, 404, 'text/plain', 'not found');
  };

  const dashboard = ((req: IncomingMessage, res: ServerResponse, next?: (error?: unknown) => void): void => {
    handle(req, res, next).catch((error: unknown) => {
      if (res.headersSent) return void res.end();
      sendJson(res, 500, { error: error instanceof Error ? error.message : String(error) });
    });
  }) as Dashboard;
  dashboard.close = async () => {
    feed.close();
    if (options.source === undefined) await source.close();
  };
  return dashboard;
}

function send(res: ServerResponse, status: number, type: string, body: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store', ...headers });
  res.end(body);
}

function sendJson(res: ServerResponse, status: number, value: unknown): void {
  send(res, status, 'application/json', JSON.stringify(value));
}

/** The request's body as text, at most {@link MAX_BODY} bytes. */
async function readBody(req: IncomingMessage): Promise<string> {
  // Behind a body parser (Express's express.json(), say) the stream was read already: its result is here.
  const parsed = (req as { body?: unknown }).body;
  if (typeof parsed === 'string') return parsed;
  if (Buffer.isBuffer(parsed)) return parsed.toString('utf8');
  if (typeof parsed === 'object' && parsed !== null && Object.keys(parsed).length > 0) return JSON.stringify(parsed);
  let body = '';
  for await (const chunk of req as AsyncIterable<Buffer>) {
    body += chunk.toString('utf8');
    if (body.length > MAX_BODY) throw new Error('the request body is too large');
  }
  return body;
}

/** The release request in `body`, or what is wrong with it. */
function releaseRequest(body: string): ReleaseRequest | string {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    return 'the body is not JSON';
  }
  if (typeof value !== 'object' || value === null) return 'expected { name, kind, confirm, why }';
  const { name, kind, confirm, why } = value as Record<string, unknown>;
  if (typeof name !== 'string' || name === '' || name.length > 1_000) return 'name must be a lock name';
  if (!KINDS.includes(kind as LockKind)) return `kind must be one of ${KINDS.join(', ')}`;
  if (typeof confirm !== 'string') return 'confirm must be the lock name, typed';
  if (why !== undefined && typeof why !== 'string') return 'why must be text';
  return { name, kind: kind as LockKind, confirm, why: (why ?? '').slice(0, MAX_WHY) };
}
