/**
 * Reading locks as operators see them (src/inspection.ts, inspect.lua): holders, fence, lease, the
 * queue with each waiter's time in it (which heartbeats do not reset), the raw keys; finding names
 * with SCAN.
 */
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import type { RedisServer } from '../src/devserver/redis-server.js';
import { hashTag, lockKeys } from '../src/keys.js';
import { listLocks, LockReader, lockKeyPattern, parseLockKey, scanLockNames } from '../src/stores/redis/inspection.js';
import { MutexProtocol } from '../src/stores/redis/kinds/mutex-protocol.js';
import { fromIoredis } from '../src/stores/redis/adapters/ioredis.js';
import { connect, delay, eventually, padlockOn, runCall, startServer } from './harness/redis.js';
import { redisInternals } from '../src/testing.js';

let server: RedisServer;
before(async () => {
  server = await startServer();
});

describe('lock key names', () => {
  it('parses back every key lockKeys makes, braces and percent signs included', () => {
    for (const name of ['order:42', 'a{b}c', '%7B', '}{', 'x}:lock', 'ünï cødé', '*?[]']) {
      const keys = lockKeys('padlock', name);
      for (const role of ['lock', 'queue'] as const) {
        assert.deepEqual(parseLockKey('padlock', keys[role]), { name, role }, `${name} ${role}`);
      }
      assert.equal(parseLockKey('padlock', keys.released), undefined, 'a channel is not a key');
      assert.equal(parseLockKey('other', keys.lock), undefined, 'another prefix');
    }
  });

  it('ignores keys padlock cannot have written', () => {
    for (const key of ['padlock:{a}', 'padlock:{a}:other', 'padlock:{%41}:lock', 'padlock:{}:lock', 'padlock:{a{b}:lock', 'padlock:x:{a}:lock', 'padlockx:{a}:lock']) {
      assert.equal(parseLockKey('padlock', key), undefined, key);
    }
  });

  it('makes a SCAN pattern that escapes the prefix and tags the name pattern', () => {
    assert.equal(lockKeyPattern('padlock', '*'), 'padlock:{*}:*');
    assert.equal(lockKeyPattern('a*b', 'order:{1}*'), `a\\*b:{${hashTag('order:{1}')}*}:*`);
  });
});

describe('scanLockNames', () => {
  it('finds the locks in use under one prefix, matching a pattern, without KEYS', async () => {
    const admin = connect(server);
    const padlock = padlockOn(server, { prefix: 'scan1' });
    const other = padlockOn(server, { prefix: 'scan1x' });
    const held = await Promise.all(['order:1', 'order:2', 'user:{7}', 'order:%'].map((n) => padlock.mutex(n).acquire()));
    const freed = await padlock.mutex('order:freed').acquire();
    await freed.release(); // leaves a tombstone keeping its fence: free
    await other.mutex('order:9').acquire();
    await admin.set('scan1:{order:3}:unrelated', 'x');
    const before = await admin.info('commandstats');
    // The freed lock keeps its key an hour, as a tombstone: a candidate, read as free.
    assert.deepEqual(await scanLockNames([admin], 'scan1', '*'), ['order:%', 'order:1', 'order:2', 'order:freed', 'user:{7}']);
    assert.deepEqual(await scanLockNames([admin], 'scan1', 'order:*', { count: 2 }), ['order:%', 'order:1', 'order:2', 'order:freed']);
    assert.deepEqual(await scanLockNames([admin], 'scan1', 'user:{*}'), ['user:{7}']);
    const reader = new LockReader(fromIoredis(admin), 'scan1');
    assert.deepEqual((await listLocks([admin], reader, 'scan1', '*')).map((s) => s.name), ['order:%', 'order:1', 'order:2', 'user:{7}'], 'only locks in use');
    assert.deepEqual((await listLocks([admin], reader, 'scan1', 'order:*', { all: true })).map((s) => [s.name, s.held, s.lastFence]), [
      ['order:%', true, held[3]?.fence],
      ['order:1', true, held[0]?.fence],
      ['order:2', true, held[1]?.fence],
      ['order:freed', false, freed.fence],
    ]);
    assert.equal(/cmdstat_keys:/.exec(await admin.info('commandstats'))?.[0], /cmdstat_keys:/.exec(before)?.[0], 'KEYS is never sent');
    await Promise.all(held.map((l) => l.release()));
  });
});

