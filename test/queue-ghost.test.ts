/**
 * A wait that ends (abort, time-out, close) must leave no entry in the lock's queue, however its
 * calls and the ending interleave: a ghost entry would be woken or, on a fair lock, handed the lock,
 * and block everyone behind it until its heartbeat allowance ran out. Once per topology and lock
 * kind (./harness/suite.ts); Redis holds padlock's calls up by `CLIENT PAUSE … WRITE` on the master
 * that serves the lock.
 */
import { inspect, isDeepStrictEqual } from 'node:util';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { lockKeys } from '../src/keys.js';
import type { Lockable, Padlock } from '../src/index.js';
import { acquireScript, leaveScript } from '../src/stores/redis/scripts/index.js';
import { delay, eventually } from './harness/redis.js';
import { probeScripts } from './harness/probes.js';
import { TOPOLOGIES, eachKind, useTopology, type Kind, type PadlockRedis } from './harness/suite.js';
import { queuedOwners } from './harness/lock-state.js';

function lockOf(padlock: Padlock, kind: Kind, name: string): Lockable {
  return padlock[kind](name);
}

for (const factory of TOPOLOGIES) {
  describe(factory.name, () => {
    const topology = useTopology(factory);
    /**
     * The owners queued for lock `name`, read on clients of no Padlock (reads are not paused): as
     * a majority of copies holds them, or (`every`, once nothing is in flight) as every copy must.
     */
    async function queueOf(name: string, every = false): Promise<{ queue: string[] }> {
      const keys = lockKeys('padlock', name);
      const read = every ? topology.readEvery.bind(topology) : topology.read.bind(topology);
      return read(async (reader) => ({ queue: await queuedOwners(reader, keys.queue) }));
    }
    /** Resolves once every call `side` sent for lock `name` before now has run. */
    function behind(side: { client: PadlockRedis }, name: string): Promise<void> {
      return topology.behind(side.client, lockKeys('padlock', name).lock);
    }

    eachKind(topology, (kind) => {
      describe(`no ghost in the queue (${kind})`, () => {
        it('a wait aborted while the call that queues it is held up by Redis leaves the queue', async () => {
          const name = `ghost:paused:${kind}`;
          // A warm script cache: a leave answered NOSCRIPT is re-sent after that answer, behind the
          // read `behind` counts on as a barrier (the cold cache has a test of its own, below).
          await topology.warmScripts();
          const holderSide = await topology.side();
          const waiterSide = await topology.side();
          const holder = await lockOf(holderSide.padlock, kind, name).acquire();
          // A first waiter keeps this client subscribed, so the next waiter's first call is the one that queues.
          const first = lockOf(waiterSide.padlock, kind, name).acquire();
          assert.ok(await eventually(async () => (await queueOf(name)).queue.length === 1));
          const [firstOwner] = (await queueOf(name)).queue;

          await topology.pauseWrites(lockKeys('padlock', name).lock, 400); // holds every script call for 400 ms
          const controller = new AbortController();
          const second = lockOf(waiterSide.padlock, kind, name).acquire({ signal: controller.signal });
          await delay(50);
          const reason = new Error('the caller gave up');
          controller.abort(reason);
          await assert.rejects(second, (error) => error === reason);
          await behind(waiterSide, name); // runs after the held call and the leave that follows it
          // On Redlock a master slower than its 1 s time-out (a loaded machine) may have had its grant
          // to the holder given back, so the leave woke the live waiter there: it queues again at once.
          const settled = async (): Promise<boolean> => isDeepStrictEqual(await queueOf(name, true).catch(() => undefined), { queue: [firstOwner] });
          assert.ok(await eventually(settled, 3_000), `only the live waiter is queued: ${inspect(await queueOf(name).catch((e: unknown) => e))}`);

          await holder.release();
          await (await first).release();
          const newcomer = await lockOf((await topology.side()).padlock, kind, name).tryAcquire();
          assert.ok(newcomer !== null, 'a newcomer gets the free lock at once');
          await newcomer.release();
          await Promise.all([holderSide.padlock.close(), waiterSide.padlock.close()]);
        });

        it('tryAcquire() beside a waiter of the same Padlock makes one attempt and never queues', async () => {
          const name = `ghost:try:${kind}`;
          const holderSide = await topology.side();
          const waiterSide = await topology.side();
          const holder = await lockOf(holderSide.padlock, kind, name).acquire();
          const waiting = lockOf(waiterSide.padlock, kind, name).acquire();
          assert.ok(await eventually(async () => (await queueOf(name)).queue.length === 1));
          const before = await queueOf(name);
          assert.equal(await lockOf(waiterSide.padlock, kind, name).tryAcquire(), null);
          await behind(waiterSide, name);
          assert.deepEqual(await queueOf(name, true), before, 'the queue is as it was');

          await holder.release();
          await (await waiting).release();
          const newcomer = await lockOf((await topology.side()).padlock, kind, name).tryAcquire();
          assert.ok(newcomer !== null, 'a newcomer gets the free lock at once');
          await newcomer.release();
          await Promise.all([holderSide.padlock.close(), waiterSide.padlock.close()]);
        });

        it('a storm of waits aborted after 0–3 ms leaves the queue empty and the lock free', async () => {
          const name = `ghost:storm:${kind}`;
          // A warm script cache, as on a server that has served padlock a while (each Cluster master
          // has its own): a call answered NOSCRIPT is re-sent after the answer, behind the read that
          // `behind` counts on as a barrier. The cold cache has a test of its own, the next one.
          await topology.warmScripts();
          const sides = [await topology.side(), await topology.side(), await topology.side()];
          const holder = await lockOf(sides[0]!.padlock, kind, name).acquire();
          for (let round = 0; round < 5; round++) {
            const waits = Array.from({ length: 40 }, (_, i) => {
              const controller = new AbortController();
              setTimeout(() => controller.abort(new Error('storm')), i % 4);
              return lockOf(sides[i % 3]!.padlock, kind, name).acquire({ signal: controller.signal });
            });
            const outcomes = await Promise.allSettled(waits);
            assert.ok(outcomes.every((o) => o.status === 'rejected'), 'the lock stayed held: every wait was aborted');
            await Promise.all(sides.map((s) => behind(s, name)));
            assert.deepEqual(await queueOf(name, true), { queue: [] }, `round ${round}: no entry left`);
          }
          await holder.release();
          const newcomer = await lockOf((await topology.side()).padlock, kind, name).tryAcquire();
          assert.ok(newcomer !== null, 'a newcomer gets the free lock at once');
          await newcomer.release();
          await Promise.all(sides.map((s) => s.padlock.close()));
        });

        it('a wait aborted as its queue call is sent leaves no ghost when the server has not cached that script yet', async () => {
          const name = `ghost:noscript:${kind}`;
          const holderSide = await topology.side();
          const waiterSide = await topology.side();
          const holder = await lockOf(holderSide.padlock, kind, name).acquire();
          // The lock's master knows the attempt and the leave, not yet the queue call: a cold cache
          // part-filled, which a storm of waits on a fresh master (or one just promoted) reaches by itself.
          await topology.coldScripts(lockKeys('padlock', name).lock, [acquireScript, leaveScript]);
          const controller = new AbortController();
          let sent = 0;
          let answered = 0;
          const counts = probeScripts(waiterSide.padlock, {
            sent: ({ script }) => {
              sent++;
              if (script === 'enqueue.lua') controller.abort(new Error('the caller gave up'));
            },
            answered: () => answered++,
          });
          await assert.rejects(lockOf(waiterSide.padlock, kind, name).acquire({ signal: controller.signal }), { message: 'the caller gave up' });
          // Every call the wait sent has its answer, the queue call's after its EVAL re-send.
          assert.ok(await eventually(() => answered === sent), `${answered} of ${sent} calls answered`);
          assert.ok(counts.has('enqueue.lua') && counts.has('leave.lua'), 'the wait queued, then left');
          assert.deepEqual(await queueOf(name, true), { queue: [] }, 'no entry left');
          await holder.release();
          await Promise.all([holderSide.padlock.close(), waiterSide.padlock.close()]);
        });

        it('close() rejects a wait at once and takes its entry out of the queue', async () => {
          const name = `ghost:close:${kind}`;
          const holderSide = await topology.side();
          const waiterSide = await topology.side();
          const holder = await lockOf(holderSide.padlock, kind, name).acquire();
          const waiting = lockOf(waiterSide.padlock, kind, name).acquire();
          assert.ok(await eventually(async () => (await queueOf(name)).queue.length === 1));
          await topology.pauseWrites(lockKeys('padlock', name).lock, 300); // the leave is held up; reads are not
          await Promise.all([assert.rejects(waiting, { name: 'PadlockClosedError' }), waiterSide.padlock.close()]);
          assert.deepEqual(await queueOf(name, true), { queue: [] }, 'close() waited for the leave');
          await holder.release();
          await holderSide.padlock.close();
        });
      });
    });
  });
}
