/**
 * The factory suite: behaviour tests are written once and run once per lock kind and per topology
 * (through one client library; each library's own conformance is test/clients.test.ts).
 *
 * ```ts
 * for (const factory of TOPOLOGIES) {
 *   describe(factory.name, () => {
 *     const topology = useTopology(factory); // started before these tests, stopped after them
 *     eachKind(topology, (kind) => describe(`${kind}: …`, () => { … (await topology.padlock())[kind](name) … }));
 *   });
 * }
 * ```
 *
 * A new lock kind is one line in {@link KINDS} (a method of `Padlock` that returns a lock); a new
 * topology is one line in `BASES`, naming a function that starts it and says where its writes go
 * ({@link StartedTopology}), and the kinds it refuses (for each, {@link eachKind} declares one test
 * of the refusal instead of that kind's tests); a new client library is one line in `CLIENTS`
 * (./clients.ts, which makes its clients) and is proven by the conformance suite. {@link TOPOLOGIES}
 * is every topology with the client its line names. Everything a test needs beyond that ({@link TopologyUnderTest}) is built
 * here on those few members, the same way for every topology and client. Raw reads of padlock's
 * keys always go through ioredis: what is under test is the Padlock's client.
 *
 * A topology holds one copy of padlock's data (one server, a Sentinel primary, a Cluster: one
 * client reaches it all) or several (Redlock: each master its own, a lock being what a majority
 * holds); reads of padlock's keys go through {@link TopologyUnderTest.read}, which says what a
 * majority of copies holds, or {@link TopologyUnderTest.readEvery}, which needs every copy to agree.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { isDeepStrictEqual, inspect } from 'node:util';
import type { Cluster, Redis } from 'ioredis';
import type { RedisServer } from '../../src/devserver/redis-server.js';
import { Padlock, PadlockOptionError, type RedisClient } from '../../src/index.js';
import type { PadlockOptions } from '../../src/options.js';
import type { Script } from '../../src/stores/redis/adapters/script-runner.js';
import * as scripts from '../../src/stores/redis/scripts/index.js';
import { connect, startServer, startServers } from './redis.js';
import { command, fieldsOf, info } from './admin.js';
import { startCluster } from './cluster.js';
import { startSentinelSet } from './sentinel.js';
import { CLIENTS, clientOf, opsOf, reaches, type ClientName, type Target } from './clients.js';

/** The lock kinds every behaviour test runs against: methods of `Padlock` that return a lock. */
export const KINDS = ['mutex', 'fairMutex'] as const;
export type Kind = (typeof KINDS)[number];

/** A raw client of a topology, for reads and writes of padlock's keys: ioredis `Redis` or `Cluster`. */
export type Client = Redis | Cluster;

/** What a Padlock gets as its `redis` option: a client of the library under test, or (Redlock) one per master. */
export type PadlockRedis = RedisClient | readonly RedisClient[];

/** A running topology, as its factory returns it: the few facts the suite cannot work out itself. */
export interface StartedTopology {
  /** Where a Padlock's client connects: one target, or (Redlock) one per master. */
  readonly targets: readonly Target[];
  /**
   * New raw clients, one per copy of padlock's data: one client (it reaches every key) for one
   * server, Sentinel or Cluster; one per master on Redlock. Disconnected after the file's tests.
   */
  readers(): Client[];
  /** The servers that take writes now: the server, the Sentinel primary, every Cluster or Redlock master. */
  masters(): Promise<RedisServer[]>;
  /** The masters that serve `key` (and run every script of its lock): its one master, or every Redlock master. */
  mastersOf(key: string): Promise<RedisServer[]>;
  /** Stops every process (also done after the file's tests, whatever happened). */
  stop(): Promise<void>;
}

/** One line of {@link TOPOLOGIES}: a topology, and the client library its Padlocks use. */
export interface TopologyFactory {
  /** Names the topology and the client in test titles. */
  readonly name: string;
  /** The client library every Padlock of these tests is given. */
  readonly client: ClientName;
  /** Starts it on free loopback ports. */
  start(): Promise<StartedTopology>;
  /** Kinds its Padlock refuses at creation (`PadlockOptionError` naming the kind): each gets a test of that instead of its tests. */
  readonly refuses?: readonly Kind[];
  /** Independent masters, a lock being what a majority holds (Redlock). */
  readonly redlock?: boolean;
}

