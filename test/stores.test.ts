/**
 * The store-neutral behaviour suite: what every lock kind promises, run once per store (Redis,
 * ZooKeeper, etcd, PostgreSQL) through the public API only. The Redis topologies have their own, deeper
 * factory suites (./harness/suite.ts); each consensus store has its own files for its layout and
 * its faults. A new store is one line in STORES.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import { LockLostError, LockNotHeldError, LockTimeoutError, LockUpgradeError, PermitLimitError, type Lease, type Padlock } from '../src/index.js';
import { etcdSingle } from './harness/etcd-store-target.js';
import { postgresSingle } from './harness/postgres-store-target.js';
import { redisSingle } from './harness/redis-store-target.js';
import { zookeeperStandalone } from './harness/zookeeper-store-target.js';
import type { StartedStore, StoreFreeOptions, StoreTarget } from './harness/store-target.js';
import { internals, redisInternals } from '../src/testing.js';

const STORES: readonly StoreTarget[] = [redisSingle, zookeeperStandalone, etcdSingle, postgresSingle];

/** Resolves once `check()` holds, or fails after `ms`. */
async function eventually(check: () => boolean | Promise<boolean>, what: string, ms = 10_000): Promise<void> {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) assert.fail(`not within ${ms} ms: ${what}`);
    await delay(20);
  }
}

