/**
 * Which Redis clients padlock accepts, and how it tells them apart when a Padlock is made: by the
 * members each library's objects have, never by importing the library (a user has one of them
 * installed, not all). The public types here are structural for the same reason: they name no
 * package, so a project with only node-redis (or only ioredis) compiles against padlock's
 * declarations without the other installed.
 */
import { PadlockOptionError } from '../../../errors.js';
import type { CommandConnection } from './connection.js';
import { fromIoredis, IOREDIS_METHODS } from './ioredis.js';
import { fromNodeRedis, nodeRedisShape } from './node-redis.js';

/**
 * An ioredis (5, 6) or iovalkey `Redis` (one server, or Sentinel mode) or `Cluster`, as padlock
 * sees it: any instance of those classes fits.
 */
export interface IoredisLikeClient {
  /** The connection state (`'ready'`, `'reconnecting'`, …). */
  readonly status: string;
  /** Runs a loaded script (`EVALSHA`): the promise form is what padlock calls. */
  evalsha(...args: never[]): unknown;
  /** Batches commands in one round trip: padlock pipelines a script with its `WAIT`, and renewals. */
  pipeline(...args: never[]): unknown;
  /** A new connection with the same options: padlock's pub/sub connection, closed by `padlock.close()`. */
  duplicate(...args: never[]): unknown;
}

/**
 * A node-redis (`redis` 4, 5, 6 or `@redis/client`) client from `createClient`, cluster from
 * `createCluster`, or sentinel from `createSentinel` (5 and later), already connected
 * (`await client.connect()`), as padlock sees it: any of those fits.
 */
export interface NodeRedisLikeClient {
  /** Whether `connect()` was called (and the client not closed since). */
  readonly isOpen: boolean;
  /** Sends one command as an array of strings: how padlock calls a node-redis client, cluster or sentinel. */
  sendCommand(...args: never[]): Promise<unknown>;
}

/**
 * A Redis client padlock can use: an ioredis or iovalkey `Redis` or `Cluster`, or a node-redis
 * client, cluster or sentinel. padlock never closes it.
 */
export type RedisClient = IoredisLikeClient | NodeRedisLikeClient;

const EXPECTED = 'an ioredis or iovalkey Redis or Cluster, or a connected node-redis client, cluster or sentinel (createClient, createCluster, createSentinel)';

/**
 * The connection padlock uses for `value`, a client the user passed as option `option`; throws
 * `PadlockOptionError` naming the option and what to change when `value` is no client padlock
 * knows, or one it cannot use as it is. Sends nothing.
 */
export function connectionFor(option: string, value: unknown): CommandConnection {
  if (typeof value !== 'object' || value === null) throw new PadlockOptionError(option, EXPECTED, value);
  const client = value as Record<string, unknown>;
  const shape = nodeRedisShape(value);
  if (shape !== undefined) {
    const options = client['options'] as { legacyMode?: unknown } | undefined;
    if (options?.legacyMode === true) throw new PadlockOptionError(option, `${EXPECTED}: a node-redis client without legacyMode (padlock calls its promise API)`, value);
    if (client['isOpen'] !== true) throw new PadlockOptionError(option, `${EXPECTED}: this node-redis ${shape} is not connected (await its connect() before new Padlock), or was closed`, value);
    return fromNodeRedis(value, shape);
  }
  // ioredis and iovalkey say their state in `status` and pipeline by `pipeline()`; node-redis does neither.
  const ioredisLike = typeof client['status'] === 'string' || typeof client['pipeline'] === 'function';
  if (!ioredisLike && typeof client['sendCommand'] === 'function') {
    const what = typeof client['execute'] === 'function' ? 'a node-redis client pool is not supported (pass a client from createClient)' : 'this sendCommand() object is no node-redis client, cluster or sentinel padlock knows';
    throw new PadlockOptionError(option, `${EXPECTED}: ${what}`, value);
  }
  // Anything else with a member of ioredis's is taken for an ioredis look-alike, and told what it lacks.
  if (ioredisLike || IOREDIS_METHODS.some((method) => typeof client[method] === 'function')) {
    const missing: string[] = IOREDIS_METHODS.filter((method) => typeof client[method] !== 'function').map((method) => `${method}()`);
    if (typeof client['status'] !== 'string') missing.push('a status string');
    if (missing.length > 0) throw new PadlockOptionError(option, `${EXPECTED} (this ioredis-like object lacks ${missing.join(', ')})`, value);
    // Closed for good, and every call would fail as if Redis were down: status 'end' (quit() or
    // disconnect() was called, or its retries gave up), or, until the socket has closed, ioredis's
    // own flag that quit() or disconnect() was called.
    if (client['status'] === 'end' || client['manuallyClosing'] === true) {
      throw new PadlockOptionError(option, `${EXPECTED}: this client was closed (quit() or disconnect() was called); pass an open one`, value);
    }
    return fromIoredis(value);
  }
  throw new PadlockOptionError(option, EXPECTED, value);
}
