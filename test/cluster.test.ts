/**
 * padlock on a Redis Cluster (3 masters with a replica each, made by `redis-cli --cluster create`):
 * a lock's keys stay in one slot, a release reaches a waiter through the cluster, and a slot
 * migration or a failover of the slot's master under a held lock never loses it silently: the
 * holder keeps it (and nobody else gets it), or is told.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { lockKeys, scriptKeys } from '../src/keys.js';
import { renewScript } from '../src/stores/redis/scripts/index.js';
import { keySlot } from '../src/stores/redis/adapters/slot.js';
import { LockLostError, Padlock, RedisUnavailableError, type Lease } from '../src/index.js';
import type { PadlockOptions } from '../src/options.js';
import { command, info, startCluster, type RedisCluster } from './harness/topologies.js';
import { delay, eventually } from './harness/redis.js';
import { probeWakes } from './harness/probes.js';
import { parseLock } from './harness/lock-state.js';

let cluster: RedisCluster;
const padlocks: Padlock[] = [];
before(async () => {
  cluster = await startCluster();
});
after(() => Promise.all(padlocks.map((p) => p.close())));

/** A Padlock on a fresh `Cluster` client, closed after the file. */
function padlockOn(options: Omit<PadlockOptions, 'redis'> = {}): Padlock {
  const padlock = new Padlock({ redis: cluster.client(), ...options });
  padlocks.push(padlock);
  return padlock;
}

/** Another master than the one serving `key`. */
async function otherMaster(key: string) {
  const current = await cluster.nodeForKey(key);
  const other = (await cluster.masters()).find((m) => m !== current);
  assert.ok(other !== undefined);
  return other;
}

/** The hold is kept and exclusive, or its holder was told it is gone: never lost silently. */
async function keptOrTold(lease: Lease, name: string): Promise<'kept' | 'told'> {
  const other = padlockOn().mutex(name);
  // Just after a failover a new client may still be finding the cluster: it is asked again while
  // it cannot answer (the holder's state is read again each time), for up to 10 s.
  const until = Date.now() + 10_000;
  for (;;) {
    if (!lease.isHeld) {
      assert.ok(lease.signal.reason instanceof LockLostError, 'a hold that is gone was reported lost');
      return 'told';
    }
    try {
      assert.equal(await other.tryAcquire(), null, 'a hold its holder still believes in excludes everyone else');
      return 'kept';
    } catch (error) {
      if (!(error instanceof RedisUnavailableError) || Date.now() > until) throw error;
      await delay(200);
    }
  }
}