/** A topology before its client is chosen. */
interface Topology {
  readonly name: string;
  /** What its clients connect to (Redlock: several servers). */
  readonly kind: Target['kind'];
  start(): Promise<StartedTopology>;
  readonly refuses?: readonly Kind[];
  readonly redlock?: boolean;
  /** The clients it runs with, when not all that reach it (a Redlock set is costly: two libraries show the adapters hold there). */
  readonly clients?: readonly ClientName[];
}

/** A standalone redis-server. */
async function singleServer(): Promise<StartedTopology> {
  const server = await startServer();
  return { targets: [{ kind: 'server', server }], readers: () => [connect(server)], masters: () => Promise.resolve([server]), mastersOf: () => Promise.resolve([server]), stop: () => server.stop() };
}

/** 1 primary, 2 replicas, 3 sentinels; clients in Sentinel mode (they ask the sentinels for the primary). */
async function sentinelSet(): Promise<StartedTopology> {
  const set = await startSentinelSet();
  return {
    targets: [{ kind: 'sentinel', sentinels: set.sentinels, name: set.name }],
    readers: () => [set.client()],
    masters: async () => [await set.primary()],
    mastersOf: async () => [await set.primary()],
    stop: () => set.stop(),
  };
}

/** 3 masters with a replica each; Cluster clients (they route each call to its slot's master). */
async function cluster(): Promise<StartedTopology> {
  const nodes = await startCluster();
  return { targets: [{ kind: 'cluster', nodes: nodes.nodes }], readers: () => [nodes.client()], masters: () => nodes.masters(), mastersOf: async (key) => [await nodes.nodeForKey(key)], stop: () => nodes.stop() };
}

/** 5 independent masters; a Padlock gets one client per master (Redlock: every call goes to all, a majority decides). */
async function redlock(): Promise<StartedTopology> {
  const servers = await startServers(5);
  return {
    targets: servers.map((server) => ({ kind: 'server', server })),
    readers: () => servers.map((server) => connect(server)),
    masters: () => Promise.resolve(servers),
    mastersOf: () => Promise.resolve(servers),
    stop: async () => void (await Promise.all(servers.map((server) => server.stop()))),
  };
}

/**
 * Behaviour runs once per topology, through ioredis, not once per client library: what differs per
 * library (its adapter's calls, errors, pub/sub, WAIT, cluster routing) is the client conformance
 * suite's (test/clients.test.ts), which runs every library on each topology it reaches.
 */
const ONE_CLIENT: readonly ClientName[] = ['ioredis'];

const BASES: readonly Topology[] = [
  { name: 'single server', kind: 'server', start: singleServer, clients: ONE_CLIENT },
  { name: 'Sentinel', kind: 'sentinel', start: sentinelSet, clients: ONE_CLIENT },
  { name: 'Cluster', kind: 'cluster', start: cluster, clients: ONE_CLIENT },
  // A fair handoff happens inside one server's release script: N masters cannot agree on one waiter.
  { name: 'Redlock (5 masters)', kind: 'server', start: redlock, refuses: ['fairMutex'], redlock: true, clients: ONE_CLIENT },
];

/**
 * Every topology the behaviour tests run on, with the client library its line names: the whole
 * suite once per topology.
 */
export const TOPOLOGIES: readonly TopologyFactory[] = BASES.flatMap(({ clients, kind, ...base }) =>
  CLIENTS.filter((client) => reaches(client, kind) && (clients === undefined || clients.includes(client))).map((client) => ({ ...base, name: `${base.name} · ${client}`, client })),
).filter(chosen(process.env['PADLOCK_SUITES']));

/**
 * While working on one client or topology: `PADLOCK_SUITES='Cluster'` runs only the
 * (topology · client) pairs whose name matches that regular expression. Unset: all of them.
 */
function chosen(pattern: string | undefined): (factory: TopologyFactory) => boolean {
  if (pattern === undefined || pattern === '') return () => true;
  const regex = new RegExp(pattern);
  return (factory) => regex.test(factory.name);
}

