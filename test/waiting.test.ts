import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import type { RedisServer } from '../src/devserver/redis-server.js';
import { lockKeys, waiterChannel } from '../src/keys.js';
import { MutexProtocol } from '../src/stores/redis/kinds/mutex-protocol.js';
import { probeScripts, probeWakes, type WakeProbe } from './harness/probes.js';
import { commandCalls, connect, delay, eventually, padlockOn, runCall, startServer } from './harness/redis.js';
import { holdsOf, queuedOwners } from './harness/lock-state.js';
import { internals, redisInternals } from '../src/testing.js';

let server: RedisServer;
before(async () => {
  server = await startServer();
});

/** Where, in a waiter's progress, a race round releases the lock. */
type Moment =
  | { readonly at: 'delay'; readonly ms: number }
  | { readonly at: 'sent' | 'answered'; readonly call: number };

const MOMENTS: readonly Moment[] = [
  ...[0, 1, 2, 3, 4].map((ms): Moment => ({ at: 'delay', ms })),
  // Around its first attempt, and around the one that queues it (the waiter asleep after it).
  ...[1, 2].flatMap((call): Moment[] => [{ at: 'sent', call }, { at: 'answered', call }]),
];

function describeMoment(moment: Moment): string {
  return moment.at === 'delay' ? `${moment.ms} ms after the waiter started` : `as its script call ${moment.call} was ${moment.at}`;
}

