/**
 * padlock/redlock: redlock v5's README examples and the scenarios of its own test suite
 * (src/single.test.ts, src/multi.test.ts of mike-marcacci/node-redlock), run against the facade on
 * real redis-servers with only the import changed. Where the peer's tests read redlock's keys
 * (`redis.get(resource) === lock.value`), these check the same fact through the lock itself: who
 * holds it, and that another Redlock cannot take it.
 */
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import Redlock, { ExecutionError, Lock, ResourceLockedError } from '../src/facades/redlock.js';
import { LockLostError, PadlockClosedError, PadlockOptionError, type Padlock } from '../src/index.js';
import { freePort } from '../src/devserver/redis-server.js';
import type { RedisServer } from '../src/devserver/redis-server.js';
import { commandCalls, connect, delay, lossOf, startServer, useMasters } from './harness/redis.js';

let server: RedisServer;
let redis: Redis;
const redlocks: Redlock[] = [];
before(async () => {
  server = await startServer();
  redis = connect(server);
});

/** A Redlock on the test server through a client of its own (as a second process would have). */
function redlockOn(settings?: ConstructorParameters<typeof Redlock>[1]): Redlock {
  const redlock = new Redlock([connect(server)], settings);
  redlocks.push(redlock);
  return redlock;
}

/** Whether another Redlock could take the resources right now (and gives them back). */
async function free(resources: string[]): Promise<boolean> {
  try {
    const lock = await redlockOn({ retryCount: 0 }).acquire(resources, 1_000);
    await lock.release();
    return true;
  } catch (error) {
    if (error instanceof ExecutionError) return false;
    throw error;
  }
}

describe('padlock/redlock: the README examples', () => {
  it('using: runs the routine under an auto-extended lock, and the signal stays quiet', async () => {
    const redlock = new Redlock([redis]);
    const [senderId, recipientId] = ['readme:sender', 'readme:recipient'];
    let ran = false;
    await redlock.using([senderId, recipientId], 5000, async (signal) => {
      // Do something...
      assert.equal(await free([senderId]), false, 'held while the routine runs');
      // Make sure any attempted lock extension has not failed.
      if (signal.aborted) {
        // eslint-disable-next-line @typescript-eslint/only-throw-error -- redlock's README, as written
        throw signal.error;
      }
      ran = true;
    });
    assert.ok(ran);
    assert.ok(await free([senderId, recipientId]), 'released when the routine ends');
  });

  it('acquire, extend and release directly', async () => {
    const redlock = new Redlock([redis]);
    // Acquire a lock.
    let lock = await redlock.acquire(['a'], 5000);
    try {
      assert.equal(await free(['a']), false);
      // Extend the lock.
      const before = lock.expiration;
      lock = await lock.extend(8000);
      assert.ok(lock.expiration > before, 'the new Lock expires later');
    } finally {
      // Release the lock.
      await lock.release();
    }
    assert.ok(await free(['a']));
  });

  it("error handling: 'error' events, a ResourceLockedError when the resource is held by another", async () => {
    const redlock = new Redlock([redis], { retryCount: 0 });
    const seen: unknown[] = [];
    redlock.on('error', (error) => {
      // Ignore cases where a resource is explicitly marked as locked on a client.
      if (error instanceof ResourceLockedError) {
        seen.push(error);
        return;
      }
      // Log all other errors.
      seen.push(error);
    });
    const lock = await redlockOn().acquire(['held'], 5000);
    await assert.rejects(redlock.acquire(['held'], 5000), ExecutionError);
    assert.ok(seen.length === 1 && seen[0] instanceof ResourceLockedError, String(seen));
    await lock.release();
  });

  it('CommonJS shape: the class is also the default export, and a named one', async () => {
    const module = await import('../src/facades/redlock.js');
    assert.equal(module.default, module.Redlock);
  });
});