/** A Padlock with client(s) of its own, and those. */
export interface Side {
  readonly padlock: Padlock;
  readonly client: PadlockRedis;
}

/** What behaviour tests use of a topology; see {@link useTopology}. */
export interface TopologyUnderTest {
  readonly name: string;
  /** Independent masters, a lock being what a majority holds (Redlock): for a test's `todo` or `skip` naming why. */
  readonly redlock: boolean;
  /** The kinds its Padlock makes (those of {@link KINDS} it does not refuse). */
  readonly kinds: readonly Kind[];
  /** The client library its Padlocks use. */
  readonly client: ClientName;
  /** A Padlock on fresh, connected client(s) of the topology, closed after the enclosing suite. */
  padlock(options?: Omit<PadlockOptions, 'redis'>): Promise<Padlock>;
  /** {@link TopologyUnderTest.padlock} with the client(s) it runs on (to send a command behind its calls). */
  side(options?: Omit<PadlockOptions, 'redis'>): Promise<Side>;
  /** Fresh, connected client(s) for a Padlock of the test's own, disconnected after the enclosing suite. */
  connect(): Promise<PadlockRedis>;
  /** Raw clients, one per copy of padlock's data (made once, disconnected after the enclosing suite). */
  readers(): Client[];
  /**
   * Runs `read` on every copy of padlock's data and returns the value a majority of them gives
   * (compared deeply): what the lock is, as padlock's own reads take it. With one copy, its value.
   * Fold comparisons of values that differ between masters (a PTTL) into `read`.
   */
  read<T>(read: (client: Client) => Promise<T>): Promise<T>;
  /** {@link TopologyUnderTest.read}, but every copy must give the same value (the assertion fails naming each one's). */
  readEvery<T>(read: (client: Client) => Promise<T>): Promise<T>;
  masters(): Promise<RedisServer[]>;
  mastersOf(key: string): Promise<RedisServer[]>;
  /** Calls of `command` (lower case, as INFO names it) since start, summed over the current masters. */
  commandCalls(command: string): Promise<number>;
  /** `CLIENT PAUSE ms WRITE` on the masters of `key`: its scripts wait, reads of it do not. */
  pauseWrites(key: string, ms: number): Promise<void>;
  /**
   * Resolves once every call `client` sent for `key`'s lock before now has run: a read of `key` on
   * each connection that carries them (a Cluster client has one per master; a PING could go to
   * another; a Redlock Padlock has one client per master).
   */
  behind(client: PadlockRedis, key: string): Promise<void>;
  /** Closes every Padlock made so far here, so that none sends anything from now on (renewals, heartbeats). */
  closePadlocks(): Promise<void>;
  /**
   * Loads every padlock script into every master's script cache (`SCRIPT LOAD`), as a server that
   * has served padlock for a while has them: no call takes the NOSCRIPT detour (an EVAL re-sent
   * after the reply, behind calls sent later on the same connection).
   */
  warmScripts(): Promise<void>;
  /** Empties the script cache of `key`'s masters (`SCRIPT FLUSH`), then loads only `keep` into it. */
  coldScripts(key: string, keep: readonly Script<unknown>[]): Promise<void>;
}

/** Every script padlock sends (src/stores/redis/scripts/index.ts exports nothing else). */
const SCRIPTS: readonly Script<unknown>[] = Object.values(scripts);

/** Each client of `redis` (one, or one per Redlock master). */
export function clientsOf(redis: PadlockRedis): readonly RedisClient[] {
  return isRedlock(redis) ? redis : [redis];
}

function isRedlock(redis: PadlockRedis): redis is readonly RedisClient[] {
  return Array.isArray(redis);
}

/**
 * Declares, in the enclosing `describe`, that its tests run on the topology `factory` makes: it
 * starts in `before` and, in `after`, its Padlocks are closed, its clients disconnected and its
 * processes stopped (so the next topology does not share the machine with it).
 */
