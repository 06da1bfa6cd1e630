/**
 * The semaphore on every topology that serves it (one server with ioredis and node-redis, Sentinel
 * with and without replica acknowledgement, Cluster with sharded pub/sub), and its refusal on
 * Redlock: N masters cannot agree on one count of permits held.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { PadlockOptionError, PermitLimitError, type Padlock } from '../src/index.js';
import { semaphoreKeys } from '../src/locks/semaphore-protocol.js';
import { TOPOLOGIES, useTopology, type TopologyUnderTest } from './harness/suite.js';
import { eventually } from './harness/redis.js';

const CHOSEN = ['single server · ioredis', 'single server · node-redis', 'Sentinel · ioredis', 'Cluster · ioredis', 'Redlock (5 masters) · ioredis'];

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
      it('with replica acknowledgement: a waiter handed its permits claims them with a call of its own', async () => {
        const options = { replicas: { min: 1, timeoutMs: 2_000 } };
        await scenario(topology, await topology.padlock(options), await topology.padlock(options), 'sem:replicas');
      });
    }
  });
}
