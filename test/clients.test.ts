/**
 * Client conformance: each client library on its own, while the behaviour suites run once per
 * topology through ioredis (./harness/suite.ts). On the single server, every library runs every kind
 * end to end (take, wait woken by a release's message, re-enter, renew a short lease, hand over,
 * release, nothing left that does not expire), and its errors map to padlock's exactly as ioredis's do (a reply error to
 * `RedisCommandError`, NOSCRIPT to the one EVAL re-send, a closed or failed connection to
 * `RedisUnavailableError`, each with the client's error as `cause`); replica acknowledgement (WAIT
 * pipelined after the script on the same connection) works through each client that reaches a
 * Sentinel set; a Cluster client's waiters listen where its releases publish (sharded where the
 * client routes sharded subscriptions by slot, classic where it does not); and the pub/sub
 * connection padlock opens is its own and is closed with the Padlock.
 */
import { describe, it, before } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import assert from 'node:assert/strict';
import { Padlock, RedisCommandError, RedisUnavailableError, ReplicaAckError } from '../src/index.js';
import type { RedisServer } from '../src/devserver/redis-server.js';
import { lockKeys } from '../src/keys.js';
import { command } from './harness/admin.js';
import { CLIENTS, clientOf, opsOf, reaches } from './harness/clients.js';
import { probeWakes } from './harness/probes.js';
import { connect, startServer } from './harness/redis.js';
import { startCluster, startSentinelSet, type RedisCluster, type SentinelSet } from './harness/topologies.js';

let server: RedisServer;
before(async () => {
  server = await startServer();
});

for (const library of CLIENTS) {
  describe(`${library}: errors map as ioredis's do`, () => {
    it('conformance: every kind takes, waits (woken by the release\'s message), re-enters, renews a short lease, hands over and releases', async () => {
      const target = { kind: 'server', server } as const;
      const padlock = new Padlock({ redis: await clientOf(library, target), leaseMs: 400 });
      const other = new Padlock({ redis: await clientOf(library, target) });
      const wakes = probeWakes(other);
      const name = `conformance:${library}`;
      // mutex: a waiter woken by the release's message, a greater fence, a re-entry, a renewal.
      const first = await padlock.mutex(name).acquire();
      const waiting = other.mutex(name).acquire({ waitMs: 10_000 });
      await delay(50);
      await first.release();
      const second = await waiting;
      assert.ok(second.fence > first.fence, 'a later grant has a greater fence');
      assert.equal(wakes.fallbacks, 0, 'woken by the release, not by a timer');
      await second.release();
      await padlock.withLock(name, async (outer) => {
        const inner = await padlock.mutex(name).acquire();
        assert.equal(inner.holdCount, 2);
        await inner.release();
        await delay(1_000); // 2.5 leases of 400 ms: held only if renewed
        assert.ok(outer.isHeld && !outer.signal.aborted, 'renewed by the watchdog');
      });
      // fairMutex: handed to the waiter by the release.
      const fairHeld = await padlock.fairMutex(`${name}:fair`).acquire();
      const fairWait = other.fairMutex(`${name}:fair`).acquire({ waitMs: 10_000 });
      await delay(50);
      await fairHeld.release();
      await (await fairWait).release();
      // readWrite: readers share, a writer waits for them.
      const rw = padlock.readWrite(`${name}:rw`);
      const [r1, r2] = await Promise.all([rw.read.acquire(), other.readWrite(`${name}:rw`).read.acquire()]);
      assert.equal(await rw.write.tryAcquire(), null);
      await Promise.all([r1.release(), r2.release()]);
      await (await rw.write.acquire({ waitMs: 5_000 })).release();
      // semaphore and multi.
      const permits = await padlock.semaphore(`${name}:sem`, 3).acquire({ permits: 2 });
      assert.equal(await other.semaphore(`${name}:sem`, 3).available(), 1);
      await permits.release();
      await (await other.multi([`${name}:a`, `${name}:b`]).acquire()).release();
      await Promise.all([padlock.close(), other.close()]);
      const raw = connect(server);
      const left = await raw.keys(`*${name}*`);
      const lasting = (await Promise.all(left.map(async (key) => ((await raw.pttl(key)) === -1 ? [key] : [])))).flat();
      assert.deepEqual(lasting, [], 'every key left expires');
    });

    it('a WRONGTYPE reply is a RedisCommandError with the client\'s error as cause', async () => {
      await connect(server).set(`padlock:{wrong:${library}}:lock`, 'a string');
      const padlock = new Padlock({ redis: await clientOf(library, { kind: 'server', server }) });
      await assert.rejects(padlock.mutex(`wrong:${library}`).acquire(), (e: unknown) => e instanceof RedisCommandError && /WRONGTYPE/.test(e.message) && e.cause instanceof Error);
      await padlock.close();
    });

    it('a server that forgot the scripts (NOSCRIPT) is sent each one once by EVAL, and the lock works', async () => {
      const padlock = new Padlock({ redis: await clientOf(library, { kind: 'server', server }) });
      const name = `noscript:${library}`;
      const lease = await padlock.mutex(name).acquire();
      await lease.release();
      await command(server, 'SCRIPT', 'FLUSH');
      const evalsBefore = await evalCalls(server);
      const again = await padlock.mutex(name).acquire();
      assert.ok(again.fence > lease.fence);
      await again.release();
      assert.equal(await evalCalls(server), evalsBefore + 2, 'one EVAL for the acquire, one for the release, after their NOSCRIPT');
      await padlock.close();
    });

    it('a client its owner closed fails calls at once with RedisUnavailableError, the client\'s error as cause', async () => {
      const redis = await clientOf(library, { kind: 'server', server });
      const padlock = new Padlock({ redis });
      await opsOf(redis).quit();
      const started = Date.now();
      await assert.rejects(padlock.mutex(`closed:${library}`).tryAcquire(), (e: unknown) => e instanceof RedisUnavailableError && e.cause instanceof Error);
      assert.ok(Date.now() - started < 1_000, 'at once, not at the reply time-out');
      await padlock.close();
    });

    it('the pub/sub connection is padlock\'s own, and close() drops it', async () => {
      const redis = await clientOf(library, { kind: 'server', server });
      const padlock = new Padlock({ redis });
      const holder = new Padlock({ redis: connect(server) });
      const name = `own-subscriber:${library}`;
      const held = await holder.mutex(name).acquire();
      const pubsubClients = async (): Promise<number> => String(await command(server, 'CLIENT', 'LIST', 'TYPE', 'pubsub')).split('\n').filter((line) => line.trim() !== '').length;
      // The holder listens for force-releases on a pub/sub connection of its own.
      assert.ok(await waitFor(async () => (await pubsubClients()) === 1), "the holder's pub/sub connection");
      const waiting = padlock.mutex(name).acquire({ waitMs: 5_000 });
      assert.ok(await waitFor(async () => (await pubsubClients()) === 2), 'one pub/sub connection more, opened by padlock');
      await held.release();
      await (await waiting).release();
      // The user's client is not in subscriber mode: it still runs commands.
      assert.equal(await opsOf(redis).exists('nothing-here'), 0);
      await padlock.close();
      assert.ok(await waitFor(async () => (await pubsubClients()) === 1), 'close() dropped it');
      await holder.close();
      assert.ok(await waitFor(async () => (await pubsubClients()) === 0), "and the holder's close() its own");
    });
  });
}

