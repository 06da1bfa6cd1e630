/**
 * The outage matrix: each call padlock offers, made while Redis is down, with each client library
 * (and ioredis major) a user may pass in. A fault is either a stopped server (connections refused) or a silent one
 * (SIGSTOP: it accepts connections and answers nothing, as a hung or partitioned server does).
 * Shared by test/outage.test.ts (which asserts the bounds) and bench/outage.ts (which prints them).
 */
import { Redis as Redis5 } from 'ioredis';
import { Redis as Redis6 } from 'ioredis6';
import { Redis as Valkey } from 'iovalkey';
import { createClient as createClient6 } from '@redis/client';
import { createClient as createClient4 } from 'redis4';
import './terminated.js';
import { startRedisServer, type RedisServer } from '../../src/devserver/redis-server.js';
import { Padlock, type Lease, type RedisClient } from '../../src/index.js';
import { monotonicNow } from '../../src/clock.js';
import { inflict, type Fault as NodeFault } from './faults.js';

/** The client libraries padlock accepts, at their defaults: ioredis 5 and 6, node-redis 6 and 4, iovalkey. */
export const CLIENTS = ['ioredis5', 'ioredis6', 'node-redis', 'node-redis 4', 'iovalkey'] as const;
export type ClientVersion = (typeof CLIENTS)[number];

/** How Redis fails: `stopped` is the harness's `kill` (connections refused), `silent` its `pause` (SIGSTOP). */
export const FAULTS = ['stopped', 'silent'] as const;
export type Fault = (typeof FAULTS)[number];
const HOW: Record<Fault, NodeFault> = { stopped: 'kill', silent: 'pause' };

/** The calls measured. */
export const CALLS = [
  'acquire()',
  'acquire({ waitMs: 1000 })',
  'queued acquire({ waitMs: 8000 })',
  'abort a queued wait',
  'close() with a hold and a waiter',
  'release()',
  'tryAcquire()',
] as const;
export type Call = (typeof CALLS)[number];

/** How one call ended. */
export interface Outcome {
  /** Milliseconds from the measured moment (the call, the abort, or close()) to its end. */
  readonly ms: number;
  /** The error's class name, or 'resolved'. */
  readonly error: string;
  /** The error's `cause`, if any: its class name and the start of its message. */
  readonly cause: string | undefined;
}

/** A client as a scenario uses it. */
export interface OutageClient {
  readonly redis: RedisClient;
  ping(): Promise<unknown>;
  /** Drops its socket at once. */
  disconnect(): void;
}

/** A client of the given library on `server`, at its defaults (as a user would make it), connected. */
export async function clientOf(version: ClientVersion, server: RedisServer): Promise<OutageClient> {
  const options = { host: server.host, port: server.port };
  switch (version) {
    case 'ioredis5':
    case 'ioredis6':
    case 'iovalkey': {
      // The three have the same surface here; the casts only name one of their types.
      const client = version === 'ioredis5' ? new Redis5(options) : version === 'ioredis6' ? (new Redis6(options) as unknown as Redis5) : (new Valkey(options) as unknown as Redis5);
      client.on('error', () => undefined); // the faults below provoke connection errors on purpose
      return { redis: client, ping: () => client.ping(), disconnect: () => client.disconnect() };
    }
    case 'node-redis': {
      const client = createClient6({ socket: options });
      client.on('error', () => undefined);
      await client.connect();
      return { redis: client, ping: () => client.ping(), disconnect: () => client.destroy() };
    }
    case 'node-redis 4': {
      const client = createClient4({ socket: options });
      client.on('error', () => undefined);
      await client.connect();
      return { redis: client, ping: () => client.ping(), disconnect: () => void client.disconnect().catch(() => undefined) };
    }
    default:
      throw new Error(`unknown client ${String(version satisfies never)}`);
  }
}

function outcomeOf(startedAt: number, result: PromiseSettledResult<unknown>): Outcome {
  const ms = monotonicNow() - startedAt;
  if (result.status === 'fulfilled') return { ms, error: 'resolved', cause: undefined };
  const error = result.reason as { name?: unknown; cause?: unknown } | undefined;
  const cause = error?.cause;
  return {
    ms,
    error: typeof error?.name === 'string' ? error.name : String(result.reason),
    cause: cause instanceof Error ? `${cause.name}: ${cause.message.slice(0, 60)}` : cause === undefined ? undefined : typeof cause,
  };
}

/** A call still pending after this long is reported as such rather than awaited for ever. */
export const GIVE_UP_MS = 100_000;

/** Settles like `work`, or rejects with 'Pending' after {@link GIVE_UP_MS}. */
async function capped(work: Promise<unknown>): Promise<PromiseSettledResult<unknown>> {
  let timer: NodeJS.Timeout | undefined;
  const cap = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(Object.assign(new Error('still pending'), { name: 'Pending' })), GIVE_UP_MS);
  });
  const [result] = await Promise.allSettled([Promise.race([work, cap])]);
  clearTimeout(timer);
  return result;
}

async function timed(work: () => Promise<unknown>): Promise<Outcome> {
  const startedAt = monotonicNow();
  return outcomeOf(startedAt, await capped(work()));
}

const delay = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));


/** Measures one call under one fault with one client. Starts and stops its own server. */
export async function measure(version: ClientVersion, fault: Fault, call: Call): Promise<Outcome> {
  const server = await startRedisServer();
  const client = await clientOf(version, server);
  const other = await clientOf(version, server);
  const padlock = new Padlock({ redis: client.redis });
  const holderSide = new Padlock({ redis: other.redis });
  const name = 'outage';
  try {
    await client.ping();
    await other.ping();
    switch (call) {
      case 'acquire()':
        await inflict(server, HOW[fault]);
        return await timed(() => padlock.mutex(name).acquire());
      case 'acquire({ waitMs: 1000 })':
        await inflict(server, HOW[fault]);
        return await timed(() => padlock.mutex(name).acquire({ waitMs: 1_000 }));
      case 'tryAcquire()':
        await inflict(server, HOW[fault]);
        return await timed(() => padlock.mutex(name).tryAcquire());
      case 'queued acquire({ waitMs: 8000 })': {
        await holderSide.mutex(name).acquire();
        const startedAt = monotonicNow();
        const waiting = padlock.mutex(name).acquire({ waitMs: 8_000 });
        await delay(200); // queued and asleep
        await inflict(server, HOW[fault]);
        return outcomeOf(startedAt, await capped(waiting));
      }
      case 'abort a queued wait': {
        await holderSide.mutex(name).acquire();
        const controller = new AbortController();
        const waiting = padlock.mutex(name).acquire({ signal: controller.signal });
        await delay(200);
        await inflict(server, HOW[fault]);
        await delay(300);
        return await timed(() => {
          controller.abort(new Error('caller gave up'));
          return waiting;
        });
      }
      case 'close() with a hold and a waiter': {
        await padlock.mutex(`${name}:held`).acquire();
        await holderSide.mutex(name).acquire();
        const waiting = padlock.mutex(name).acquire();
        waiting.catch(() => undefined);
        await delay(200);
        await inflict(server, HOW[fault]);
        await delay(300);
        return await timed(() => padlock.close());
      }
      case 'release()': {
        const lease: Lease = await padlock.mutex(name).acquire();
        await inflict(server, HOW[fault]);
        return await timed(() => lease.release());
      }
      default:
        throw new Error(`unknown call ${String(call satisfies never)}`);
    }
  } finally {
    if (fault === 'silent') server.resume();
    await Promise.allSettled([padlock.close(), holderSide.close()]);
    client.disconnect();
    other.disconnect();
    await server.stop();
  }
}