describe('LockReader', () => {
  it('reads a held lock: holder, hold count, fence, lease and keys with their TTLs', async () => {
    const padlock = padlockOn(server, { prefix: 'read1', leaseMs: 20_000 });
    const reader = new LockReader(fromIoredis(connect(server)), 'read1');
    const lease = await padlock.withLock('order:1', async () => {
      const inner = await padlock.mutex('order:1').acquire(); // re-entered: 2 holds
      const state = await reader.read('order:1');
      assert.equal(state.held, true);
      assert.equal(state.kind, 'mutex');
      assert.deepEqual(state.holders, [{ owner: inner.owner, holdCount: 2, clients: [redisInternals(padlock).clientId] }]);
      assert.equal(state.fence, inner.fence);
      assert.equal(state.lastFence, inner.fence);
      assert.ok(state.leaseMs !== null && state.leaseMs > 15_000 && state.leaseMs <= 20_000, `lease ${state.leaseMs}`);
      assert.equal(state.waiting, 0);
      assert.equal(state.oldestWaitMs, null);
      assert.deepEqual(state.waiters, []);
      const keys = lockKeys('read1', 'order:1');
      assert.deepEqual(state.keys.map((k) => [k.role, k.key, k.type, k.exists]), [
        ['lock', keys.lock, 'string', true],
        ['queue', keys.queue, 'list', false],
      ]);
      assert.ok((state.keys[0]?.ttlMs ?? 0) > 15_000, 'the lock key lives its lease');
      await inner.release();
      return inner;
    });
    const free = await reader.read('order:1');
    assert.equal(free.held, false);
    assert.equal(free.fence, null);
    assert.equal(free.leaseMs, null);
    assert.deepEqual(free.holders, []);
    assert.equal(free.lastFence, lease.fence, 'the tombstone keeps the last fence');
    assert.ok((free.keys[0]?.ttlMs ?? 0) > 3_500_000, 'for an hour');
    const never = await reader.read('never');
    assert.equal(never.lastFence, null);
    assert.ok(never.keys.every((k) => !k.exists && k.ttlMs === null));
  });

  it('reads the queue: each waiter\'s kind, client and time queued, which heartbeats do not reset', async () => {
    const holderSide = padlockOn(server, { prefix: 'read2', leaseMs: 30_000 });
    const waiterSide = padlockOn(server, { prefix: 'read2', leaseMs: 30_000 });
    const admin = connect(server);
    const reader = new LockReader(fromIoredis(admin), 'read2');
    const keys = lockKeys('read2', 'q');
    const holder = await holderSide.mutex('q').acquire();
    const fair = waiterSide.fairMutex('q').acquire({ waitMs: 20_000 });
    assert.ok(await eventually(async () => (await admin.llen(keys.queue)) === 1));
    await delay(50);
    const mutex = waiterSide.mutex('q').acquire({ waitMs: 20_000 });
    assert.ok(await eventually(async () => (await admin.llen(keys.queue)) === 2));
    const first = await reader.read('q');
    assert.equal(first.waiting, 2);
    assert.deepEqual(first.waiters.map((w) => [w.position, w.kind, w.clientId, w.alive]), [
      [1, 'fair', redisInternals(waiterSide).clientId, true],
      [2, 'mutex', redisInternals(waiterSide).clientId, true],
    ]);
    const [head, second] = first.waiters;
    assert.ok(head?.waitedMs !== null && second?.waitedMs !== null && head !== undefined && second !== undefined);
    assert.ok(head.waitedMs >= second.waitedMs + 40, `the head has waited longer: ${head.waitedMs} vs ${second.waitedMs}`);
    assert.equal(first.oldestWaitMs, head.waitedMs);
    assert.ok(head.heartbeatMs !== null && head.heartbeatMs > 0 && head.leaseMs === 30_000);
    // Waiters beat every second (a third of their 30 s lease, capped at 1 s): after two beats, the
    // time queued has kept counting from when they joined.
    await delay(2_200);
    const later = await reader.read('q');
    assert.ok((later.oldestWaitMs ?? 0) >= (first.oldestWaitMs ?? 0) + 2_000, `queued for ${later.oldestWaitMs} ms, was ${first.oldestWaitMs}`);
    assert.ok((later.waiters[0]?.heartbeatMs ?? 0) > 0, 'the heartbeat is current');
    await holder.release(); // hands the lock to the fair head
    const fairLease = await fair;
    await fairLease.release(); // wakes the mutex waiter
    await (await mutex).release();
    assert.equal((await reader.read('q')).waiting, 0);
  });

  it('counts a waiter past its heartbeat as dead, and says so', async () => {
    const admin = connect(server);
    const keys = lockKeys('read3', 'd');
    const padlock = padlockOn(server, { prefix: 'read3', leaseMs: 30_000 });
    const holder = await padlock.mutex('d').acquire();
    // A waiter whose process died: a 300 ms allowance (heartbeat 100 ms), then silence. Its entry
    // stays for three allowances.
    await runCall(admin, new MutexProtocol(keys, 'fair', 'deadclient').attempt('d'.repeat(32), 30_000, 'queue', 100));
    await delay(400);
    const state = await new LockReader(fromIoredis(admin), 'read3').read('d');
    assert.equal(state.waiting, 0, 'a dead waiter is not waiting');
    assert.deepEqual(state.waiters.map((w) => [w.kind, w.clientId, w.alive]), [['fair', 'deadclient', false]]);
    assert.ok((state.waiters[0]?.heartbeatMs ?? 0) < 0);
    assert.equal(state.oldestWaitMs, null);
    // An entry padlock cannot read (not written by it) is shown as it is, and counted as dead.
    await admin.rpush(keys.queue, 'not-an-entry');
    const odd = await new LockReader(fromIoredis(admin), 'read3').read('d');
    assert.deepEqual(odd.waiters.at(-1), { position: 2, owner: 'not-an-entry', kind: 'unknown', clientId: null, alive: false, waitedMs: null, heartbeatMs: null, leaseMs: null });
    assert.equal(odd.waiting, 0);
    await admin.del(keys.queue);
    await holder.release();
  });

  it('reads only as many waiters as asked, and counts the rest as waiting', async () => {
    const admin = connect(server);
    const keys = lockKeys('read4', 'many');
    const padlock = padlockOn(server, { prefix: 'read4', leaseMs: 30_000 });
    const holder = await padlock.mutex('many').acquire();
    const protocol = new MutexProtocol(keys, 'fair', 'someclient');
    for (let i = 0; i < 5; i++) await runCall(admin, protocol.attempt(`w${i}`.padEnd(32, 'x'), 30_000, 'queue', 10_000));
    const state = await new LockReader(fromIoredis(admin), 'read4').read('many', 2);
    assert.equal(state.waiting, 5);
    assert.deepEqual(state.waiters.map((w) => w.owner.slice(0, 2)), ['w0', 'w1']);
    await holder.release();
  });
});
