/**
 * The factory suite: behaviour tests are written once and run once per lock kind and per topology.
 *
 * ```ts
 * for (const factory of TOPOLOGIES) {
 *   describe(factory.name, () => {
 *     const topology = useTopology(factory); // started before these tests, stopped after them
 *     for (const kind of KINDS) describe(`${kind}: …`, () => { … topology.padlock()[kind](name) … });
 *   });
 * }
 * ```
 *
 * A new lock kind is one line in {@link KINDS} (a method of `Padlock` that returns a lock); a new
 * topology is one line in {@link TOPOLOGIES}, naming a function that starts it and says where its
 * writes go ({@link StartedTopology}). Everything a test needs beyond that ({@link TopologyUnderTest})
 * is built here on those few members, the same way for every topology.
 */
import { after, before } from 'node:test';
import type { Cluster, Redis } from 'ioredis';
import type { RedisServer } from '../../src/devserver/redis-server.js';
import { Padlock } from '../../src/index.js';
import type { PadlockOptions } from '../../src/options.js';
import type { Script } from '../../src/redis/script-runner.js';
import * as scripts from '../../src/scripts/index.js';
import { connect, startServer } from './redis.js';
import { command, fieldsOf, info } from './admin.js';
import { startCluster } from './cluster.js';
import { startSentinelSet } from './sentinel.js';

/** The lock kinds every behaviour test runs against: methods of `Padlock` that return a lock. */
export const KINDS = ['mutex', 'fairMutex'] as const;
export type Kind = (typeof KINDS)[number];

/** A raw client of a topology, for reads and writes of padlock's keys: ioredis `Redis` or `Cluster`. */
export type Client = Redis | Cluster;

/** A running topology, as its factory returns it: the few facts the suite cannot work out itself. */
export interface StartedTopology {
  /** A new client of the topology, as a user would make one; disconnected after the file's tests. */
  client(): Client;
  /** The servers that take writes now: the server, the Sentinel primary, every Cluster master. */
  masters(): Promise<RedisServer[]>;
  /** The master that serves `key` (and runs every script of its lock). */
  masterOf(key: string): Promise<RedisServer>;
  /** Stops every process (also done after the file's tests, whatever happened). */
  stop(): Promise<void>;
}

/** One line of {@link TOPOLOGIES}. */
export interface TopologyFactory {
  /** Names the topology in test titles. */
  readonly name: string;
  /** Starts it on free loopback ports. */
  start(): Promise<StartedTopology>;
}

/** A standalone redis-server. */
async function singleServer(): Promise<StartedTopology> {
  const server = await startServer();
  return { client: () => connect(server), masters: () => Promise.resolve([server]), masterOf: () => Promise.resolve(server), stop: () => server.stop() };
}

/** 1 primary, 2 replicas, 3 sentinels; clients in Sentinel mode (they ask the sentinels for the primary). */
async function sentinelSet(): Promise<StartedTopology> {
  const set = await startSentinelSet();
  return { client: () => set.client(), masters: async () => [await set.primary()], masterOf: () => set.primary(), stop: () => set.stop() };
}

/** 3 masters with a replica each; ioredis `Cluster` clients (they route each call to its slot's master). */
async function cluster(): Promise<StartedTopology> {
  const nodes = await startCluster();
  return { client: () => nodes.client(), masters: () => nodes.masters(), masterOf: (key) => nodes.nodeForKey(key), stop: () => nodes.stop() };
}

/** Every topology the behaviour tests run on. */
export const TOPOLOGIES: readonly TopologyFactory[] = [
  { name: 'single server', start: singleServer },
  { name: 'Sentinel', start: sentinelSet },
  { name: 'Cluster', start: cluster },
];

/** A Padlock with a client of its own, and that client. */
export interface Side {
  readonly padlock: Padlock;
  readonly client: Client;
}

