/**
 * The read/write lock on every topology: one server (ioredis and node-redis), Sentinel (with and
 * without replica acknowledgement), Cluster (sharded pub/sub carries the handoffs); refused on Redlock.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { LockUpgradeError, PadlockOptionError, type Padlock } from '../src/index.js';
import { readWriteKeys } from '../src/stores/redis/kinds/read-write-protocol.js';
import { TOPOLOGIES, useTopology, type TopologyUnderTest } from './harness/suite.js';
import { eventually } from './harness/redis.js';
import { internals } from '../src/testing.js';

const CHOSEN = new Set(['single server · ioredis', 'Sentinel · ioredis', 'Cluster · ioredis', 'Redlock (5 masters) · ioredis']);

/** Readers share; a writer queues; readers behind it queue; one release admits the writer, the next all readers at once. */
async function sharesAndHandsOver(topology: TopologyUnderTest, a: Padlock, b: Padlock, name: string): Promise<void> {
  const keys = readWriteKeys('write')('padlock', name);
  const queued = (n: number) => eventually(() => topology.read(async (client) => (await client.llen(keys.queue)) === n), 10_000);
  const first = await a.readWrite(name).read.acquire();
  const second = await b.readWrite(name).read.acquire({ waitMs: 0 });
  const writing = b.readWrite(name).write.acquire({ waitMs: 20_000 });
  assert.ok(await queued(1), 'the writer queued');
  const readers = [a, b].map((p) => p.readWrite(name).read.acquire({ waitMs: 20_000 }));
  assert.ok(await queued(3), 'new readers queued behind the writer');
  await Promise.all([first.release(), second.release()]);
  const w = await writing;
  assert.ok(w.fence > first.fence);
  await w.release();
  const leases = await Promise.all(readers);
  assert.ok(leases.every((l) => l.fence === w.fence));
  await Promise.all(leases.map((l) => l.release()));
  assert.equal(await a.readWrite(name).read.isLocked(), false);
}

for (const factory of TOPOLOGIES.filter((f) => CHOSEN.has(f.name))) {
  describe(`readWrite on ${factory.name}`, () => {
    const topology = useTopology(factory);
    if (factory.redlock === true) {
      it('is refused at creation with PadlockOptionError naming readWrite and the topology', async () => {
        const padlock = await topology.padlock();
        assert.throws(() => padlock.readWrite('rw:redlock'), (e: unknown) => e instanceof PadlockOptionError && e.option === 'readWrite' && /Redlock|masters/.test(e.message));
      });
      return;
    }

    it('readers share, a writer waits for them, the readers behind it are handed their holds together', async () => {
      await sharesAndHandsOver(topology, await topology.padlock(), await topology.padlock(), 'rw:topo:share');
    });

    it('downgrade by context, upgrade refused at once, holds renewed past their lease', async () => {
      const padlock = await topology.padlock({ leaseMs: 600 });
      const { read, write } = padlock.readWrite('rw:topo:down');
      await write.withLock(async (w) => {
        const r = await read.acquire({ waitMs: 0 });
        assert.equal(r.fence, w.fence);
        await w.release();
        await internals(padlock).runtime.runScoped([r.hold], async () => {
          await assert.rejects(write.acquire(), LockUpgradeError);
        });
        await new Promise((resolve) => setTimeout(resolve, 1_500)); // past the lease: the watchdog renews it
        assert.equal(r.isHeld, true);
        assert.equal(await read.isLocked(), true);
        await r.release();
      });
      assert.equal(await read.isLocked(), false);
      assert.equal(await write.isLocked(), false);
    });

    if (factory.name.startsWith('Sentinel')) {
      it('with replicas: { min: 1 }, waiters claim their handoffs by an acknowledged call', async () => {
        const options = { replicas: { min: 1, timeoutMs: 1_000 } };
        await sharesAndHandsOver(topology, await topology.padlock(options), await topology.padlock(options), 'rw:topo:replicas');
      });
    }
  });
}
