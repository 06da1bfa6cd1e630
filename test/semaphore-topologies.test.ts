/**
 * The semaphore on every topology that serves it (one server with ioredis and node-redis, Sentinel
 * with and without replica acknowledgement, Cluster with sharded pub/sub), and its refusal on
 * Redlock: N masters cannot agree on one count of permits held.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { PadlockOptionError, PermitLimitError, type Padlock } from '../src/index.js';
import { semaphoreKeys } from '../src/stores/redis/kinds/semaphore-protocol.js';
import { TOPOLOGIES, useTopology, type TopologyUnderTest } from './harness/suite.js';
import { eventually } from './harness/redis.js';
import { probeScripts, probeWakes } from './harness/probes.js';

const CHOSEN = ['single server · ioredis', 'Sentinel · ioredis', 'Cluster · ioredis', 'Redlock (5 masters) · ioredis'];

/** A waiter queue's length, as every copy of the data says. */
function queueLength(topology: TopologyUnderTest, name: string): Promise<number> {
  return topology.read((client) => client.llen(semaphoreKeys('padlock', name).queue));
}

/** Holders, waiters handed permits by a release and by setPermits, available(), extend, isLocked and forceRelease. */
async function scenario(topology: TopologyUnderTest, a: Padlock, b: Padlock, name: string): Promise<void> {
  const semA = a.semaphore(name, 2);
  const semB = b.semaphore(name, 2);
  const holder = await semA.acquire({ permits: 2 });
  assert.equal(await semB.tryAcquire(), null);
  await assert.rejects(semB.acquire({ permits: 3 }), PermitLimitError);
  const first = semB.acquire({ permits: 1 });
  const second = semB.acquire({ permits: 2 });
  assert.ok(await eventually(async () => (await queueLength(topology, name)) === 2, 10_000), 'both waiters queued');
  await semA.setPermits(3);
  const one = await first; // 1 permit free once the limit is 3
  assert.equal(await semA.available(), 0);
  await holder.release();
  const two = await second;
  assert.ok(two.fence > one.fence && one.fence > holder.fence, 'fences increase with every acquisition');
  await two.extend(20_000);
  assert.equal(await semA.isLocked(), true);
  assert.equal(await semA.forceRelease(), true);
  assert.equal(await semA.available(), 3);
  assert.equal(await semA.isLocked(), false);
  await Promise.all([one.release(), two.release()].map((p) => p.catch(() => undefined)));
}

for (const factory of TOPOLOGIES.filter((f) => CHOSEN.includes(f.name))) {
  describe(`semaphore on ${factory.name}`, () => {
    const topology = useTopology(factory);
    if (factory.redlock === true) {
      it('is refused at creation with PadlockOptionError naming the kind (a count of permits needs one server)', async () => {
        const padlock = await topology.padlock();
        assert.throws(() => padlock.semaphore('sem:topology', 2), (e: unknown) => e instanceof PadlockOptionError && e.option === 'semaphore' && /Redlock|masters/i.test(e.message));
      });
      return;
    }
    it('takes, queues, hands over, renews and frees permits', async () => {
      await scenario(topology, await topology.padlock(), await topology.padlock(), 'sem:topology');
    });
    if (factory.name.startsWith('Sentinel')) {
      it('with replica acknowledgement: the same scenario, every grant and renewal acknowledged', async () => {
        const options = { replicas: { min: 1, timeoutMs: 2_000 } };
        await scenario(topology, await topology.padlock(options), await topology.padlock(options), 'sem:replicas');
      });
      it('with replica acknowledgement: the handoff message is not taken on its word, the waiter claims its permits with one call', async () => {
        const options = { replicas: { min: 1, timeoutMs: 2_000 } };
        const name = 'sem:claim';
        const holder = await (await topology.padlock(options)).semaphore(name, 1).acquire();
        const waiterSide = await topology.padlock(options);
        const wakes = probeWakes(waiterSide);
        const scripts = probeScripts(waiterSide);
        const waiting = waiterSide.semaphore(name, 1).acquire();
        assert.ok(await eventually(async () => (await queueLength(topology, name)) === 1, 10_000));
        wakes.messagesOnly(); // from now on only a message ends the waiter's sleep
        const attempts = scripts.get('semaphore-acquire.lua') ?? 0;
        await holder.release();
        const lease = await waiting;
        assert.equal(wakes.messages, 1);
        assert.equal((scripts.get('semaphore-acquire.lua') ?? 0) - attempts, 1, 'one claim, acknowledged by the replicas, after the message');
        await lease.release();
      });
    }
  });
}