/** What behaviour tests use of a topology; see {@link useTopology}. */
export interface TopologyUnderTest {
  readonly name: string;
  /** A Padlock on a fresh client of the topology, closed after the enclosing suite. */
  padlock(options?: Omit<PadlockOptions, 'redis'>): Padlock;
  /** {@link TopologyUnderTest.padlock} with the client it runs on (to send a command behind its calls). */
  side(options?: Omit<PadlockOptions, 'redis'>): Side;
  /** A fresh raw client (Redis or Cluster), disconnected after the enclosing suite. */
  client(): Client;
  masters(): Promise<RedisServer[]>;
  masterOf(key: string): Promise<RedisServer>;
  /** Calls of `command` (lower case, as INFO names it) since start, summed over the current masters. */
  commandCalls(command: string): Promise<number>;
  /** `CLIENT PAUSE ms WRITE` on the master of `key`: its scripts wait, reads of it do not. */
  pauseWrites(key: string, ms: number): Promise<void>;
  /**
   * Resolves once every call `client` sent for `key`'s lock before now has run: a read of `key` on
   * the connection that carries them (a Cluster client has one per master; a PING could go to
   * another).
   */
  behind(client: Client, key: string): Promise<void>;
  /** Closes every Padlock made so far here, so that none sends anything from now on (renewals, heartbeats). */
  closePadlocks(): Promise<void>;
  /**
   * Loads every padlock script into every master's script cache (`SCRIPT LOAD`), as a server that
   * has served padlock for a while has them: no call takes the NOSCRIPT detour (an EVAL re-sent
   * after the reply, behind calls sent later on the same connection).
   */
  warmScripts(): Promise<void>;
  /** Empties the script cache of `key`'s master (`SCRIPT FLUSH`), then loads only `keep` into it. */
  coldScripts(key: string, keep: readonly Script<unknown>[]): Promise<void>;
}

/** Every script padlock sends (src/scripts/index.ts exports nothing else). */
const SCRIPTS: readonly Script<unknown>[] = Object.values(scripts);

/**
 * Declares, in the enclosing `describe`, that its tests run on the topology `factory` makes: it
 * starts in `before` and, in `after`, its Padlocks are closed, its clients disconnected and its
 * processes stopped (so the next topology does not share the machine with it).
 */
export function useTopology(factory: TopologyFactory): TopologyUnderTest {
  let started: StartedTopology | undefined;
  const padlocks: Padlock[] = [];
  const clients: Client[] = [];
  before(async () => {
    started = await factory.start();
  });
  after(async () => {
    await Promise.allSettled(padlocks.map((p) => p.close()));
    for (const client of clients) client.disconnect();
    await started?.stop();
  });
  const running = (): StartedTopology => {
    if (started === undefined) throw new Error(`the ${factory.name} topology is used before its suite's before() hook started it`);
    return started;
  };
  const client = (): Client => {
    const made = running().client();
    clients.push(made);
    return made;
  };
  const side = (options: Omit<PadlockOptions, 'redis'> = {}): Side => {
    const redis = client();
    const padlock = new Padlock({ redis, ...options });
    padlocks.push(padlock);
    return { padlock, client: redis };
  };
  return {
    name: factory.name,
    padlock: (options) => side(options).padlock,
    side,
    client,
    masters: () => running().masters(),
    masterOf: (key) => running().masterOf(key),
    async commandCalls(name) {
      const masters = await running().masters();
      const counts = await Promise.all(masters.map(async (m) => Number(fieldsOf((await info(m, 'commandstats')).get(`cmdstat_${name}`)).get('calls') ?? 0)));
      return counts.reduce((sum, n) => sum + n, 0);
    },
    async pauseWrites(key, ms) {
      await command(await running().masterOf(key), 'CLIENT', 'PAUSE', ms, 'WRITE');
    },
    async behind(redis, key) {
      await redis.exists(key);
    },
    async closePadlocks() {
      await Promise.all(padlocks.map((p) => p.close()));
    },
    async warmScripts() {
      for (const master of await running().masters()) for (const script of SCRIPTS) await command(master, 'SCRIPT', 'LOAD', script.source);
    },
    async coldScripts(key, keep) {
      const master = await running().masterOf(key);
      await command(master, 'SCRIPT', 'FLUSH');
      for (const script of keep) await command(master, 'SCRIPT', 'LOAD', script.source);
    },
  };
}