for (const target of STORES) {
  describe(`store: ${target.name}`, () => {
    let store: StartedStore;
    const opened: Padlock[] = [];
    let prefixes = 0;
    /** A Padlock on the store under a prefix of this test's own (so leftovers are this test's). */
    const padlock = async (prefix: string, options: StoreFreeOptions = {}): Promise<Padlock> => {
      const made = await store.padlock({ prefix, ...options });
      opened.push(made);
      return made;
    };
    const freshPrefix = (): string => `st${++prefixes}`;

    before(async () => {
      store = await target.start();
    });
    after(async () => {
      await Promise.allSettled(opened.map((p) => p.close({ drainMs: 0 })));
      await store.stop();
    });

    it('mutex: excludes across Padlocks (concurrent read-modify-writes lose nothing), fences strictly increase', async () => {
      const prefix = freshPrefix();
      const sides = await Promise.all([padlock(prefix), padlock(prefix), padlock(prefix)]);
      let counter = 0;
      let inside = 0;
      const fences: number[] = [];
      await Promise.all(
        sides.flatMap((side) =>
          Array.from({ length: 8 }, () =>
            side.withLock('counter', async (lease) => {
              inside++;
              assert.equal(inside, 1, 'one holder at a time');
              fences.push(lease.fence);
              const read = counter;
              await delay(2);
              counter = read + 1;
              inside--;
            }),
          ),
        ),
      );
      assert.equal(counter, 24);
      for (let i = 1; i < fences.length; i++) assert.ok(fences[i]! > fences[i - 1]!, `fence ${fences[i]} after ${fences[i - 1]}`);
      await Promise.all(sides.map((side) => side.close()));
      assert.deepEqual(await store.leftovers(prefix), [], 'nothing left once released and closed');
    });

    it('mutex: tryAcquire gives null while held, waitMs runs out with LockTimeoutError, an abort rejects with its reason', async () => {
      const prefix = freshPrefix();
      const [a, b] = await Promise.all([padlock(prefix), padlock(prefix)]);
      const held = await a.mutex('busy').acquire();
      assert.equal(await b.mutex('busy').tryAcquire(), null);
      await assert.rejects(b.mutex('busy').acquire({ waitMs: 200 }), LockTimeoutError);
      const controller = new AbortController();
      const waiting = b.mutex('busy').acquire({ signal: controller.signal });
      await delay(50);
      controller.abort(new Error('caller gave up'));
      await assert.rejects(waiting, /caller gave up/);
      assert.equal(await b.mutex('busy').isLocked(), true);
      await held.release();
      await held.release(); // safe to call twice
      const next = await b.mutex('busy').acquire({ waitMs: 5_000 });
      assert.ok(next.fence > held.fence);
      await next.release();
      assert.equal(await a.mutex('busy').isLocked(), false);
      await Promise.all([a.close(), b.close()]);
      assert.deepEqual(await store.leftovers(prefix), [], 'an abandoned wait leaves nothing');
    });

    it('mutex: a waiter is woken by the release (not by a lease running out)', async () => {
      const prefix = freshPrefix();
      const [a, b] = await Promise.all([padlock(prefix, { leaseMs: 60_000 }), padlock(prefix)]);
      const held = await a.mutex('wake').acquire();
      let gotAt = 0;
      const waiting = b
        .mutex('wake')
        .acquire({ waitMs: 20_000 })
        .then((lease) => {
          gotAt = Date.now();
          return lease;
        });
      await delay(300);
      const releasedAt = Date.now();
      await held.release();
      const lease = await waiting;
      assert.ok(gotAt - releasedAt < 5_000, `served ${gotAt - releasedAt} ms after the release, long before the 60 s lease`);
      await lease.release();
    });

    it('re-entry: nested in the async context (same fence, count 2), and by owner token from another Padlock', async () => {
      const prefix = freshPrefix();
      const [a, b] = await Promise.all([padlock(prefix), padlock(prefix)]);
      await a.withLock('nested', async (outer) => {
        const inner = await a.mutex('nested').acquire();
        assert.equal(inner.holdCount, 2);
        assert.equal(inner.fence, outer.fence);
        await inner.release();
        assert.ok(outer.isHeld);
        const remote = await b.mutex('nested').acquire({ owner: outer.owner });
        assert.equal(remote.fence, outer.fence);
        assert.equal(remote.holdCount, 2);
        await remote.release();
        assert.ok(outer.isHeld, 'the remote release left the first hold');
      });
      await assert.rejects(b.mutex('nested').acquire({ owner: 'n0b0dy-h0lds-th1s-0wner' }), LockNotHeldError);
      assert.equal(await b.mutex('nested').isLocked(), false);
    });

    it('a short lease (1 s) is renewed while held, and forceRelease tells the holder (LockLostError on its signal)', async () => {
      const prefix = freshPrefix();
      const [a, b] = await Promise.all([padlock(prefix, { leaseMs: 1_000 }), padlock(prefix)]);
      const lease = await a.mutex('renewed').acquire();
      await delay(2_500);
      assert.ok(lease.isHeld && !lease.signal.aborted, 'renewed past 2.5 leases');
      assert.equal(await b.mutex('renewed').tryAcquire(), null);
      assert.equal(await b.mutex('renewed').forceRelease(), true);
      await eventually(() => lease.signal.aborted, 'the holder is told');
      assert.ok(lease.signal.reason instanceof LockLostError);
      const taken = await b.mutex('renewed').acquire({ waitMs: 5_000 });
      assert.ok(taken.fence > lease.fence);
      await taken.release();
    });

    it('forceRelease tells each holder within a second, whatever its lease (every kind); a notice naming a live hold changes nothing', async () => {
      const prefix = freshPrefix();
      const [holder, operator] = await Promise.all([padlock(prefix), padlock(prefix)]);
      const leases = [
        await holder.mutex('told:m').acquire(),
        await holder.readWrite('told:rw').write.acquire(),
        await holder.semaphore('told:s', 2).acquire(),
      ];
      const fixed = await holder.mutex('told:fixed').acquire({ leaseMs: 5_000 });
      const live = await holder.mutex('told:live').acquire();
      if (target === redisSingle) await redisInternals(holder).listeningForForce;
      // The hint every store's notice gives (a Redis message, a watch, a told key): checked, and kept
      // while the store has the hold (a fixed lease's end unmoved).
      internals(holder).runtime.suspect('told:live');
      internals(holder).runtime.suspect('told:fixed');
      const freedAt = Date.now();
      assert.equal(await operator.mutex('told:m').forceRelease(), true);
      assert.equal(await operator.readWrite('told:rw').write.forceRelease(), true);
      assert.equal(await operator.semaphore('told:s', 2).forceRelease(), true);
      await eventually(() => leases.every((l) => l.signal.aborted), 'every holder told', 1_000);
      for (const lease of leases) {
        assert.ok(lease.signal.reason instanceof LockLostError && lease.signal.reason.reason === 'taken', String(lease.signal.reason));
        assert.equal(lease.isHeld, false);
      }
      assert.ok(Date.now() - freedAt < 1_500, `told in ${Date.now() - freedAt} ms, not at the next renewal (10 s away)`);
      assert.ok(live.isHeld && fixed.isHeld && !live.signal.aborted && !fixed.signal.aborted, 'the notices about live holds changed nothing');
      assert.ok(fixed.expiresAt - Date.now() < 5_000, 'a fixed lease was not lengthened');
      await delay(300);
      assert.equal(await operator.mutex('told:fixed').isLocked(), true, 'nor cut short');
      await Promise.all([live.release(), fixed.release()]);
    });

    it('fairMutex: waiters are served in arrival order', async () => {
      const prefix = freshPrefix();
      const sides = await Promise.all([padlock(prefix), padlock(prefix), padlock(prefix), padlock(prefix)]);
      const [holder, ...waiters] = sides;
      const held = await holder.fairMutex('queue').acquire();
      const order: number[] = [];
      const waits: Promise<void>[] = [];
      for (const [i, side] of waiters.entries()) {
        waits.push(
          side
            .fairMutex('queue')
            .acquire({ waitMs: 20_000 })
            .then(async (lease) => {
              order.push(i);
              await delay(5);
              await lease.release();
            }),
        );
        await delay(200); // each queued before the next arrives
      }
      await held.release();
      await Promise.all(waits);
      assert.deepEqual(order, [0, 1, 2]);
    });

    it('mutex(name) and fairMutex(name) are one lock: a holder of either excludes the other', async () => {
      const prefix = freshPrefix();
      const [a, b] = await Promise.all([padlock(prefix), padlock(prefix)]);
      const fair = await a.fairMutex('shared-name').acquire();
      assert.equal(await b.mutex('shared-name').tryAcquire(), null);
      await fair.release();
      const plain = await b.mutex('shared-name').acquire();
      assert.equal(await a.fairMutex('shared-name').tryAcquire(), null);
      await plain.release();
    });

    it('readWrite: readers share, a writer waits for them, a reader behind a waiting writer waits; downgrade allowed, upgrade refused', async () => {
      const prefix = freshPrefix();
      const [a, b] = await Promise.all([padlock(prefix), padlock(prefix)]);
      const rwA = a.readWrite('doc');
      const rwB = b.readWrite('doc');
      const [r1, r2] = await Promise.all([rwA.read.acquire(), rwB.read.acquire()]);
      assert.equal(await rwB.write.tryAcquire(), null);
      let wrote = false;
      const writing = rwB.write.acquire({ waitMs: 20_000 }).then((lease) => {
        wrote = true;
        return lease;
      });
      await delay(200);
      assert.equal(await rwA.read.tryAcquire(), null, 'a new reader queues behind the waiting writer');
      assert.equal(wrote, false);
      await Promise.all([r1.release(), r2.release()]);
      const w = await writing;
      await w.release();
      await rwA.write.withLock(async () => {
        const down = await rwA.read.acquire();
        await down.release();
      });
      await rwA.read.withLock(async () => {
        await assert.rejects(rwA.write.acquire({ waitMs: 1_000 }), LockUpgradeError);
      });
    });

    it('semaphore: permits counted, FIFO, available(), setPermits raises the limit, a request over the limit refused', async () => {
      const prefix = freshPrefix();
      const [a, b] = await Promise.all([padlock(prefix), padlock(prefix)]);
      const semA = a.semaphore('pool', 3);
      const semB = b.semaphore('pool', 3);
      const two = await semA.acquire({ permits: 2 });
      assert.equal(await semB.available(), 1);
      const one = await semB.acquire();
      assert.equal(await semB.tryAcquire(), null);
      let admitted = false;
      const waiting = semB.acquire({ permits: 2, waitMs: 20_000 }).then((lease: Lease) => {
        admitted = true;
        return lease;
      });
      await delay(200);
      assert.equal(admitted, false, 'two permits do not fit in the one left');
      await semA.setPermits(5);
      const got = await waiting;
      assert.equal(await semA.limit(), 5);
      await assert.rejects(semA.acquire({ permits: 6 }), PermitLimitError);
      await Promise.all([two.release(), one.release()]);
      assert.equal(await semA.available(), 3, 'the raised limit less the 2 permits still held');
      await got.release();
      assert.equal(await semA.isLocked(), false);
    });

    it('multi: all names or none; overlapping sets asked in opposite orders never deadlock', async () => {
      const prefix = freshPrefix();
      const [a, b] = await Promise.all([padlock(prefix), padlock(prefix)]);
      const one = await a.mutex('m2').acquire();
      assert.equal(await b.multi(['m1', 'm2']).tryAcquire(), null);
      assert.equal(await b.mutex('m1').isLocked(), false, 'the name taken part-way was given back');
      await one.release();
      let rounds = 0;
      await Promise.all([
        ...Array.from({ length: 6 }, () => a.multi(['m1', 'm2', 'm3']).withLock(() => void rounds++, { waitMs: 20_000 })),
        ...Array.from({ length: 6 }, () => b.multi(['m3', 'm2', 'm1']).withLock(() => void rounds++, { waitMs: 20_000 })),
      ]);
      assert.equal(rounds, 12);
    });

    it('close() releases what is held (another takes it at once) and leaves nothing behind', async () => {
      const prefix = freshPrefix();
      const [a, b] = await Promise.all([padlock(prefix), padlock(prefix)]);
      const lease = await a.mutex('closing').acquire();
      await a.semaphore('closing-sem', 2).acquire();
      await a.readWrite('closing-rw').read.acquire();
      const waiting = b.mutex('closing').acquire({ waitMs: 10_000 });
      await a.close();
      assert.ok(lease.signal.aborted, 'the holder was told');
      await (await waiting).release();
      await b.close();
      assert.deepEqual(await store.leftovers(prefix), []);
    });

    for (const kind of target.refuses ?? []) {
      it(`refuses ${kind} at creation, naming it`, async () => {
        const p = await padlock(freshPrefix());
        assert.throws(() => (kind === 'multi' ? p.multi(['x']) : kind === 'semaphore' ? p.semaphore('x', 1) : p[kind]('x')), new RegExp(kind));
      });
    }
  });
}