describe('padlock on a Redis Cluster', () => {
  it('keeps every key of a lock in one slot, and a release reaches a waiter on the slot\'s shard alone (sharded pub/sub)', async () => {
    const keys = lockKeys('padlock', 'cluster:basic');
    const slots = new Set(scriptKeys(keys).map(keySlot));
    assert.equal(slots.size, 1, 'one slot');
    assert.equal(await cluster.slotOf(keys.lock), [...slots][0], 'the slot Redis computes');
    const holderSide = padlockOn();
    const waiterSide = padlockOn();
    const holder = await holderSide.fairMutex('cluster:basic').acquire();
    probeWakes(waiterSide, { messagesOnly: true }); // only the release's message can move the waiter
    const waiting = waiterSide.fairMutex('cluster:basic').acquire({ waitMs: 10_000 });
    // Released once the waiter is queued (a release before that would hand nothing over).
    const reader = cluster.client();
    assert.ok(await eventually(async () => (await reader.llen(keys.queue)) === 1), 'the waiter queued');
    reader.disconnect();
    await holder.release();
    const lease = await waiting;
    assert.ok(lease.fence > holder.fence);
    await lease.release();
    // The handoff went out by SPUBLISH on the lock's own master; nothing was broadcast by PUBLISH.
    const master = await cluster.nodeForKey(keys.lock);
    const calls = async (node: Parameters<typeof info>[0], command: string): Promise<number> =>
      Number(/calls=(\d+)/.exec((await info(node, 'commandstats')).get(`cmdstat_${command}`) ?? '')?.[1] ?? 0);
    assert.ok((await calls(master, 'spublish')) > 0, 'SPUBLISH on the slot\'s master');
    for (const node of await cluster.masters()) assert.equal(await calls(node, 'publish'), 0, 'no classic PUBLISH anywhere');
  });

  it('renews many holds in one round trip per node, not one per lock or per slot', async () => {
    const client = cluster.client();
    // A 3 s lease: renewed every second, so that a tick late under load loses nothing (with 1.5 s,
    // a hold was lost once in a loaded run).
    const padlock = new Padlock({ redis: client, leaseMs: 3_000 });
    padlocks.push(padlock);
    // Count, at the client, each round trip that carries renewals and how many scripts it carries.
    const renewSha = renewScript.sha;
    let trips = 0;
    let scripts = 0;
    const pipeline = client.pipeline.bind(client);
    client.pipeline = (...args: Parameters<typeof client.pipeline>) => {
      const batch = pipeline(...args);
      const exec = batch.exec.bind(batch);
      batch.exec = (...execArgs: Parameters<typeof batch.exec>) => {
        const renewals = batch.length; // padlock pipelines only renewals on a Cluster
        if (renewals > 0) {
          trips++;
          scripts += renewals;
        }
        return exec(...execArgs);
      };
      return batch;
    };
    const evalsha = client.evalsha.bind(client) as (...args: unknown[]) => Promise<unknown>;
    (client as unknown as { evalsha: (...args: unknown[]) => Promise<unknown> }).evalsha = (...args) => {
      if (args[0] === renewSha) {
        trips++;
        scripts++;
      }
      return evalsha(...args);
    };
    const names = Array.from({ length: 30 }, (_, i) => `cluster:renew:${i}`);
    const slots = new Set(names.map((n) => keySlot(lockKeys('padlock', n).lock)));
    const leases = await Promise.all(names.map((n) => padlock.mutex(n).acquire()));
    // The first tick (at 1 s) loads the renew script on each node (NOSCRIPT, then EVAL, call by
    // call): count after it.
    await delay(1_300);
    trips = 0;
    scripts = 0;
    await delay(2_100); // two renewal ticks
    assert.ok(leases.every((l) => l.isHeld), 'every hold was renewed');
    assert.ok(trips > 0, 'renewals ran');
    // 30 holds in ~30 slots on 3 masters: one trip per node carries ~10 scripts (one per slot).
    assert.ok(scripts >= 5 * trips, `${scripts} renew scripts in ${trips} round trips (${slots.size} slots on 3 nodes)`);
    await Promise.all(leases.map((l) => l.release()));
  });

  it('a slot migration under a held lock: the holder keeps it, renews it on the new master, and nobody else gets it', async () => {
    const name = 'cluster:migrate';
    const keys = lockKeys('padlock', name);
    const lease = await padlockOn({ leaseMs: 1_500 }).mutex(name).acquire();
    const target = await otherMaster(keys.lock);
    const moved = await cluster.migrateSlot(await cluster.slotOf(keys.lock), target);
    assert.ok(moved >= 1, 'the lock hash moved');
    await delay(1_800); // past the lease: only renewals on the new master kept it
    assert.equal(await keptOrTold(lease, name), 'kept');
    assert.equal(parseLock(String(await command(target, 'GET', keys.lock)))?.owner, lease.owner, 'the hold is on the new master');
    await lease.extend();
    await lease.release();
  });

  it('a failover of the slot\'s master under a held lock: the holder keeps it or is told, never silently', async (t) => {
    const name = 'cluster:failover';
    const keys = lockKeys('padlock', name);
    const lease = await padlockOn({ leaseMs: 3_000 }).mutex(name).acquire();
    const master = await cluster.nodeForKey(keys.lock);
    const failover = await cluster.failover(master, 'kill');
    assert.notEqual(failover.promoted, master);
    await delay(1_500); // a renewal has run against the promoted replica
    const outcome = await keptOrTold(lease, name);
    t.diagnostic(`the hold was ${outcome} (failover took ${failover.ms} ms)`);
    if (outcome === 'kept') await lease.release();
    await cluster.revive(master);
  });
});