describe('waiting without polling (mutex)', () => {
  // These waiters sleep until a message comes (probeWakes messagesOnly): no heartbeat or lease
  // timer makes good a missed wake-up, which would leave the waiter asleep until its waitMs ran out.
  it('misses no wake-up when a release races the waiter\'s attempts and subscription', async () => {
    for (let round = 0; round < 3 * MOMENTS.length; round++) {
      const moment = MOMENTS[round % MOMENTS.length]!;
      const a = padlockOn(server, { leaseMs: 60_000 });
      const b = padlockOn(server, { leaseMs: 60_000 });
      const holder = await a.mutex('wake:race').acquire();
      let released: Promise<void> | undefined;
      const release = (): void => {
        released ??= holder.release();
      };
      // A waiter that goes to sleep before the moment comes is released there.
      probeWakes(b, { messagesOnly: true, onSleep: release });
      const at = (when: 'sent' | 'answered', call: number): void => {
        if (moment.at === when && moment.call === call) release();
      };
      probeScripts(b, { sent: ({ call }) => at('sent', call), answered: ({ call }) => at('answered', call) });
      const waiting = b.mutex('wake:race').acquire({ waitMs: 10_000 });
      if (moment.at === 'delay') {
        await delay(moment.ms);
        release();
      }
      const lease = await waiting.catch((error: unknown) =>
        assert.fail(`released ${describeMoment(moment)}, the waiter was never woken: ${String(error)}`),
      );
      await released;
      assert.ok(lease.fence > holder.fence);
      await lease.release();
      await a.close();
      await b.close();
    }
  });

  it('misses no wake-up when the release lands between the failed attempt and the subscription', async () => {
    const a = padlockOn(server, { leaseMs: 60_000 });
    const b = padlockOn(server, { leaseMs: 60_000 });
    const holder = await a.mutex('wake:between').acquire();
    probeWakes(b, { messagesOnly: true });
    const subscriber = redisInternals(b).subscriber;
    const watch = subscriber.watch.bind(subscriber);
    let released: Promise<void> | undefined;
    // The waiter's first attempt has failed when it subscribes: release right then, before SUBSCRIBE.
    subscriber.watch = (channel) => {
      released ??= holder.release();
      return watch(channel);
    };
    // A waiter that sleeps without trying again once subscribed never hears of this release.
    const lease = await b
      .mutex('wake:between')
      .acquire({ waitMs: 10_000 })
      .catch((error: unknown) => assert.fail(`the waiter missed the release: ${String(error)}`));
    assert.ok(released, 'the release happened inside the window');
    await released;
    await lease.release();
  });

  it('wakes one waiter per release, across clients as within one, not all of them', async () => {
    const admin = connect(server);
    const holderSide = padlockOn(server, { leaseMs: 60_000 });
    // Four clients (as four processes would be), two waiters each.
    const clients = Array.from({ length: 4 }, () => padlockOn(server, { leaseMs: 60_000 }));
    const probes = clients.map((client) => probeWakes(client));
    const heartbeats = (): number => probes.reduce((sum, probe) => sum + probe.fallbacks, 0);
    const holder = await holderSide.mutex('wake:one').acquire();
    const order: number[] = [];
    const tasks = Array.from({ length: 8 }, (_, i) =>
      clients[i % 4]!.mutex('wake:one').acquire({ waitMs: 20_000 }).then(async (lease) => {
        order.push(i);
        await delay(5);
        await lease.release();
      }),
    );
    assert.ok(await eventually(async () => (await admin.llen(lockKeys('padlock', 'wake:one').queue)) === 8), 'every waiter queued');
    const heartbeatsBefore = heartbeats();
    const before = await commandCalls(admin, 'evalsha');
    await holder.release();
    await Promise.all(tasks);
    const calls = (await commandCalls(admin, 'evalsha')) - before;
    // A heartbeat (one call each) may fall in the run on a slow machine: it is not a wake-up...
    const woken = calls - (heartbeats() - heartbeatsBefore);
    assert.equal(order.length, 8);
    // ...if it is one: a waiter sleeps a full heartbeat (1 s with a 60 s lease) at a time, it does not poll.
    const sleeps = probes.flatMap((probe) => probe.sleeps);
    assert.ok(sleeps.every((ms) => ms >= 1_000), `slept ${sleeps.join(', ')} ms at a time`);
    // 8 woken attempts + 8 releases; a herd would cost up to 8 attempts per release (~45 calls).
    assert.ok(woken <= 20, `${calls} script calls (${calls - woken} after a heartbeat) for 8 handoffs`);
  });

  it('a wake-up given to a waiter that gives up is passed on', async () => {
    const admin = connect(server);
    const keys = lockKeys('padlock', 'wake:ghost');
    const ghostProtocol = new MutexProtocol(keys, 'mutex', 'ghostclient');
    const holderSide = padlockOn(server, { leaseMs: 60_000 });
    const waiterSide = padlockOn(server, { leaseMs: 60_000 });
    // A queued waiter of a client that never reads its channel, ahead of a real one.
    const ghost = 'g'.repeat(32);
    const holder = await holderSide.mutex('wake:ghost').acquire();
    await runCall(admin, ghostProtocol.attempt(ghost, 60_000, 'queue', 10_000)); // allowance 30 s
    // Only a message moves the real waiter: without the ghost's wake passed on, it waits out its waitMs.
    probeWakes(waiterSide, { messagesOnly: true });
    const waiting = waiterSide.mutex('wake:ghost').acquire({ waitMs: 10_000 });
    assert.ok(await eventually(async () => (await admin.llen(keys.queue)) === 2));
    await holder.release(); // wakes the ghost, the first in the queue
    assert.ok(!(await queuedOwners(admin, keys.queue)).includes(ghost), 'the ghost was woken');
    assert.equal(await admin.llen(keys.queue), 1);
    await runCall(admin, ghostProtocol.leave(ghost)); // the ghost gives up: its wake goes on
    const lease = await waiting.catch((error: unknown) => assert.fail(`the ghost's wake-up was not passed on: ${String(error)}`));
    await lease.release();
  });

  it('a wake-up given to a dead waiter costs the live one behind it a heartbeat, no more', async () => {
    const admin = connect(server);
    const keys = lockKeys('padlock', 'wake:dead');
    const holderSide = padlockOn(server, { leaseMs: 60_000 });
    const waiterSide = padlockOn(server, { leaseMs: 60_000 });
    const probe: WakeProbe = probeWakes(waiterSide);
    // A queued waiter whose client died: it never reads its channel, nor gives up (30 s allowance).
    const dead = 'd'.repeat(32);
    const holder = await holderSide.mutex('wake:dead').acquire();
    await runCall(admin, new MutexProtocol(keys, 'mutex', 'deadclient').attempt(dead, 60_000, 'queue', 10_000)); // allowance 30 s
    const waiting = waiterSide.mutex('wake:dead').acquire({ waitMs: 10_000 });
    assert.ok(await eventually(async () => (await admin.llen(keys.queue)) === 2));
    const messages = probe.messages;
    const before = await commandCalls(admin, 'evalsha');
    await holder.release(); // wakes the dead waiter, the first in the queue; the lock stays free
    assert.ok(!(await queuedOwners(admin, keys.queue)).includes(dead), 'the release woke the dead waiter, not the live one');
    assert.equal(await admin.llen(keys.queue), 1, 'the live waiter is still queued');
    const lease = await waiting;
    assert.equal(probe.messages, messages, 'the live waiter was sent nothing');
    // The release, then the live waiter's next heartbeat finds the lock free (plus one already in flight).
    const calls = (await commandCalls(admin, 'evalsha')) - before;
    assert.ok(calls <= 3, `${calls} script calls from the release to the live waiter's lease`);
    await lease.release();
  });

  it('a waiter whose holder crashed proceeds after the lease, with no message', async () => {
    const admin = connect(server);
    const leaseMs = 300;
    const holderSide = padlockOn(server);
    const waiterSide = padlockOn(server); // a 1 s heartbeat: the holder's lease runs out first
    const probe = probeWakes(waiterSide);
    const sentAt = performance.now();
    const holder = await holderSide.mutex('wake:crash').acquire({ leaseMs });
    // Simulate a crash: the holder's process stops renewing and never releases (no publish).
    internals(holderSide).watchdog.stop();
    const publishes = await commandCalls(admin, 'publish');
    const calls = await commandCalls(admin, 'evalsha');
    const lease = await waiterSide.mutex('wake:crash').acquire({ waitMs: 10_000 });
    const waitedSinceHolderAsked = performance.now() - sentAt;
    assert.ok(lease.fence > holder.fence);
    assert.equal(await holdsOf(admin, lockKeys('padlock', 'wake:crash').lock, lease.owner), 1);
    // Redis expires the hold at least leaseMs after it was asked for (ms rounding aside).
    assert.ok(waitedSinceHolderAsked >= leaseMs - 2, `granted ${waitedSinceHolderAsked.toFixed(0)} ms after the holder asked for ${leaseMs} ms`);
    assert.equal((await commandCalls(admin, 'publish')) - publishes, 0, 'nothing was published: no release, no wake-up');
    assert.equal(probe.messages, 0);
    // It slept until the holder's lease would end (bounded by the pttl Redis gave, not a heartbeat)...
    assert.ok(probe.sleeps.length > 0 && probe.sleeps.every((ms) => ms <= leaseMs + 1), `slept ${probe.sleeps.join(', ')} ms`);
    // ...and so tried a handful of times, not polling: try, queue, the retry at the lease's end.
    const attempts = (await commandCalls(admin, 'evalsha')) - calls;
    assert.ok(attempts <= 6, `${attempts} attempts`);
    await lease.release();
  });

  it("a waiter queued behind another is not told the holder's lease (no PTTL run for it), and still proceeds after a crash", async () => {
    const admin = connect(server);
    const keys = lockKeys('padlock', 'wake:behind');
    const protocol = new MutexProtocol(keys, 'fair', 'behindclient');
    const [holder, first, second] = ['h', '1', '2'].map((c) => c.repeat(32)) as [string, string, string];
    await runCall(admin, protocol.attempt(holder, 30_000, 'try', 1_000));
    const pttls = await commandCalls(admin, 'pttl');
    const head = await runCall(admin, protocol.attempt(first, 30_000, 'queue', 1_000));
    const behind = await runCall(admin, protocol.attempt(second, 30_000, 'queue', 1_000));
    assert.ok(head.status === 'busy' && head.pttl > 29_000, `the head is told the holder's lease: ${JSON.stringify(head)}`);
    assert.deepEqual(behind.status === 'busy' ? behind.pttl : 'acquired', 0, 'the waiter behind it is not');
    // The head's join made the queue and asked the lock's PTTL; the second's asked nothing (a join
    // into a list that exists leaves its expiry to the heartbeats).
    assert.equal((await commandCalls(admin, 'pttl')) - pttls, 1);
    await admin.del(keys.lock, keys.queue);

    // Behind another waiter whose holder crashed, a fair waiter proceeds once the head has had it.
    const leaseMs = 300;
    const holderSide = padlockOn(server);
    const waiters = [padlockOn(server), padlockOn(server)];
    const crashed = await holderSide.fairMutex('wake:behind').acquire({ leaseMs });
    internals(holderSide).watchdog.stop(); // a crash: no renewal, no release
    const sentAt = performance.now();
    const order: number[] = [];
    await Promise.all(
      waiters.map(async (side, i) => {
        await delay(i * 20); // the first queues first
        const lease = await side.fairMutex('wake:behind').acquire({ leaseMs, waitMs: 10_000 });
        order.push(i);
        assert.ok(lease.fence > crashed.fence);
        await lease.release();
      }),
    );
    assert.deepEqual(order, [0, 1]);
    // The head took it when the crashed lease ran out; its release handed it on at once.
    assert.ok(performance.now() - sentAt < leaseMs + 2_000, `both served within a heartbeat of the lease's end (${(performance.now() - sentAt).toFixed(0)} ms)`);
  });

  it('drops the channel subscription when the last local waiter leaves', async () => {
    const a = padlockOn(server);
    const b = padlockOn(server);
    const admin = connect(server);
    const keys = lockKeys('padlock', 'wake:unsub');
    const channel = waiterChannel(keys, redisInternals(b).clientId);
    const holder = await a.mutex('wake:unsub').acquire();
    const giveUp = new AbortController();
    const w1 = b.mutex('wake:unsub').acquire({ signal: giveUp.signal }).catch((e: unknown) => e);
    const w2 = b.mutex('wake:unsub').acquire({ waitMs: 10_000 });
    assert.ok(await eventually(async () => (await admin.llen(keys.queue)) === 2), 'both waiters queued');
    assert.equal(redisInternals(b).subscriber.channelCount, 1, 'one subscription shared by two waiters');
    assert.deepEqual(await admin.pubsub('NUMSUB', channel), [channel, 1]);
    giveUp.abort(new Error('gave up'));
    await w1;
    assert.equal(redisInternals(b).subscriber.activeChannelCount, 1);
    await holder.release();
    await (await w2).release();
    assert.equal(redisInternals(b).subscriber.activeChannelCount, 0);
    // The subscription lingers 2 s; the bound only limits how long a failure takes.
    assert.ok(await eventually(() => redisInternals(b).subscriber.channelCount === 0, 20_000), 'unsubscribed after lingering');
    assert.deepEqual(await admin.pubsub('NUMSUB', channel), [channel, 0]);
  });
});
