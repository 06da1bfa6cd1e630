/**
 * The topology harness does what it says, against real processes: a Sentinel set that fails over
 * and a client that follows, WAIT that sees a paused replica, a Cluster whose slots move (MOVED,
 * ASK) and whose masters fail over, and sharded pub/sub through ioredis's Cluster client.
 */
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import type { Cluster } from 'ioredis';
import {
  admin,
  command,
  info,
  notYet,
  startCluster,
  startSentinelSet,
  TopologyTimeoutError,
  waitUntil,
  type RedisCluster,
  type SentinelSet,
} from './harness/topologies.js';
import type { RedisServer } from '../src/devserver/redis-server.js';

/** The reply to a command as a string, or the error's message (MOVED, ASK) when it fails. */
async function answer(server: RedisServer, name: string, ...args: string[]): Promise<string> {
  try {
    return String(await command(server, name, ...args));
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

describe('the harness waits', () => {
  it('with a deadline, and says what did not happen and what it saw', async () => {
    let probes = 0;
    const never = waitUntil('the moon turns blue', () => {
      probes++;
      return Promise.resolve(notYet(`grey, probe ${probes}`));
    }, { timeoutMs: 100, intervalMs: 10 });
    await assert.rejects(never, (error: unknown) => {
      assert.ok(error instanceof TopologyTimeoutError);
      assert.match(error.message, /^the moon turns blue: not within 100 ms; last seen: grey, probe \d+$/);
      return true;
    });
    assert.ok(probes > 1, 'it probed more than once');
  });
});

describe('a Sentinel set: 1 primary, 1 replica, 3 sentinels', () => {
  let set: SentinelSet;
  let startMs = 0;
  before(async () => {
    const started = Date.now();
    set = await startSentinelSet({ replicas: 1 });
    startMs = Date.now() - started;
  });

  it('comes up: the first server is primary, the replica follows it, a Sentinel-mode client writes and reads', async (t) => {
    t.diagnostic(`started in ${startMs} ms`);
    const [first, second] = set.servers;
    assert.equal(await set.primary(), first);
    assert.deepEqual(await set.replicas(), [second]);
    assert.equal(set.sentinels.length, 3);
    const replication = await info(second!, 'replication');
    assert.equal(replication.get('role'), 'slave');
    assert.equal(replication.get('master_port'), String(first!.port));

    const client = set.client();
    await client.set('sentinel:hello', 'world');
    assert.equal(await client.get('sentinel:hello'), 'world');
    assert.equal(await command(first!, 'GET', 'sentinel:hello'), 'world', 'the client wrote to the primary');
    await set.waitForSync();
    assert.equal(await command(second!, 'GET', 'sentinel:hello'), 'world', 'waitForSync waited for the replica');
  });

  it('WAIT 1 100 returns 0 while the only replica is paused, 1 once it is back', async () => {
    const client = set.client();
    await client.set('wait:before', '1');
    assert.equal(await client.call('WAIT', 1, 1_000), 1, 'acknowledged while the replica runs');
    const paused = await set.pauseReplica();
    assert.equal(paused, set.servers[1]);
    await client.set('wait:paused', '1');
    assert.equal(await client.call('WAIT', 1, 100), 0, 'no acknowledgement from a paused replica');
    await set.revive(paused);
    assert.equal(await client.call('WAIT', 1, 100), 1, 'acknowledged once it is back');
  });

  it('failover() kills the primary, the sentinels promote the replica, and the client follows', async (t) => {
    const client = set.client();
    await client.set('failover:before', '1');
    assert.equal(await client.call('WAIT', 1, 1_000), 1);
    const [first, second] = set.servers;
    const failover = await set.failover();
    t.diagnostic(`failover took ${failover.ms} ms`);
    assert.equal(failover.previous, first);
    assert.equal(failover.promoted, second);
    assert.equal(await set.primary(), second);
    assert.equal((await info(second!, 'replication')).get('role'), 'master');

    await client.set('failover:after', '1');
    assert.equal(await command(second!, 'GET', 'failover:after'), '1', 'a write after the failover lands on the new primary');
    assert.equal(await client.get('failover:before'), '1', 'an acknowledged write survived');
  });

  it('revive() brings the old primary back, empty, as a replica of the new one', async (t) => {
    const [first, second] = set.servers;
    const started = Date.now();
    await set.revive(first!);
    t.diagnostic(`revive took ${Date.now() - started} ms`);
    const replication = await info(first!, 'replication');
    assert.equal(replication.get('role'), 'slave');
    assert.equal(replication.get('master_port'), String(second!.port));
    assert.equal(await command(first!, 'GET', 'failover:after'), '1', 'it resynced from the new primary');
    const client = set.client();
    await client.set('revived', '1');
    assert.equal(await client.call('WAIT', 1, 1_000), 1);
  });
});

describe('a Sentinel set at its defaults: 2 replicas, 3 sentinels', () => {
  it('fails over a paused (SIGSTOP) primary; the other replica follows the new one; ioredis 6 follows with failoverDetector', async (t) => {
    let started = Date.now();
    const set = await startSentinelSet();
    t.diagnostic(`started in ${Date.now() - started} ms`);
    assert.equal(set.servers.length, 3);
    const client = set.client({ major: 6, failoverDetector: true });
    await client.set('k', 'before');

    const failover = await set.failover('pause');
    t.diagnostic(`failover took ${failover.ms} ms`);
    assert.equal(failover.previous, set.servers[0]);
    assert.ok(set.servers.slice(1).includes(failover.promoted));
    const [other] = (await set.replicas()).filter((s) => s !== failover.promoted);
    await set.waitForSync();
    assert.equal((await info(other!, 'replication')).get('master_port'), String(failover.promoted.port));

    await client.set('k', 'after');
    assert.equal(await command(failover.promoted, 'GET', 'k'), 'after');
    started = Date.now();
    await set.revive(failover.previous);
    t.diagnostic(`revive took ${Date.now() - started} ms`);
    assert.equal((await info(failover.previous, 'replication')).get('master_port'), String(failover.promoted.port));
  });
});

describe('a Cluster: 3 masters with a replica each', () => {
  let cluster: RedisCluster;
  let client: Cluster;
  let startMs = 0;
  before(async () => {
    const started = Date.now();
    cluster = await startCluster();
    startMs = Date.now() - started;
    client = cluster.client();
  });

  it('comes up: 6 nodes, 3 masters serving all 16384 slots, each with one replica', async (t) => {
    t.diagnostic(`created in ${startMs} ms`);
    assert.equal(cluster.nodes.length, 6);
    const masters = await cluster.masters();
    assert.equal(masters.length, 3);
    for (const master of masters) assert.equal((await cluster.replicasOf(master)).length, 1);
    for (const node of cluster.nodes) {
      const state = String(await command(node, 'CLUSTER', 'INFO'));
      assert.match(state, /cluster_state:ok/);
      assert.match(state, /cluster_slots_assigned:16384/);
      assert.match(state, /cluster_known_nodes:6/);
      assert.match(state, /cluster_size:3/);
    }
  });

  it('puts keys with one hash tag in one slot, on one node', async () => {
    const keys = ['{order:42}:lock', '{order:42}:fence', '{order:42}'];
    const slots = new Set(await Promise.all(keys.map((k) => cluster.slotOf(k))));
    assert.equal(slots.size, 1);
    const node = await cluster.nodeForKey(keys[0]!);
    for (const key of keys) {
      assert.equal(await cluster.nodeForKey(key), node);
      await client.set(key, 'v');
      assert.equal(await command(node, 'GET', key), 'v');
    }
  });

  it('lets an ioredis Cluster client write across slots, each key on the master serving it', async () => {
    const keys = Array.from({ length: 30 }, (_, i) => `spread:${i}`);
    await Promise.all(keys.map((key) => client.set(key, key)));
    const owners = new Set<RedisServer>();
    for (const key of keys) {
      const node = await cluster.nodeForKey(key);
      owners.add(node);
      assert.equal(await command(node, 'GET', key), key);
      assert.equal(await client.get(key), key);
    }
    assert.equal(owners.size, 3, 'the keys landed on every master');
  });

  it('migrateSlot moves a slot with its keys; the old owner answers MOVED and the client follows', async () => {
    const keys = ['{moving}a', '{moving}b'];
    for (const key of keys) await client.set(key, key);
    const slot = await cluster.slotOf(keys[0]!);
    const source = await cluster.nodeForSlot(slot);
    const target = (await cluster.masters()).find((m) => m !== source)!;

    assert.equal(await cluster.migrateSlot(slot, target), 2);
    assert.equal(await cluster.nodeForSlot(slot), target);
    for (const key of keys) {
      assert.equal(await command(target, 'GET', key), key);
      assert.equal(await answer(source, 'GET', key), `MOVED ${slot} 127.0.0.1:${target.port}`);
      assert.equal(await client.get(key), key);
    }
    await client.set('{moving}c', 'c');
    assert.equal(await command(target, 'GET', '{moving}c'), 'c', 'a write after the move lands on the new owner');
  });

  it('leaves a slot half-migrated: the source answers ASK for a key it no longer has, and the client follows', async () => {
    const keys = ['{asked}a', '{asked}b'];
    for (const key of keys) await client.set(key, key);
    const slot = await cluster.slotOf(keys[0]!);
    const source = await cluster.nodeForSlot(slot);
    const target = (await cluster.masters()).find((m) => m !== source)!;

    const migration = await cluster.beginMigration(slot, target);
    assert.equal(await migration.moveKeys(1), 1);
    const answers = await Promise.all(keys.map((key) => answer(source, 'GET', key)));
    const asked = `ASK ${slot} 127.0.0.1:${target.port}`;
    const kept = answers.filter((a) => a !== asked);
    assert.equal(kept.length, 1, `one key moved, one not: ${answers.join(' / ')}`);
    assert.ok(keys.includes(kept[0]!), 'the source still answers for the key it has');
    assert.equal(await cluster.nodeForSlot(slot), source, 'the source still owns the slot');
    for (const key of keys) assert.equal(await client.get(key), key);
    await client.set('{asked}new', 'n');
    assert.equal(await answer(target, 'GET', '{asked}new'), `MOVED ${slot} 127.0.0.1:${source.port}`, 'the target serves it only after ASKING');
    assert.equal(await getAsking(target, '{asked}new'), 'n', 'a new key went to the importing node');

    await migration.finish();
    assert.equal(await cluster.nodeForSlot(slot), target);
    for (const key of [...keys, '{asked}new']) assert.equal(await client.get(key), key === '{asked}new' ? 'n' : key);
  });

  it('hands a master over to its replica with CLUSTER FAILOVER, losing nothing', async (t) => {
    await client.set('{graceful}k', 'v');
    const master = await cluster.nodeForKey('{graceful}k');
    const [replica] = await cluster.replicasOf(master);
    const failover = await cluster.manualFailover(replica!);
    t.diagnostic(`manual failover took ${failover.ms} ms`);
    assert.equal(failover.previous, master);
    assert.equal(failover.promoted, replica);
    assert.equal(await cluster.nodeForKey('{graceful}k'), replica);
    assert.deepEqual(await cluster.replicasOf(replica!), [master], 'the old master is now its replica');
    assert.equal(await command(replica!, 'GET', '{graceful}k'), 'v');
    assert.equal(await client.get('{graceful}k'), 'v');
  });

  it('delivers sharded pub/sub (SSUBSCRIBE/SPUBLISH) on every master through ioredis 5 and 6 with shardedSubscribers', async () => {
    const channels = await channelsOnEveryMaster(cluster);
    for (const major of [5, 6] as const) {
      const subscriber = cluster.client({ major, shardedSubscribers: true });
      const received = new Set<string>();
      subscriber.on('smessage', (channel: string, message: string) => received.add(`${channel} ${message}`));
      for (const channel of channels) await subscriber.ssubscribe(channel);
      for (const channel of channels) assert.equal(await client.spublish(channel, `hello ${major}`), 1, `one subscriber on ${channel}`);
      await waitUntil(`ioredis ${major} receives every sharded message`, () =>
        Promise.resolve(received.size === channels.length ? true : notYet(`${received.size} of ${channels.length}`)), { timeoutMs: 5_000 });
      assert.deepEqual([...received].sort(), channels.map((c) => `${c} hello ${major}`).sort());
      subscriber.disconnect();
    }
  });

  it('keeps sharded subscriptions of ioredis 6 across a slot migration', async () => {
    const subscriber = cluster.client({ major: 6, shardedSubscribers: true });
    const received: string[] = [];
    subscriber.on('smessage', (_channel: string, message: string) => received.push(message));
    await subscriber.ssubscribe('{moved-channel}');
    const slot = await cluster.slotOf('{moved-channel}');
    const source = await cluster.nodeForSlot(slot);
    await cluster.migrateSlot(slot, (await cluster.masters()).find((m) => m !== source)!);
    await publishUntilReceived(client, '{moved-channel}', received);
    subscriber.disconnect();
  });

  it('failover(master) kills it and promotes its replica; a key written with WAIT 1 survives; clients follow', async (t) => {
    const key = '{failing}k';
    const subscribers = ([5, 6] as const).map((major) => {
      const subscriber = cluster.client({ major, shardedSubscribers: true });
      const received: string[] = [];
      subscriber.on('smessage', (_channel: string, message: string) => received.push(message));
      return { subscriber, received };
    });
    for (const { subscriber } of subscribers) await subscriber.ssubscribe(key);
    // WAIT on the connection that wrote: ioredis sends a pipeline to the node of its keyed command.
    const written = await client.pipeline().set(key, 'kept').call('WAIT', 1, 1_000).exec();
    assert.deepEqual(written, [[null, 'OK'], [null, 1]]);
    const master = await cluster.nodeForKey(key);
    const [replica] = await cluster.replicasOf(master);

    const failover = await cluster.failover(master);
    t.diagnostic(`failover took ${failover.ms} ms`);
    assert.equal(failover.previous, master);
    assert.equal(failover.promoted, replica);
    assert.equal(await cluster.nodeForKey(key), replica);
    assert.equal(await command(replica!, 'GET', key), 'kept');
    assert.equal(await client.get(key), 'kept', 'the client reaches the key on the promoted replica');
    for (const { received } of subscribers) await publishUntilReceived(client, key, received);

    const started = Date.now();
    await cluster.revive(master);
    t.diagnostic(`revive took ${Date.now() - started} ms`);
    assert.deepEqual(await cluster.replicasOf(replica!), [master], 'the old master came back as its replica');
    for (const { subscriber } of subscribers) subscriber.disconnect();
  });
});

/** GET after ASKING on the same connection, as a client does after `-ASK`. */
async function getAsking(server: RedisServer, key: string): Promise<unknown> {
  const replies = await admin(server).pipeline().call('ASKING').get(key).exec();
  return replies?.[1]?.[1];
}

/** One channel per master: channel names whose slots the three masters serve. */
async function channelsOnEveryMaster(cluster: RedisCluster): Promise<string[]> {
  const byMaster = new Map<RedisServer, string>();
  for (let i = 0; byMaster.size < 3; i++) {
    const channel = `{channel:${i}}`;
    const master = await cluster.nodeForKey(channel);
    if (!byMaster.has(master)) byMaster.set(master, channel);
    if (i > 1_000) throw new Error('no channel found for every master');
  }
  return [...byMaster.values()];
}

/** SPUBLISHes until `received` gets a message (a subscriber re-subscribing takes a moment). */
async function publishUntilReceived(publisher: Cluster, channel: string, received: string[]): Promise<void> {
  let sent = 0;
  await waitUntil(`a sharded message on ${channel} is received`, async () => {
    await publisher.spublish(channel, `message ${++sent}`);
    return received.length > 0 ? true : notYet(`${sent} published, none received`);
  }, { timeoutMs: 10_000, intervalMs: 100 });
}
