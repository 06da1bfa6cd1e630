/**
 * A wait that ends (abort, time-out, close) must leave no entry in the lock's queue, however its
 * calls and the ending interleave: a ghost entry would be woken or, on a fair lock, handed the lock,
 * and block everyone behind it until its heartbeat allowance ran out.
 */
import { after, describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import type { Redis } from 'ioredis';
import type { RedisServer } from '../src/devserver/redis-server.js';
import { lockKeys } from '../src/keys.js';
import { Padlock, type Lockable } from '../src/index.js';
import { connect, delay, eventually, startServer } from './harness/redis.js';

let server: RedisServer;
let admin: Redis;
before(async () => {
  server = await startServer();
  admin = connect(server);
});

const KINDS = ['mutex', 'fairMutex'] as const;
type Kind = (typeof KINDS)[number];

const made: Padlock[] = [];
after(() => Promise.all(made.map((p) => p.close())));

/** A Padlock with a client of its own, returned with it (a PING on that client runs after every call padlock sent on it). */
function side(): { padlock: Padlock; client: Redis } {
  const client = connect(server);
  const padlock = new Padlock({ redis: client });
  made.push(padlock);
  return { padlock, client };
}

function lockOf(padlock: Padlock, kind: Kind, name: string): Lockable {
  return kind === 'mutex' ? padlock.mutex(name) : padlock.fairMutex(name);
}

async function queueOf(name: string): Promise<{ queue: string[]; waiters: string[] }> {
  const keys = lockKeys('padlock', name);
  return { queue: await admin.lrange(keys.queue, 0, -1), waiters: await admin.hkeys(keys.waiters) };
}

for (const kind of KINDS) {
  describe(`no ghost in the queue (${kind})`, () => {
    it('a wait aborted while the call that queues it is held up by Redis leaves the queue', async () => {
      const name = `ghost:paused:${kind}`;
      const holderSide = side();
      const waiterSide = side();
      const holder = await lockOf(holderSide.padlock, kind, name).acquire();
      // A first waiter keeps this client subscribed, so the next waiter's first call is the one that queues.
      const first = lockOf(waiterSide.padlock, kind, name).acquire();
      assert.ok(await eventually(async () => (await queueOf(name)).queue.length === 1));
      const [firstOwner] = (await queueOf(name)).queue;

      await admin.call('CLIENT', 'PAUSE', '400', 'WRITE'); // holds every script call for 400 ms
      const controller = new AbortController();
      const second = lockOf(waiterSide.padlock, kind, name).acquire({ signal: controller.signal });
      await delay(50);
      const reason = new Error('the caller gave up');
      controller.abort(reason);
      await assert.rejects(second, (error) => error === reason);
      await waiterSide.client.ping(); // runs after the held call and the leave that follows it
      assert.deepEqual(await queueOf(name), { queue: [firstOwner], waiters: [firstOwner] }, 'only the live waiter is queued');

      await holder.release();
      await (await first).release();
      const newcomer = await lockOf(side().padlock, kind, name).tryAcquire();
      assert.ok(newcomer !== null, 'a newcomer gets the free lock at once');
      await newcomer.release();
      await Promise.all([holderSide.padlock.close(), waiterSide.padlock.close()]);
    });

    it('tryAcquire() beside a waiter of the same Padlock makes one attempt and never queues', async () => {
      const name = `ghost:try:${kind}`;
      const holderSide = side();
      const waiterSide = side();
      const holder = await lockOf(holderSide.padlock, kind, name).acquire();
      const waiting = lockOf(waiterSide.padlock, kind, name).acquire();
      assert.ok(await eventually(async () => (await queueOf(name)).queue.length === 1));
      const before = await queueOf(name);
      assert.equal(await lockOf(waiterSide.padlock, kind, name).tryAcquire(), null);
      await waiterSide.client.ping();
      assert.deepEqual(await queueOf(name), before, 'the queue is as it was');

      await holder.release();
      await (await waiting).release();
      const newcomer = await lockOf(side().padlock, kind, name).tryAcquire();
      assert.ok(newcomer !== null, 'a newcomer gets the free lock at once');
      await newcomer.release();
      await Promise.all([holderSide.padlock.close(), waiterSide.padlock.close()]);
    });

    it('a storm of waits aborted after 0–3 ms leaves the queue empty and the lock free', async () => {
      const name = `ghost:storm:${kind}`;
      const sides = [side(), side(), side()];
      const holder = await lockOf(sides[0]!.padlock, kind, name).acquire();
      for (let round = 0; round < 5; round++) {
        const waits = Array.from({ length: 40 }, (_, i) => {
          const controller = new AbortController();
          setTimeout(() => controller.abort(new Error('storm')), i % 4);
          return lockOf(sides[i % 3]!.padlock, kind, name).acquire({ signal: controller.signal });
        });
        const outcomes = await Promise.allSettled(waits);
        assert.ok(outcomes.every((o) => o.status === 'rejected'), 'the lock stayed held: every wait was aborted');
        await Promise.all(sides.map((s) => s.client.ping()));
        assert.deepEqual(await queueOf(name), { queue: [], waiters: [] }, `round ${round}: no entry left`);
      }
      await holder.release();
      const newcomer = await lockOf(side().padlock, kind, name).tryAcquire();
      assert.ok(newcomer !== null, 'a newcomer gets the free lock at once');
      await newcomer.release();
      await Promise.all(sides.map((s) => s.padlock.close()));
    });

    it('close() rejects a wait at once and takes its entry out of the queue', async () => {
      const name = `ghost:close:${kind}`;
      const holderSide = side();
      const waiterSide = side();
      const holder = await lockOf(holderSide.padlock, kind, name).acquire();
      const waiting = lockOf(waiterSide.padlock, kind, name).acquire();
      assert.ok(await eventually(async () => (await queueOf(name)).queue.length === 1));
      await admin.call('CLIENT', 'PAUSE', '300', 'WRITE'); // the leave is held up; reads are not
      await Promise.all([assert.rejects(waiting, { name: 'PadlockClosedError' }), waiterSide.padlock.close()]);
      assert.deepEqual(await queueOf(name), { queue: [], waiters: [] }, 'close() waited for the leave');
      await holder.release();
      await holderSide.padlock.close();
    });
  });
}
