/**
 * Every key padlock writes expires once its lock is free and unused: one lock per entity (millions
 * of names) must not grow Redis. And fences stay strictly increasing without an eternal counter.
 * Once per topology (./harness/suite.ts): on a Cluster the names spread over every master, on
 * Redlock every master holds every name, and the scan covers them all.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { lockKeys } from '../src/keys.js';
import { admin } from './harness/admin.js';
import { TOPOLOGIES, useTopology } from './harness/suite.js';
import { parseLock } from './harness/lock-state.js';

/** The documented bound (docs/protocol.md): the fence key lives an hour after the lock's last acquisition; every other key less. */
const FENCE_RETENTION_MS = 3_600_000;

// On Redlock, once (ioredis): what it checks is the protocol's (the keys written), the same whichever
// client sends the scripts; node-redis on Redlock runs every other suite. The many-names run is 20 000
// names on the single server, fewer where each name costs several servers' work (the keys each name
// leaves are the same; 20 000 on 5 masters took 42 s of the suite): 5 000 on Sentinel and Cluster
// (still spread over every master), 2 000 on Redlock.
const NAMES = (factory: (typeof TOPOLOGIES)[number]): number => (factory.redlock === true ? 2_000 : factory.name.startsWith('single server') ? 20_000 : 5_000);

for (const factory of TOPOLOGIES.filter((f) => f.redlock !== true || f.client === 'ioredis')) {
  describe(`${factory.name}: footprint`, () => {
    const topology = useTopology(factory);

    /**
     * Every padlock key on every master (a SCAN reaches one server only), with its PTTL there (on
     * Redlock, each master's copy of a key counts on its own).
     */
    async function padlockKeys(): Promise<{ key: string; pttl: number }[]> {
      const keys: { key: string; pttl: number }[] = [];
      for (const master of await topology.masters()) {
        let cursor = '0';
        do {
          const [next, batch] = await admin(master).scan(cursor, 'MATCH', 'padlock:*', 'COUNT', 1000);
          cursor = next;
          const pipeline = admin(master).pipeline();
          for (const key of batch) pipeline.pttl(key);
          const ttls = (await pipeline.exec()) ?? [];
          batch.forEach((key, i) => {
            const [error, pttl] = ttls[i] ?? [new Error('no reply')];
            if (error !== null) throw error;
            keys.push({ key, pttl: Number(pttl) });
          });
        } while (cursor !== '0');
      }
      return keys;
    }

    it(`${NAMES(factory).toLocaleString('en')} distinct names acquired and released leave no key without an expiry, none longer than the documented bound`, { timeout: 120_000 }, async () => {
      const padlock = await topology.padlock();
      const names = Array.from({ length: NAMES(factory) }, (_, i) => `order:${i}`);
      let next = 0;
      const worker = async (): Promise<void> => {
        while (next < names.length) {
          const lease = await padlock.mutex(names[next++]!).acquire();
          await lease.release();
        }
      };
      const lookupsBefore = await topology.commandCalls('hget');
      await Promise.all(Array.from({ length: 64 }, worker));
      // A fresh owner's first try is in no queue: taking a free lock does not look for it there.
      assert.equal((await topology.commandCalls('hget')) - lookupsBefore, 0, 'no HGET: no queue lookup on an uncontended acquisition');
      const keys = await padlockKeys();
      assert.ok(keys.length > 0, 'padlock wrote keys (the scan sees them)');
      const masters = await topology.masters();
      const spread = await Promise.all(masters.map(async (m) => (await admin(m).dbsize()) > 0));
      assert.ok(spread.every(Boolean), 'every master holds some of the keys (the scan had to cover them all)');
      const ttls = keys.map(({ pttl }) => pttl);
      const eternal = keys.filter((_, i) => ttls[i] === -1).map(({ key }) => key);
      assert.deepEqual(eternal.slice(0, 5), [], `${eternal.length} keys never expire`);
      const longest = ttls.reduce((max, pttl) => Math.max(max, pttl), -Infinity); // (too many for Math.max(...ttls) on Redlock)
      assert.ok(longest <= FENCE_RETENTION_MS, `every key expires within the bound: the longest has ${longest} ms left`);
      // Only the locks' tombstones (their last fence) outlive the queues' few seconds.
      const lasting = keys.filter((_, i) => ttls[i]! > 60_000).map(({ key }) => key);
      assert.ok(lasting.every((key) => key.endsWith(':lock')), `only lock keys last long: ${lasting.filter((k) => !k.endsWith(':lock')).slice(0, 3).join(', ')}`);
    });

    it('fences keep increasing when the lock key has expired (or a server lost its data)', async () => {
      const padlock = await topology.padlock();
      const keys = lockKeys('padlock', 'fence:gone');
      const first = await padlock.mutex('fence:gone').acquire();
      await first.release();
      let last = await padlock.mutex('fence:gone').acquire();
      await last.release();
      assert.ok(last.fence > first.fence);
      // Each kind the topology serves takes the lock after its key went, on every copy (fences are shared by the kinds).
      for (const kind of topology.kinds) {
        await Promise.all(topology.readers().map((client) => client.del(keys.lock))); // as if its tombstone had expired
        const next = await padlock[kind]('fence:gone').acquire();
        await next.release();
        assert.ok(next.fence > last.fence, `${kind}: fence ${next.fence} after ${last.fence}`);
        const tombstone = await topology.read((client) => client.get(keys.lock));
        assert.equal(parseLock(tombstone)?.fence, next.fence, 'the tombstone holds the last fence, exactly (on a majority of copies)');
        assert.ok(Number.isSafeInteger(next.fence));
        last = next;
      }
    });
  });
}
