import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import type { RedisServer } from '../src/devserver/redis-server.js';
import { LockLostError, LockNotHeldError, type Lease } from '../src/index.js';
import { lockKeys } from '../src/keys.js';
import { RENEWALS_PER_CALL } from '../src/stores/redis/renewals.js';
import { commandCalls, connect, delay, eventually, lossOf, padlockOn, startServer } from './harness/redis.js';
import { readLock } from './harness/lock-state.js';
import { internals, redisInternals } from '../src/testing.js';

let server: RedisServer;
before(async () => {
  server = await startServer();
});

function lostReason(lease: Lease): string | undefined {
  const reason: unknown = lease.signal.reason;
  return reason instanceof LockLostError ? reason.reason : undefined;
}

describe('watchdog', () => {
  it('keeps a 300 ms lease alive for 3 s', async () => {
    const padlock = padlockOn(server, { leaseMs: 300 });
    let renewals = 0;
    padlock.on('extended', () => renewals++);
    const lease = await padlock.mutex('wd:alive').acquire();
    await delay(3_000);
    assert.equal(lease.isHeld, true);
    assert.equal(lease.signal.aborted, false);
    assert.equal(await padlockOn(server).mutex('wd:alive').tryAcquire(), null, 'still held in Redis');
    assert.ok(renewals >= 5, `renewed ${renewals} times`);
    await lease.release();
  });

  it('renews 10 000 leases in a few dozen calls per tick (RENEWALS_PER_CALL each), not 10 000', async () => {
    // A long lease: taking 10 000 locks can take seconds on a busy machine.
    const padlock = padlockOn(server, { leaseMs: 12_000 });
    const admin = connect(server);
    const leases = await Promise.all(Array.from({ length: 10_000 }, (_, i) => padlock.mutex(`wd:many:${i}`).acquire()));
    let renewals = 0;
    padlock.on('extended', () => renewals++);
    const before = await commandCalls(admin, 'evalsha');
    await eventually(() => renewals >= 10_000, 20_000);
    const calls = (await commandCalls(admin, 'evalsha')) - before;
    assert.ok(renewals >= 10_000, `a round of renewals happened (${renewals})`);
    assert.ok(calls <= Math.ceil(10_000 / RENEWALS_PER_CALL) + 6, `${calls} script calls renewed ${renewals} holds`);
    assert.ok(leases.every((l) => l.isHeld));
    await padlock.close();
  });

  it('does not renew a fixed lease unless autoExtend is set', async () => {
    const padlock = padlockOn(server);
    const fixed = await padlock.mutex('wd:fixed').acquire({ leaseMs: 200 });
    const extended = await padlock.mutex('wd:fixed:auto').acquire({ leaseMs: 200, autoExtend: true });
    await delay(500);
    assert.equal(await padlock.mutex('wd:fixed').isLocked(), false, 'the fixed lease ran out in Redis');
    assert.equal(fixed.isHeld, false);
    assert.equal(lostReason(fixed), 'expired');
    assert.equal(extended.isHeld, true);
    assert.equal(await padlock.mutex('wd:fixed:auto').isLocked(), true);
    await assert.rejects(fixed.release(), LockNotHeldError);
    await extended.release();
  });

  it('renews many holds in calls of at most RENEWALS_PER_CALL, sent together, so no one script keeps Redis busy long', async () => {
    const padlock = padlockOn(server, { leaseMs: 3_000 });
    const { topology } = redisInternals(padlock);
    const runMany = topology.runMany.bind(topology);
    const rounds: number[][] = [];
    topology.runMany = (calls) => {
      rounds.push(calls.map((call) => call.keys.length));
      return runMany(calls);
    };
    const count = RENEWALS_PER_CALL * 2 + 100;
    const leases = await Promise.all(Array.from({ length: count }, (_, i) => padlock.mutex(`wd:chunked:${i}`).acquire()));
    await delay(1_500); // past one renewal (a third of the lease) of every hold
    const sizes = rounds.flat();
    assert.ok(sizes.reduce((a, b) => a + b, 0) >= count, `every hold renewed: ${JSON.stringify(rounds)}`);
    assert.ok(sizes.every((size) => size <= RENEWALS_PER_CALL), `calls of ${sizes.join(', ')} holds`);
    assert.ok(rounds.some((round) => round.length > 1), 'a round trip carries several calls');
    assert.ok(leases.every((lease) => lease.isHeld));
    await Promise.all(leases.map((lease) => lease.release()));
  });

  it('arms no timer per acquisition: a lock taken and released over and over leaves the watchdog\'s timer armed, and its calls share one time-out timer', async () => {
    const padlock = padlockOn(server);
    const mutex = padlock.mutex('wd:timers');
    const cycle = async (options?: { waitMs: number }): Promise<void> => {
      const lease = await mutex.acquire(options);
      await lease.release();
    };
    for (let i = 0; i < 20; i++) await cycle();
    const original = globalThis.setTimeout;
    let armed = 0;
    globalThis.setTimeout = ((...args: Parameters<typeof setTimeout>) => {
      armed++;
      return original(...args);
    }) as typeof setTimeout;
    try {
      for (let i = 0; i < 100; i++) await cycle();
      for (let i = 0; i < 100; i++) await cycle({ waitMs: 60_000 });
    } finally {
      globalThis.setTimeout = original;
    }
    // Before: three or four timers per acquire+release (the attempt's and the release's reply
    // time-outs, the watchdog's, the waitMs deadline's). Now the odd re-arm only.
    assert.ok(armed <= 10, `${armed} timers armed for 200 acquire+release pairs`);
  });

  it('stops renewing at release and at close', async () => {
    const admin = connect(server);
    const padlock = padlockOn(server, { leaseMs: 150 });
    const a = await padlock.mutex('wd:stop:a').acquire();
    const b = await padlock.mutex('wd:stop:b').acquire();
    await a.release();
    await delay(200);
    assert.equal(b.isHeld, true);
    await padlock.close();
    const before = await commandCalls(admin, 'evalsha');
    await delay(400);
    assert.equal(await commandCalls(admin, 'evalsha'), before, 'no renewal after close');
    assert.equal(internals(padlock).watchdog.size, 0);
  });

  it('aborts the holder\'s signal at its next renewal when the lock is deleted under it', async () => {
    const leaseMs = 3_000;
    const padlock = padlockOn(server, { leaseMs });
    const lost: LockLostError[] = [];
    padlock.on('lost', (error) => lost.push(error));
    const lease = await padlock.mutex('wd:forced').acquire();
    assert.equal(await padlockOn(server).mutex('wd:forced').forceRelease(), true);
    await lossOf(lease);
    // 'taken' is what a renewal that finds another owner (here none) reports; the lease running out
    // would say 'expired'. No timing needed to tell them apart.
    assert.equal(lostReason(lease), 'taken', 'found by a renewal, not by the lease running out');
    assert.equal(lease.isHeld, false);
    assert.equal(lost.length, 1);
    await assert.rejects(lease.release(), LockNotHeldError);
  });

  it('declares the lease lost at its local deadline when redis-server is frozen (SIGSTOP), without a hang', async () => {
    const frozen = await startServer();
    const padlock = padlockOn(frozen, { leaseMs: 400 });
    const lease = await padlock.mutex('wd:frozen').acquire();
    frozen.pause();
    try {
      await lossOf(lease);
      assert.equal(lostReason(lease), 'expired');
      assert.equal(lease.isHeld, false);
      await assert.rejects(lease.release(), LockNotHeldError);
    } finally {
      frozen.resume();
    }
  });

  it('declares the lease lost when the event loop stalls past the deadline', async () => {
    const padlock = padlockOn(server, { leaseMs: 200 });
    const lease = await padlock.mutex('wd:stall').acquire();
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 400);
    assert.equal(lease.isHeld, false, 'known lost at once, before any timer ran');
    await lossOf(lease);
    assert.equal(lostReason(lease), 'expired');
  });

  it('renewal reads the key through the lock layout of docs/protocol.md', async () => {
    const admin = connect(server);
    const padlock = padlockOn(server, { leaseMs: 300 });
    const lease = await padlock.mutex('wd:layout').acquire();
    const keys = lockKeys('padlock', 'wd:layout');
    assert.deepEqual(await readLock(admin, keys.lock), { fence: lease.fence, owner: lease.owner, count: 1, clients: redisInternals(padlock).clientId, log: ' ' });
    await delay(400);
    assert.ok((await admin.pttl(keys.lock)) > 0);
    await lease.release();
    const tombstone = await readLock(admin, keys.lock);
    assert.ok(tombstone !== undefined && tombstone.fence === lease.fence && tombstone.count === 0 && tombstone.owner === '', 'freed, the key keeps the fence');
    const tombstoneTtl = await admin.pttl(keys.lock);
    assert.ok(tombstoneTtl > 0 && tombstoneTtl <= 3_600_000, `the tombstone expires within an hour: ${tombstoneTtl} ms`);
  });
});
