/**
 * Operator connections for the topology harness: one per process, every command bounded, so that a
 * probe of a killed or paused (SIGSTOP) node fails fast instead of hanging the test.
 */
import type { Redis } from 'ioredis';
import type { RedisServer } from '../../src/devserver/redis-server.js';
import { connect } from './redis.js';

/** A command to a paused node is given up after this long. */
export const ADMIN_COMMAND_TIMEOUT_MS = 2_000;

const admins = new WeakMap<RedisServer, Redis>();

/**
 * The operator connection to `server` (Redis, Sentinel or Cluster node), made on first use and
 * disconnected after the file's tests. Each command fails within {@link ADMIN_COMMAND_TIMEOUT_MS}.
 */
export function admin(server: RedisServer): Redis {
  let client = admins.get(server);
  if (client === undefined) {
    client = connect(server, {
      commandTimeout: ADMIN_COMMAND_TIMEOUT_MS,
      // A killed node: fail queued commands at the next reconnect attempt, not after 20 of them.
      maxRetriesPerRequest: 0,
      retryStrategy: () => 100,
      // The ready check's INFO would wait forever on a paused node; commandTimeout bounds ours.
      enableReadyCheck: false,
    });
    admins.set(server, client);
  }
  return client;
}

/** Sends a raw command through {@link admin}; the reply as ioredis decodes it. */
export function command(server: RedisServer, name: string, ...args: (string | number | Buffer)[]): Promise<unknown> {
  return admin(server).call(name, ...args);
}

/** One `INFO` section as a map of its `field:value` lines. */
export async function info(server: RedisServer, section: string): Promise<Map<string, string>> {
  const text = await admin(server).info(section);
  const fields = new Map<string, string>();
  for (const line of text.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon > 0 && !line.startsWith('#')) fields.set(line.slice(0, colon), line.slice(colon + 1));
  }
  return fields;
}

/** Parses `a=1,b=x` (the values of INFO's `slave0`, `master0` lines) into a map. */
export function fieldsOf(value: string | undefined): Map<string, string> {
  const fields = new Map<string, string>();
  for (const pair of (value ?? '').split(',')) {
    const equals = pair.indexOf('=');
    if (equals > 0) fields.set(pair.slice(0, equals), pair.slice(equals + 1));
  }
  return fields;
}

/** Which of `servers` listens on `port` (topologies report nodes by address). */
export function byPort(servers: readonly RedisServer[], port: number, what: string): RedisServer {
  const server = servers.find((s) => s.port === port);
  if (server === undefined) throw new Error(`${what} is 127.0.0.1:${port}, which is not one of this topology's processes`);
  return server;
}