describe('replica acknowledgement through each client that reaches Sentinel', () => {
  let set: SentinelSet;
  before(async () => {
    set = await startSentinelSet();
  });
  for (const library of CLIENTS.filter((c) => reaches(c, 'sentinel'))) {
    it(`${library}: a grant waits for its replicas (WAIT on the script's connection), and fails with ReplicaAckError when they cannot answer`, async () => {
      const redis = await clientOf(library, { kind: 'sentinel', sentinels: set.sentinels, name: set.name });
      const padlock = new Padlock({ redis, replicas: { min: 2, timeoutMs: 200 } });
      const lease = await padlock.mutex(`ack:${library}`).acquire({ waitMs: 2_000 });
      assert.equal(lease.isHeld, true);
      await lease.release();
      const strict = new Padlock({ redis, replicas: { min: 3, timeoutMs: 100 } }); // only 2 replicas exist
      await assert.rejects(strict.mutex(`ack3:${library}`).acquire({ waitMs: 2_000 }), (e: unknown) => e instanceof ReplicaAckError && e.acknowledged === 2 && e.required === 3);
      assert.equal(await strict.mutex(`ack3:${library}`).isLocked(), false, 'the unacknowledged grant was undone');
      await Promise.all([padlock.close(), strict.close()]);
    });
  }
});

describe('a Cluster client\'s waiters hear its releases', () => {
  let cluster: RedisCluster;
  before(async () => {
    cluster = await startCluster();
  });
  for (const library of CLIENTS) {
    it(`${library}: a release wakes a waiter on every master's slots by its message`, async () => {
      const target = { kind: 'cluster', nodes: cluster.nodes } as const;
      const a = new Padlock({ redis: await clientOf(library, target), leaseMs: 60_000 });
      const b = new Padlock({ redis: await clientOf(library, target), leaseMs: 60_000 });
      // Names on each of the three masters: a subscription routed to one node only would miss the others'.
      const names = await namesOnEveryMaster(cluster, `wake:${library}`);
      for (const name of names) {
        const holder = await a.mutex(name).acquire();
        let asleep!: () => void;
        const sleeping = new Promise<void>((resolve) => (asleep = resolve));
        const probe = probeWakes(b, { messagesOnly: true, onSleep: () => asleep() });
        const waiting = b.mutex(name).acquire({ waitMs: 10_000 });
        await sleeping;
        await holder.release();
        const lease = await waiting;
        assert.ok(probe.messages >= 1 && probe.fallbacks === 0, `${name}: woken by ${probe.messages} messages and ${probe.fallbacks} timers`);
        probe.messagesOnly(false);
        await lease.release();
      }
      await Promise.all([a.close(), b.close()]);
    });
  }
});

/** One lock name per master of `cluster`. */
async function namesOnEveryMaster(cluster: RedisCluster, base: string): Promise<string[]> {
  const masters = await cluster.masters();
  const byMaster = new Map<number, string>();
  for (let i = 0; byMaster.size < masters.length && i < 1_000; i++) {
    const name = `${base}:${i}`;
    const node = await cluster.nodeForKey(lockKeys('padlock', name).lock);
    if (!byMaster.has(node.port)) byMaster.set(node.port, name);
  }
  return [...byMaster.values()];
}

async function evalCalls(target: RedisServer): Promise<number> {
  const info = String(await command(target, 'INFO', 'commandstats'));
  return Number(/cmdstat_eval:calls=(\d+)/.exec(info)?.[1] ?? 0);
}

async function waitFor(check: () => Promise<boolean>, ms = 5_000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return check();
}

