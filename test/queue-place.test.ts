/**
 * The queue is one list with no index beside it: a waiter finds its entry by the text its last call
 * returned (its place), or by a search when it cannot know it, and a contended acquisition runs no
 * more commands in Redis than the list itself needs. Protocol calls are run directly, on a server no
 * Padlock talks to, so that `INFO commandstats` counts exactly what they ran.
 */
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import type { Redis } from 'ioredis';
import type { RedisServer } from '../src/devserver/redis-server.js';
import { lockKeys, waiterChannel } from '../src/keys.js';
import { MutexProtocol, type MutexKind } from '../src/stores/redis/kinds/mutex-protocol.js';
import { takenOut } from '../src/stores/redis/kinds/queued-lock.js';
import type { AcquireReply } from '../src/stores/redis/scripts/index.js';
import { connect, eventually, padlockOn, runCall, startServer } from './harness/redis.js';
import { queuedOwners } from './harness/lock-state.js';

let server: RedisServer;
let admin: Redis;
before(async () => {
  server = await startServer();
  admin = connect(server);
});

const LEASE_MS = 60_000;
const HEARTBEAT_MS = 10_000;

/** Every command the server has run, those inside scripts included (INFO itself left out). */
async function commandsRun(): Promise<number> {
  let sum = 0;
  for (const [, name, calls] of (await admin.info('commandstats')).matchAll(/cmdstat_([^:]+):calls=(\d+)/g)) if (name !== 'info') sum += Number(calls);
  return sum;
}

/** Runs `call` and counts the commands it ran in Redis. */
async function counted<R>(call: () => Promise<R>): Promise<{ value: R; commands: number }> {
  const before = await commandsRun();
  const value = await call();
  return { value, commands: (await commandsRun()) - before };
}

function owner(label: string): string {
  return `${label}-${'0'.repeat(24 - label.length)}`;
}

/** The place a busy reply gave its waiter. */
function placeOf(reply: AcquireReply): string {
  assert.equal(reply.status, 'busy');
  assert.ok(reply.status === 'busy' && reply.place !== undefined, 'a queued waiter is told its place');
  return reply.place;
}