describe("padlock/redlock: redlock's own test scenarios, one instance", () => {
  it('acquires, extends, and releases a single lock; the Lock carries the owner token and a fence', async () => {
    const redlock = new Redlock([redis]);
    const duration = Math.floor(2_147_483_647 / 10);
    let lock = await redlock.acquire(['{redlock}a'], duration);
    assert.ok(lock instanceof Lock);
    assert.deepEqual(lock.resources, ['{redlock}a']);
    assert.match(lock.value, /^[0-9a-f]{32}$/);
    assert.ok(lock.fence > 0);
    assert.ok(lock.expiration <= Date.now() + duration && lock.expiration > Date.now() + duration * 0.98, 'expiration is now + duration, less a drift margin');
    assert.equal(await free(['{redlock}a']), false);
    const old = lock;
    lock = await lock.extend(3 * duration > 2_147_483_647 ? 2_147_483_647 : 3 * duration);
    assert.equal(old.expiration, 0, 'the extended Lock replaces the old one');
    assert.equal(lock.value, old.value);
    assert.equal(lock.fence, old.fence, 'the same hold, the same fence');
    await lock.release();
    assert.equal(lock.expiration, 0);
    assert.ok(await free(['{redlock}a']));
  });

  it('acquires, extends, and releases a multi-resource lock (all or nothing)', async () => {
    const redlock = new Redlock([redis]);
    let lock = await redlock.acquire(['{redlock}a1', '{redlock}a2'], 60_000);
    assert.equal(await free(['{redlock}a1']), false);
    assert.equal(await free(['{redlock}a2']), false);
    lock = await lock.extend(120_000);
    await lock.release();
    assert.ok(await free(['{redlock}a1', '{redlock}a2']));
  });

  it('locks fail when redis is unreachable: ExecutionError whose cause names the store', async () => {
    const down = new Redis({ host: '127.0.0.1', port: await freePort(), maxRetriesPerRequest: 0, retryStrategy: () => null, lazyConnect: true });
    down.on('error', () => undefined);
    const redlock = new Redlock([down], { retryCount: 0 });
    const error = await redlock.acquire(['{redlock}b'], 10_000).then(
      () => assert.fail('This lock should not be acquired.'),
      (e: unknown) => e,
    );
    assert.ok(error instanceof ExecutionError, String(error));
    const [stats] = await Promise.all(error.attempts);
    assert.equal(stats?.votesFor.size, 0);
    assert.equal(stats?.votesAgainst.size, 1);
    await redlock.quit().catch(() => undefined);
  });

  it('locks automatically expire (acquire is a fixed lease, as in redlock)', async () => {
    const redlock = new Redlock([redis]);
    const lock = await redlock.acquire(['{redlock}d'], 200);
    assert.equal(await free(['{redlock}d']), false);
    await delay(300);
    const lock2 = await redlock.acquire(['{redlock}d'], 200);
    assert.notEqual(lock2.value, lock.value);
    assert.ok(lock2.fence > lock.fence, 'the next holder has a greater fence');
    await lock2.release();
    await assert.rejects(lock.release(), ExecutionError, 'the expired lock is not released for its successor');
  });

  it('individual locks are exclusive; the failure is an ExecutionError whose votes are ResourceLockedErrors', async () => {
    const redlock = new Redlock([redis]);
    const lock = await redlock.acquire(['{redlock}c'], 60_000);
    const error = await redlockOn({ retryCount: 2, retryDelay: 50, retryJitter: 0 }).acquire(['{redlock}c'], 60_000).then(
      () => assert.fail('This lock should not be acquired.'),
      (e: unknown) => e,
    );
    assert.ok(error instanceof ExecutionError);
    assert.equal(error.message, 'The operation was unable to achieve a quorum during its retry window.');
    for (const stats of await Promise.all(error.attempts)) {
      for (const vote of stats.votesAgainst.values()) assert.ok(vote instanceof ResourceLockedError, 'The error must be a ResourceLockedError.');
    }
    await lock.release();
  });

  it('overlapping multi-locks are exclusive, and the new resource stays unlocked', async () => {
    const redlock = new Redlock([redis]);
    const lock = await redlock.acquire(['{redlock}c1', '{redlock}c2'], 60_000);
    await assert.rejects(redlockOn({ retryCount: 0 }).acquire(['{redlock}c2', '{redlock}c3'], 60_000), ExecutionError);
    assert.ok(await free(['{redlock}c3']), 'The new resource must remain unlocked.');
    assert.equal(await free(['{redlock}c1']), false, 'The original lock must not be changed.');
    await lock.release();
  });

  it('the `using` helper acquires, extends, and releases locks', async () => {
    const redlock = new Redlock([redis]);
    const value = await redlock.using(['{redlock}x'], 300, { automaticExtensionThreshold: 100 }, async (signal) => {
      await delay(400); // past the duration: the lock must have been extended
      assert.equal(signal.aborted, false, 'The signal must not be aborted.');
      assert.equal(signal.error, undefined, 'The signal must not have an error.');
      assert.equal(await free(['{redlock}x']), false, 'still held');
      return 'done';
    });
    assert.equal(value, 'done');
    assert.ok(await free(['{redlock}x']), 'The lock was not released.');
  });

  it('the `using` helper is exclusive (two routines started together run one after the other)', async () => {
    const redlock = new Redlock([redis], { retryCount: 20 });
    let locked = false;
    const routine = async (): Promise<string> => {
      assert.equal(locked, false, 'The resource must not already be locked.');
      locked = true;
      await delay(150);
      locked = false;
      return 'ok';
    };
    assert.deepEqual(await Promise.all([redlock.using(['{redlock}y'], 300, { automaticExtensionThreshold: 100 }, routine), redlock.using(['{redlock}y'], 300, { automaticExtensionThreshold: 100 }, routine)]), ['ok', 'ok']);
  });

  it('using: a lock lost mid-routine aborts the signal with the error at signal.error', async () => {
    const redlock = new Redlock([redis]);
    const admin = redlockOn().padlock;
    await redlock.using(['{redlock}lost'], 1_000, async (signal) => {
      assert.ok(await admin.mutex('{redlock}lost').forceRelease());
      await lossOf({ signal });
      assert.ok(signal.error instanceof LockLostError, String(signal.error));
    }).then(
      () => assert.fail('using must reject: its lock did not cover the routine'),
      (error: unknown) => assert.ok(error instanceof ExecutionError, String(error)),
    );
  });

  it('waits without polling, within retryCount × (retryDelay + retryJitter)', async () => {
    const holder = await redlockOn().acquire(['{redlock}w'], 60_000);
    const redlock = redlockOn({ retryCount: 100, retryDelay: 10, retryJitter: 0 });
    const evalshaBefore = await commandCalls(redis, 'evalsha');
    const waiting = redlock.acquire(['{redlock}w'], 5_000);
    await delay(500);
    await holder.release();
    const lock = await waiting;
    // redlock would have sent ~50 attempts in 500 ms; padlock waits for the release.
    assert.ok((await commandCalls(redis, 'evalsha')) - evalshaBefore < 20, 'no polling while waiting');
    await lock.release();
    const started = Date.now();
    const held = await redlockOn().acquire(['{redlock}w'], 60_000);
    await assert.rejects(redlockOn({ retryCount: 3, retryDelay: 50, retryJitter: 50 }).acquire(['{redlock}w'], 5_000), ExecutionError);
    const waited = Date.now() - started;
    assert.ok(waited >= 280 && waited < 2_000, `waited ${waited} ms for a bound of 300 ms`);
    await held.release();
  });

  it("refuses what it cannot keep, typed: custom scripts; keeps redlock's own argument errors", async () => {
    assert.throws(() => new Redlock([]), /at least one redis client/);
    assert.throws(() => new Redlock([redis], {}, { acquireScript: (s: string) => s }), PadlockOptionError);
    const redlock = new Redlock([redis]);
    await assert.rejects(redlock.acquire(['x'], 1.5), /Duration must be an integer value in milliseconds/);
    await assert.rejects(redlock.using(['x'], 500, () => Promise.resolve(undefined)), /at least 100ms greater than the `automaticExtensionThreshold`/);
  });

  it("ends with its client: a quit client closes the facade's Padlock (nothing left open)", async () => {
    const client = connect(server);
    const redlock = new Redlock([client]);
    const lock = await redlock.acquire(['{redlock}end'], 5_000);
    await lock.release();
    const padlock: Padlock = redlock.padlock;
    await client.quit();
    await assert.rejects(padlock.mutex('{redlock}end').acquire(), PadlockClosedError);
  });
});

describe("padlock/redlock: redlock's multi-instance scenarios, 3 independent masters", () => {
  const { masters } = useMasters(3);

  it('acquires on a majority, excludes, releases; survives one master down', async () => {
    const redlock = new Redlock(masters.map((m) => connect(m, { maxRetriesPerRequest: 0 })), { retryCount: 0 });
    const other = new Redlock(masters.map((m) => connect(m)), { retryCount: 0 });
    const lock = await redlock.acquire(['{redlock}m'], 5_000);
    await assert.rejects(other.acquire(['{redlock}m'], 5_000), ExecutionError);
    await lock.release();
    masters[2]!.pause();
    try {
      const lock2 = await other.acquire(['{redlock}m'], 5_000);
      assert.ok(lock2.fence > lock.fence);
      await lock2.release();
    } finally {
      masters[2]!.resume();
    }
    await redlock.quit();
    await other.quit();
  });
});
