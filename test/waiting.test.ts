import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import type { RedisServer } from '../src/devserver/redis-server.js';
import { lockKeys, waiterChannel } from '../src/keys.js';
import { acquireScript, leaveScript } from '../src/scripts/index.js';
import { commandCalls, connect, delay, eventually, padlockOn, startServer } from './harness/redis.js';

let server: RedisServer;
before(async () => {
  server = await startServer();
});

describe('waiting without polling (mutex)', () => {
  it('misses no wake-up when a release races the waiter\'s subscription', async () => {
    // A long lease: if the release were missed, the waiter would sleep until the fallback (60 s).
    for (let round = 0; round < 30; round++) {
      const a = padlockOn(server, { leaseMs: 60_000 });
      const b = padlockOn(server, { leaseMs: 60_000 });
      const holder = await a.mutex('wake:race').acquire();
      const waiting = b.mutex('wake:race').acquire({ waitMs: 5_000 });
      // Release at varying moments around the waiter's first attempt and subscription.
      await delay(round % 5);
      await holder.release();
      const lease = await waiting;
      await lease.release();
      await a.close();
      await b.close();
    }
  });

  it('misses no wake-up when the release lands between the failed attempt and the subscription', async () => {
    const a = padlockOn(server, { leaseMs: 60_000 });
    const b = padlockOn(server, { leaseMs: 60_000 });
    const holder = await a.mutex('wake:between').acquire();
    const subscriber = b.runtime.subscriber;
    const watch = subscriber.watch.bind(subscriber);
    let released: Promise<void> | undefined;
    // The waiter's first attempt has failed when it subscribes: release right then, before SUBSCRIBE.
    subscriber.watch = (channel) => {
      released ??= holder.release();
      return watch(channel);
    };
    const lease = await b.mutex('wake:between').acquire({ waitMs: 5_000 });
    assert.ok(released, 'the release happened inside the window');
    await released;
    await lease.release();
  });

  it('wakes one waiter per release, across clients as within one, not all of them', async () => {
    const admin = connect(server);
    const holderSide = padlockOn(server, { leaseMs: 60_000 });
    // Four clients (as four processes would be), two waiters each.
    const clients = Array.from({ length: 4 }, () => padlockOn(server, { leaseMs: 60_000 }));
    const holder = await holderSide.mutex('wake:one').acquire();
    const order: number[] = [];
    const tasks = Array.from({ length: 8 }, (_, i) =>
      clients[i % 4]!.mutex('wake:one').acquire({ waitMs: 20_000 }).then(async (lease) => {
        order.push(i);
        await delay(5);
        await lease.release();
      }),
    );
    await delay(100); // every waiter has tried, subscribed, tried again, and sleeps
    const before = await commandCalls(admin, 'evalsha');
    await holder.release();
    await Promise.all(tasks);
    const calls = (await commandCalls(admin, 'evalsha')) - before;
    assert.equal(order.length, 8);
    // 8 woken attempts + 8 releases; a herd would cost up to 8 attempts per release (~45 calls).
    assert.ok(calls <= 20, `${calls} script calls for 8 handoffs`);
  });

  it('a wake-up given to a waiter that gives up is passed on, and one given to a dead waiter costs a heartbeat at most', async () => {
    const admin = connect(server);
    const keys = lockKeys('padlock', 'wake:ghost');
    const all = [keys.lock, keys.fence, keys.queue, keys.waiters];
    const run = (script: { source: string }, args: (string | number)[]) => admin.eval(script.source, all.length, ...all, ...args);
    const holderSide = padlockOn(server, { leaseMs: 60_000 });
    const waiterSide = padlockOn(server, { leaseMs: 60_000 });
    // A queued waiter of a client that never reads its channel, ahead of a real one.
    const ghost = 'g'.repeat(32);
    let holder = await holderSide.mutex('wake:ghost').acquire();
    await run(acquireScript, [ghost, 60_000, 'req-ghost1', 'queue', 'ghostclient', 30_000, 'mutex']);
    let waiting = waiterSide.mutex('wake:ghost').acquire({ waitMs: 800 }); // less than a heartbeat
    assert.ok(await eventually(async () => (await admin.llen(keys.queue)) === 2));
    await holder.release(); // wakes the ghost, the first in the queue
    assert.equal(await admin.llen(keys.queue), 1);
    await run(leaveScript, [ghost, keys.released, 10_000]); // the ghost gives up: its wake goes on
    await (await waiting).release();

    // A dead waiter (it never gives up): the live one retries at its next heartbeat.
    holder = await holderSide.mutex('wake:ghost').acquire();
    await run(acquireScript, [ghost, 60_000, 'req-ghost2', 'queue', 'ghostclient', 30_000, 'mutex']);
    waiting = waiterSide.mutex('wake:ghost').acquire({ waitMs: 10_000 });
    assert.ok(await eventually(async () => (await admin.llen(keys.queue)) === 2));
    await holder.release();
    await (await waiting).release();
  });

  it('a waiter whose holder crashed proceeds after the lease, with no message', async () => {
    const holderSide = padlockOn(server);
    const admin = connect(server);
    const holder = await holderSide.mutex('wake:crash').acquire({ leaseMs: 300 });
    // Simulate a crash: the holder's process stops renewing and never releases (no publish).
    holderSide.runtime.watchdog.stop();
    const start = performance.now();
    const lease = await padlockOn(server).mutex('wake:crash').acquire({ waitMs: 10_000 });
    assert.ok(performance.now() - start < 10_000);
    assert.ok(lease.fence > holder.fence);
    assert.equal(await admin.hget(lockKeys('padlock', 'wake:crash').lock, lease.owner), '1');
    await lease.release();
  });

  it('drops the channel subscription when the last local waiter leaves', async () => {
    const a = padlockOn(server);
    const b = padlockOn(server);
    const admin = connect(server);
    const channel = waiterChannel(lockKeys('padlock', 'wake:unsub'), b.runtime.clientId);
    const holder = await a.mutex('wake:unsub').acquire();
    const w1 = b.mutex('wake:unsub').acquire({ waitMs: 100 }).catch((e: unknown) => e);
    const w2 = b.mutex('wake:unsub').acquire({ waitMs: 5_000 });
    await delay(50);
    assert.equal(b.runtime.subscriber.channelCount, 1, 'one subscription shared by two waiters');
    assert.deepEqual(await admin.pubsub('NUMSUB', channel), [channel, 1]);
    await w1;
    assert.equal(b.runtime.subscriber.activeChannelCount, 1);
    await holder.release();
    await (await w2).release();
    assert.equal(b.runtime.subscriber.activeChannelCount, 0);
    assert.ok(await eventually(() => b.runtime.subscriber.channelCount === 0, 5_000), 'unsubscribed after lingering');
    assert.deepEqual(await admin.pubsub('NUMSUB', channel), [channel, 0]);
  });
});
