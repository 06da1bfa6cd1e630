import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import type { RedisServer } from '../src/devserver/redis-server.js';
import { lockKeys } from '../src/keys.js';
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

  it('wakes one local waiter per release, not all of them', async () => {
    const admin = connect(server);
    const holderSide = padlockOn(server, { leaseMs: 60_000 });
    const waiters = padlockOn(server, { leaseMs: 60_000 });
    const holder = await holderSide.mutex('wake:one').acquire();
    const order: number[] = [];
    const tasks = Array.from({ length: 8 }, (_, i) =>
      waiters.mutex('wake:one').acquire({ waitMs: 20_000 }).then(async (lease) => {
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
    // 8 acquisitions + 8 releases; a herd would cost ~8 attempts per release (~70 calls).
    assert.ok(calls <= 24, `${calls} script calls for 8 handoffs`);
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
    const holder = await a.mutex('wake:unsub').acquire();
    const w1 = b.mutex('wake:unsub').acquire({ waitMs: 100 }).catch((e: unknown) => e);
    const w2 = b.mutex('wake:unsub').acquire({ waitMs: 5_000 });
    await delay(50);
    assert.equal(b.runtime.subscriber.channelCount, 1, 'one subscription shared by two waiters');
    assert.deepEqual(await admin.pubsub('NUMSUB', lockKeys('padlock', 'wake:unsub').released), [lockKeys('padlock', 'wake:unsub').released, 1]);
    await w1;
    assert.equal(b.runtime.subscriber.activeChannelCount, 1);
    await holder.release();
    await (await w2).release();
    assert.equal(b.runtime.subscriber.activeChannelCount, 0);
    assert.ok(await eventually(() => b.runtime.subscriber.channelCount === 0, 5_000), 'unsubscribed after lingering');
    assert.deepEqual(await admin.pubsub('NUMSUB', lockKeys('padlock', 'wake:unsub').released), [lockKeys('padlock', 'wake:unsub').released, 0]);
  });
});