describe('the queue: one list, found by place', () => {
  it('a heartbeat finds its entry by the place its last call returned, with no search, and keeps its turn', async () => {
    const keys = lockKeys('padlock', 'place:heartbeat');
    const protocol = new MutexProtocol(keys, 'fair', 'client1');
    const [holder, first, second] = [owner('holder'), owner('first'), owner('second')];
    assert.equal((await runCall(admin, protocol.attempt(holder, LEASE_MS, 'try', HEARTBEAT_MS))).status, 'acquired');
    const place = placeOf(await runCall(admin, protocol.attempt(first, LEASE_MS, 'queue', HEARTBEAT_MS)));
    placeOf(await runCall(admin, protocol.attempt(second, LEASE_MS, 'queue', HEARTBEAT_MS)));
    assert.equal((await admin.lindex(keys.queue, 0)) ?? '', place, 'the place is the entry as it stands in the queue');
    await new Promise((resolve) => setTimeout(resolve, 5)); // a later heartbeat: a later expiry
    const searches = await lrangeCalls();
    const renewed = placeOf(await runCall(admin, protocol.attempt(first, LEASE_MS, 'queue', HEARTBEAT_MS, 0, place)));
    assert.equal(await lrangeCalls(), searches, 'no search of the queue');
    assert.notEqual(renewed, place, 'the heartbeat wrote a new expiry');
    assert.deepEqual(await queuedOwners(admin, keys.queue), [first, second], 'its turn kept');
    assert.equal((await admin.lindex(keys.queue, 0)) ?? '', renewed);
    assert.deepEqual((await admin.keys('padlock:{place:heartbeat}:*')).sort(), [keys.lock, keys.queue].sort(), 'no key beside the list');
    await admin.del(keys.lock, keys.queue);
  });

  it("a waiter that does not know its place ('?') is found by a search; one whose entry is gone joins again", async () => {
    const keys = lockKeys('padlock', 'place:search');
    const protocol = new MutexProtocol(keys, 'mutex', 'client1');
    const [holder, first, second] = [owner('holder'), owner('first'), owner('second')];
    await runCall(admin, protocol.attempt(holder, LEASE_MS, 'try', HEARTBEAT_MS));
    const place = placeOf(await runCall(admin, protocol.attempt(first, LEASE_MS, 'queue', HEARTBEAT_MS)));
    placeOf(await runCall(admin, protocol.attempt(second, LEASE_MS, 'queue', HEARTBEAT_MS)));
    const searches = await lrangeCalls();
    const found = placeOf(await runCall(admin, protocol.attempt(first, LEASE_MS, 'queue', HEARTBEAT_MS, 0, '?')));
    assert.equal(await lrangeCalls(), searches + 1, 'searched');
    assert.deepEqual(await queuedOwners(admin, keys.queue), [first, second], 'found in place, not queued twice');
    await admin.lrem(keys.queue, 1, found); // taken out (woken, or dropped as dead) while its call was on its way
    placeOf(await runCall(admin, protocol.attempt(first, LEASE_MS, 'queue', HEARTBEAT_MS, 0, place)));
    assert.deepEqual(await queuedOwners(admin, keys.queue), [second, first], 'joined again, at the tail');
    // Leaving searches (a waiter that gives up may have a call in flight, whose entry it never saw),
    // and takes out every entry of the owner: here a second one, as a resent first join leaves.
    await admin.rpush(keys.queue, (await admin.lindex(keys.queue, -1)) ?? '');
    assert.deepEqual(await queuedOwners(admin, keys.queue), [second, first, first]);
    assert.equal(await runCall(admin, protocol.leave(first)), false);
    assert.deepEqual(await queuedOwners(admin, keys.queue), [second]);
    await admin.del(keys.lock, keys.queue);
  });

  it("a waiter with a ticket (Redlock) that does not know its place reads the ticket-ordered queue only as far as its entry; a woken head reads one entry", async () => {
    const keys = lockKeys('padlock', 'place:ordered');
    const protocol = new MutexProtocol(keys, 'mutex', 'client1');
    const holder = owner('holder');
    const waiters = ['w1', 'w2', 'w3', 'w4', 'w5', 'w6'].map(owner);
    const ticket = Date.now();
    // A proposed fence (any > 0) is what makes an attempt send its ticket: Redlock's masters order their queues by it.
    const attempt = (who: string, mode: 'queue' | 'requeue', place: string): Promise<AcquireReply> =>
      runCall(admin, protocol.attemptProposing(who, LEASE_MS, mode, HEARTBEAT_MS, ticket + waiters.indexOf(who), place, 1));
    assert.equal((await runCall(admin, protocol.attempt(holder, LEASE_MS, 'try', HEARTBEAT_MS))).status, 'acquired');
    for (const who of waiters) placeOf(await attempt(who, 'queue', ''));
    const ranges = await lranges();
    try {
      // A heartbeat of the second waiter: found in place, reading the head, then the next few entries.
      const before = (await admin.lindex(keys.queue, 1)) ?? '';
      const renewed = placeOf(await attempt(waiters[1] ?? '', 'queue', '?'));
      assert.deepEqual(await queuedOwners(admin, keys.queue), waiters, 'found in place, not queued twice');
      assert.equal((await admin.lindex(keys.queue, 1)) ?? '', renewed);
      assert.notEqual(renewed, before, 'its entry rewritten (a later expiry)');
      assert.ok(await eventually(() => ranges.length === 2), `reads: ${JSON.stringify(ranges)}`);
      assert.deepEqual(ranges.splice(0), [[0, 0], [1, 4]], 'read up to the entry after its own, not the whole queue');
      // The release wakes the head, whose entry it takes out; the woken head, not knowing it, reads one entry and takes the lock.
      assert.deepEqual(await runCall(admin, protocol.release(holder, 1)), { status: 'released', remaining: 0 });
      assert.equal((await attempt(waiters[0] ?? '', 'requeue', '?')).status, 'acquired');
      assert.ok(await eventually(() => ranges.length === 1), `reads: ${JSON.stringify(ranges)}`);
      assert.deepEqual(ranges.splice(0), [[0, 0]], 'one entry read');
      assert.deepEqual(await queuedOwners(admin, keys.queue), waiters.slice(1));
      // Queued twice (a resent first join): found twice, so the whole queue is searched, as without a ticket.
      const third = (await admin.lindex(keys.queue, 1)) ?? '';
      await admin.linsert(keys.queue, 'BEFORE', third, `${third.split('|').slice(0, -1).join('|')}|1`);
      placeOf(await attempt(waiters[2] ?? '', 'queue', '?'));
      assert.ok(await eventually(() => ranges.some(([, stop]) => stop === -1)), `reads: ${JSON.stringify(ranges)}`);
    } finally {
      ranges.stop();
    }
    await admin.del(keys.lock, keys.queue);
  });

  it("a release skips an entry of the owner who freed the lock (a heartbeat that crossed its wake-up) and wakes the next", async () => {
    const keys = lockKeys('padlock', 'place:self');
    const protocol = new MutexProtocol(keys, 'mutex', 'client1');
    const [holder, waiter] = [owner('holder'), owner('waiter')];
    await runCall(admin, protocol.attempt(holder, LEASE_MS, 'try', HEARTBEAT_MS));
    const [seconds] = await admin.time();
    const stale = `${holder}|client1|${LEASE_MS}|30000|mutex|${Number(seconds) * 1000}|${Number(seconds) * 1000 + 30_000}`;
    await admin.rpush(keys.queue, stale);
    placeOf(await runCall(admin, protocol.attempt(waiter, LEASE_MS, 'queue', HEARTBEAT_MS)));
    const messages = await listen(waiterChannel(keys, 'client1'));
    assert.deepEqual(await runCall(admin, protocol.release(holder, 1)), { status: 'released', remaining: 0 });
    assert.ok(await eventually(() => messages.length === 1));
    assert.match(messages[0] ?? '', new RegExp(`^${waiter} wake \\d+$`), 'the waiter behind was woken, not the holder');
    assert.equal(await admin.exists(keys.queue), 0, 'both entries left the queue');
    await admin.del(keys.lock);
  });

  for (const [kind, most] of [['fair', 10], ['mutex', 13]] as [MutexKind, number][]) {
    it(`a contended ${kind} acquisition runs at most ${most} commands in Redis, scripts' own included`, async () => {
      const keys = lockKeys('padlock', `place:count:${kind}`);
      const protocol = new MutexProtocol(keys, kind, 'client1');
      const [holder, ahead, waiter] = [owner('holder'), owner('ahead'), owner('waiter')];
      await runCall(admin, protocol.attempt(holder, LEASE_MS, 'try', HEARTBEAT_MS));
      const aheadPlace = placeOf(await runCall(admin, protocol.attempt(ahead, LEASE_MS, 'queue', HEARTBEAT_MS)));
      const messages = await listen(waiterChannel(keys, 'client1'));
      // The steady state of a busy lock: a waiter joins behind others; a release gives the head its turn.
      const join = await counted(() => runCall(admin, protocol.attempt(waiter, LEASE_MS, 'queue', HEARTBEAT_MS)));
      placeOf(join.value);
      const release = await counted(() => runCall(admin, protocol.release(holder, 1)));
      assert.ok(await eventually(() => messages.length === 1));
      let total = join.commands + release.commands;
      if (kind === 'mutex') {
        // Woken, the head takes the free lock; the wake-up says its entry is out of the queue already.
        const message = messages[0] ?? '';
        assert.ok(takenOut(message, aheadPlace), `the wake-up names the entry it took out: ${message}`);
        const take = await counted(() => runCall(admin, protocol.attempt(ahead, LEASE_MS, 'requeue', HEARTBEAT_MS, 0, '')));
        assert.equal(take.value.status, 'acquired');
        total += take.commands;
      } else {
        assert.match(messages[0] ?? '', new RegExp(`^${ahead} \\d+ \\d+ \\d+$`), 'handed the lock');
        assert.ok(takenOut(messages[0] ?? '', aheadPlace), 'the handoff names the entry it took out');
      }
      assert.ok(total <= most, `${total} commands (join ${join.commands}, release ${release.commands})`);
      assert.deepEqual(await queuedOwners(admin, keys.queue), [waiter]);
      await admin.del(keys.lock, keys.queue);
    });
  }

  it("the list's expiry: set by the join that makes it, lengthened by heartbeats, left alone by later joins, never shortened", async () => {
    const keys = lockKeys('padlock', 'place:expiry');
    const protocol = new MutexProtocol(keys, 'fair', 'client1');
    const [holder, short, long] = [owner('holder'), owner('short'), owner('long')];
    await runCall(admin, protocol.attempt(holder, LEASE_MS, 'try', 1_000));
    const shortPlace = placeOf(await runCall(admin, protocol.attempt(short, LEASE_MS, 'queue', 1_000))); // allowance 3 s
    const made = await admin.pttl(keys.queue);
    assert.ok(made > 8_000 && made <= 9_000, `3 allowances of the waiter that made it: ${made}`);
    const longPlace = placeOf(await runCall(admin, protocol.attempt(long, LEASE_MS, 'queue', 10_000))); // allowance 30 s
    assert.ok((await admin.pttl(keys.queue)) <= 9_000, 'a later join left it alone');
    placeOf(await runCall(admin, protocol.attempt(long, LEASE_MS, 'queue', 10_000, 0, longPlace)));
    assert.ok((await admin.pttl(keys.queue)) > 80_000, "the long waiter's heartbeat lengthened it to 3 of its allowances");
    placeOf(await runCall(admin, protocol.attempt(short, LEASE_MS, 'queue', 1_000, 0, shortPlace)));
    assert.ok((await admin.pttl(keys.queue)) > 80_000, "the short waiter's heartbeat did not shorten it");
    await admin.del(keys.lock, keys.queue);
  });

  it('takenOut: only a message naming the expiry of the latest entry says the entry is out', () => {
    const place = 'o|c|1000|3000|mutex|1700000000000|1700000003000';
    assert.equal(takenOut('o wake 1700000003000', place), true);
    assert.equal(takenOut('o 7 1000 1700000003000', place), true, 'a handoff names it after the fence and lease');
    assert.equal(takenOut('o wake 1700000002000', place), false, 'an older entry was taken out: a later one may be queued');
    assert.equal(takenOut('o 7 1000 1700000002000', place), false);
    assert.equal(takenOut('o wake', place), false, 'a message that names no entry');
    assert.equal(takenOut('o 7 1000', place), false);
    assert.equal(takenOut('o wake 1700000003000', '?'), false, 'a place not known');
    assert.equal(takenOut('o wake 1700000003000', ''), false, 'no place');
  });

  for (const kind of ['fairMutex', 'mutex'] as const) {
    it(`a ${kind} waiter queued twice (its first join resent after a reconnect) is served once and leaves no entry behind`, async () => {
      const name = `place:twice:${kind}`;
      const keys = lockKeys('padlock', name);
      const holder = await padlockOn(server, { leaseMs: LEASE_MS }).mutex(name).acquire();
      const waiterSide = padlockOn(server, { leaseMs: LEASE_MS });
      const waiting = waiterSide[kind](name).acquire({ waitMs: 20_000 });
      assert.ok(await eventually(async () => (await admin.llen(keys.queue)) === 1));
      // What the first run of a resent join left: the same entry, an earlier expiry, ahead of the one the waiter knows.
      const latest = (await admin.lindex(keys.queue, 0)) ?? '';
      const expiry = Number(latest.split('|').at(-1));
      await admin.lpush(keys.queue, `${latest.split('|').slice(0, -1).join('|')}|${expiry - 1}`);
      await holder.release(); // gives the turn to the older entry
      const lease = await waiting;
      assert.ok(await eventually(async () => (await admin.llen(keys.queue)) === 0), 'the latest entry was taken out too');
      await lease.release();
      assert.equal(await admin.exists(keys.queue), 0);
    });
  }
});

/** LRANGE calls so far (the search of a queue). */
async function lrangeCalls(): Promise<number> {
  return Number(/cmdstat_lrange:calls=(\d+)/.exec(await admin.info('commandstats'))?.[1] ?? 0);
}

/** The [start, stop] of every LRANGE scripts run from now on (as MONITOR shows them), until `stop()`. */
async function lranges(): Promise<[number, number][] & { stop(): void }> {
  const monitor = await connect(server).monitor();
  const seen = Object.assign([] as [number, number][], { stop: () => void monitor.disconnect() });
  monitor.on('monitor', (_time: string, args: string[], source: string) => {
    if (source === 'lua' && args[0]?.toUpperCase() === 'LRANGE') seen.push([Number(args[2]), Number(args[3])]);
  });
  return seen;
}

/** Subscribes to `channel` on a connection of its own; the array fills with the messages that come. */
async function listen(channel: string): Promise<string[]> {
  const subscriber = connect(server);
  const messages: string[] = [];
  subscriber.on('message', (_channel: string, message: string) => messages.push(message));
  await subscriber.subscribe(channel);
  return messages;
}