export function useTopology(factory: TopologyFactory): TopologyUnderTest {
  let started: StartedTopology | undefined;
  const padlocks: Padlock[] = [];
  const clients: RedisClient[] = [];
  const raw: Client[] = [];
  let readers: Client[] | undefined;
  before(async () => {
    started = await factory.start();
  });
  after(async () => {
    await Promise.allSettled(padlocks.map((p) => p.close()));
    for (const client of clients) opsOf(client).disconnect();
    for (const client of raw) client.disconnect();
    await started?.stop();
  });
  const running = (): StartedTopology => {
    if (started === undefined) throw new Error(`the ${factory.name} topology is used before its suite's before() hook started it`);
    return started;
  };
  const connectOwn = async (): Promise<PadlockRedis> => {
    const { targets } = running();
    const made = await Promise.all(targets.map((target) => clientOf(factory.client, target)));
    clients.push(...made);
    const [one] = made;
    return factory.redlock === true || one === undefined ? made : one;
  };
  const readersOf = (): Client[] => {
    if (readers === undefined) {
      readers = running().readers();
      raw.push(...readers);
    }
    return readers;
  };
  const side = async (options: Omit<PadlockOptions, 'redis'> = {}): Promise<Side> => {
    const redis = await connectOwn();
    const padlock = new Padlock({ redis, ...options });
    padlocks.push(padlock);
    return { padlock, client: redis };
  };
  const valuesOf = <T>(read: (client: Client) => Promise<T>): Promise<T[]> => Promise.all(readersOf().map((client) => read(client)));
  const refused = new Set<Kind>(factory.refuses ?? []);
  return {
    name: factory.name,
    client: factory.client,
    redlock: factory.redlock === true,
    kinds: KINDS.filter((kind) => !refused.has(kind)),
    padlock: async (options) => (await side(options)).padlock,
    side,
    connect: connectOwn,
    readers: readersOf,
    async read(read) {
      const values = await valuesOf(read);
      const agreed = values.find((value) => values.filter((other) => isDeepStrictEqual(other, value)).length * 2 > values.length);
      assert.ok(agreed !== undefined || values.length === 0, `no majority of the ${values.length} copies agrees: ${inspect(values)}`);
      return agreed as (typeof values)[number];
    },
    async readEvery(read) {
      const values = await valuesOf(read);
      assert.ok(values.every((value) => isDeepStrictEqual(value, values[0])), `the ${values.length} copies differ: ${inspect(values)}`);
      return values[0] as (typeof values)[number];
    },
    masters: () => running().masters(),
    mastersOf: (key) => running().mastersOf(key),
    async commandCalls(name) {
      const masters = await running().masters();
      const counts = await Promise.all(masters.map(async (m) => Number(fieldsOf((await info(m, 'commandstats')).get(`cmdstat_${name}`)).get('calls') ?? 0)));
      return counts.reduce((sum, n) => sum + n, 0);
    },
    async pauseWrites(key, ms) {
      await Promise.all((await running().mastersOf(key)).map((master) => command(master, 'CLIENT', 'PAUSE', ms, 'WRITE')));
    },
    async behind(redis, key) {
      await Promise.all(clientsOf(redis).map((client) => opsOf(client).exists(key)));
    },
    async closePadlocks() {
      await Promise.all(padlocks.map((p) => p.close()));
    },
    async warmScripts() {
      for (const master of await running().masters()) for (const script of SCRIPTS) await command(master, 'SCRIPT', 'LOAD', script.source);
    },
    async coldScripts(key, keep) {
      for (const master of await running().mastersOf(key)) {
        await command(master, 'SCRIPT', 'FLUSH');
        for (const script of keep) await command(master, 'SCRIPT', 'LOAD', script.source);
      }
    },
  };
}

/**
 * Declares `body`'s tests once per kind `topology` serves; for a kind it refuses, one test that its
 * Padlock refuses to make such a lock (`PadlockOptionError` naming the kind), so the skip shows.
 */
export function eachKind(topology: TopologyUnderTest, body: (kind: Kind) => void): void {
  for (const kind of KINDS) {
    if (topology.kinds.includes(kind)) {
      body(kind);
      continue;
    }
    describe(`${kind}: refused on ${topology.name}`, () => {
      it(`new Padlock(…).${kind}(name) throws PadlockOptionError naming ${kind} (this kind's tests do not run here)`, async () => {
        const padlock = await topology.padlock();
        assert.throws(() => padlock[kind]('refused'), (error: unknown) => error instanceof PadlockOptionError && error.option === kind);
      });
    });
  }
}
