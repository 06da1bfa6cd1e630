/**
 * Test harness: real redis-server processes on free loopback ports, ioredis clients that are
 * closed after the file's tests, and a guard that fails the file on any unhandled rejection.
 */
import { after, before } from 'node:test';
import './terminated.js';
import { Redis, type Cluster, type RedisOptions } from 'ioredis';
import { startRedisServer, type RedisServer, type RedisServerOptions } from '../../src/devserver/redis-server.js';
import { Padlock } from '../../src/index.js';
import type { PadlockOptions } from '../../src/options.js';
import type { ScriptCall } from '../../src/stores/redis/topology/topology.js';
import { isDeepStrictEqual } from 'node:util';

const unhandled: unknown[] = [];
process.on('unhandledRejection', (reason) => unhandled.push(reason));

const servers: RedisServer[] = [];
const clients: Redis[] = [];
const padlocks: Padlock[] = [];

after(async () => {
  await Promise.allSettled(padlocks.map((p) => p.close()));
  for (const client of clients) client.disconnect();
  await Promise.allSettled(servers.map((s) => s.stop()));
  // Fails the file without throwing: a hook that throws skips the after hooks registered behind it
  // (other harnesses' servers would then keep the file alive until its time-out).
  if (unhandled.length > 0) {
    console.error(`no unhandled rejection may happen; ${unhandled.length} did:`, ...unhandled);
    process.exitCode = 1;
  }
});

/** Starts a redis-server that is stopped after this file's tests. */
export async function startServer(options?: RedisServerOptions): Promise<RedisServer> {
  const server = await startRedisServer(options);
  servers.push(server);
  return server;
}

/** Starts `n` independent servers (Redlock). */
export function startServers(n: number): Promise<RedisServer[]> {
  return Promise.all(Array.from({ length: n }, () => startServer()));
}

/**
 * A Redlock set for a test file: `n` independent masters started before its tests, an ioredis admin
 * client to each, and a list of Padlocks closed after them. The arrays are filled in place.
 */
export function useMasters(n: number): { readonly masters: RedisServer[]; readonly admins: Redis[]; readonly padlocks: Padlock[] } {
  const set = { masters: [] as RedisServer[], admins: [] as Redis[], padlocks: [] as Padlock[] };
  before(async () => {
    set.masters.push(...(await startServers(n)));
    set.admins.push(...set.masters.map((m) => connect(m)));
  });
  after(() => Promise.all(set.padlocks.map((p) => p.close())));
  return set;
}

/** An ioredis client to `server`, disconnected after this file's tests. */
export function connect(server: RedisServer, options: RedisOptions = {}): Redis {
  const client = new Redis({ host: server.host, port: server.port, lazyConnect: false, ...options });
  // Tests that kill servers provoke connection errors on purpose.
  client.on('error', () => undefined);
  clients.push(client);
  return client;
}

/** A Padlock on `server` with its own connection, closed after this file's tests. */
export function padlockOn(server: RedisServer, options: Omit<PadlockOptions, 'redis'> = {}): Padlock {
  const padlock = new Padlock({ redis: connect(server), ...options });
  padlocks.push(padlock);
  return padlock;
}

/** Resolves after `ms`. */
export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * The reason a lease was told lost, once it is: at once when it already was (an `abort` listener
 * added after the event would never run, and the test would hang).
 */
export function lossOf(lease: { readonly signal: AbortSignal }): Promise<unknown> {
  const { signal } = lease;
  if (signal.aborted) return Promise.resolve(signal.reason);
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(signal.reason), { once: true }));
}

/** Polls `check` every 5 ms until it is true or `ms` pass; returns whether it became true. */
export async function eventually(check: () => boolean | Promise<boolean>, ms = 5_000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check()) return true;
    await delay(5);
  }
  return check();
}

/** Calls of one command since the server started, from INFO commandstats. */
export async function commandCalls(client: Redis, command: string): Promise<number> {
  const info = await client.info('commandstats');
  const match = new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(info);
  return match?.[1] === undefined ? 0 : Number(match[1]);
}

/** Counts of active handles by type (timers, sockets), for leak checks. */
export function activeResources(): Map<string, number> {
  const counts = new Map<string, number>();
  for (const type of process.getActiveResourcesInfo()) counts.set(type, (counts.get(type) ?? 0) + 1);
  return counts;
}

/**
 * {@link activeResources} once they stop changing: the same counts for 1 s running (at most 5 s of
 * waiting), so that what other clients are still winding down is not counted as new.
 */
export async function settledResources(): Promise<Map<string, number>> {
  const end = Date.now() + 5_000;
  let last = activeResources();
  let stableSince = Date.now();
  while (Date.now() < end && Date.now() - stableSince < 1_000) {
    await delay(100);
    const now = activeResources();
    if (!isDeepStrictEqual(now, last)) {
      last = now;
      stableSince = Date.now();
    }
  }
  return last;
}

/**
 * Runs one call of a lock protocol on `client` by EVAL, as padlock would send it (another client
 * of the same protocol, say), and reads its reply as padlock does. Sending the same call twice is a
 * resend: same request id. On a `Cluster` client the call goes to its keys' slot.
 */
export async function runCall<R>(client: Redis | Cluster, call: ScriptCall<R>): Promise<R> {
  return call.script.parse(await client.eval(call.script.source, call.keys.length, ...call.keys, ...call.args));
}
