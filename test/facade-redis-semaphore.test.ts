/**
 * padlock/redis-semaphore: redis-semaphore 5's README examples and the scenarios of its own test
 * suite (test/src/RedisMutex.test.ts, RedisSemaphore.test.ts, RedisMultiSemaphore.test.ts,
 * RedlockMutex.test.ts of swarthy/redis-semaphore), run against the facade on real redis-servers
 * with only the import changed. Where the peer's tests read its keys (`client.get('mutex:key')`),
 * these check the same fact through the locks: who holds, and that another object cannot take it.
 */
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import type { Redis } from 'ioredis';
import { LostLockError, MultiSemaphore, Mutex, RedlockMultiSemaphore, RedlockMutex, RedlockSemaphore, Semaphore, TimeoutError, type TimeoutOptions } from '../src/facades/redis-semaphore.js';
import { LockLostError, Padlock, PadlockOptionError } from '../src/index.js';
import type { RedisServer } from '../src/devserver/redis-server.js';
import { connect, delay, eventually, padlockOn, startServer, useMasters } from './harness/redis.js';

let server: RedisServer;
let redisClient: Redis;
let admin: Padlock;
before(async () => {
  server = await startServer();
  redisClient = connect(server);
  admin = padlockOn(server);
});

/** The peer's own test timings. */
const timeoutOptions: TimeoutOptions = { lockTimeout: 300, acquireTimeout: 100, refreshInterval: 80, retryInterval: 10 };

/** Whether another process could take mutex `key` right now (it gives it back). */
async function mutexFree(key: string): Promise<boolean> {
  const lease = await admin.mutex(key).tryAcquire();
  await lease?.release();
  return lease !== null;
}

describe('padlock/redis-semaphore: the README examples', () => {
  it('Mutex: acquire, critical code, release', async () => {
    async function doSomething(): Promise<void> {
      const mutex = new Mutex(redisClient, 'lockingResource');
      await mutex.acquire();
      try {
        assert.equal(await mutexFree('lockingResource'), false);
      } finally {
        await mutex.release();
      }
    }
    await doSomething();
    assert.ok(await mutexFree('lockingResource'));
  });

  it('Mutex with lost lock handling: onLockLost is called and isAcquired turns false', async () => {
    const lost: unknown[] = [];
    const mutex = new Mutex(redisClient, 'lostResource', {
      lockTimeout: 1_000,
      onLockLost(err) {
        lost.push(err);
      },
    });
    await mutex.acquire();
    try {
      await admin.mutex('lostResource').forceRelease();
      assert.ok(await eventually(() => !mutex.isAcquired, 3_000), 'the loop ends: isAcquired is false');
    } finally {
      // It's safe to always call release, because if lock is no longer belongs to this mutex, .release() will have no effect
      await mutex.release();
    }
    assert.ok(await eventually(() => lost.length === 1));
    assert.ok(lost[0] instanceof LostLockError);
    assert.ok((lost[0]).cause instanceof LockLostError, 'the cause is padlock\'s LockLostError');
  });

  it('Mutex with optional lock: acquireAttemptsLimit 1, tryAcquire is false while held', async () => {
    const holder = await admin.mutex('optional').acquire();
    const mutex = new Mutex(redisClient, 'optional', { acquireAttemptsLimit: 1 });
    const started = Date.now();
    assert.equal(await mutex.tryAcquire(), false);
    assert.ok(Date.now() - started < 1_000, 'one attempt: no wait');
    await holder.release();
    assert.equal(await mutex.tryAcquire(), true);
    await mutex.release();
  });

  it('Mutex with temporary refresh: stopRefresh() lets the lock expire after lockTimeout', async () => {
    const mutex = new Mutex(redisClient, 'temporary', { lockTimeout: 400, refreshInterval: 100 });
    assert.equal(await mutex.tryAcquire(), true);
    await delay(600);
    assert.equal(await mutexFree('temporary'), false, 'refreshed while it refreshes');
    mutex.stopRefresh();
    assert.ok(await eventually(() => mutexFree('temporary'), 2_000), 'expired after lockTimeout');
  });

  it('a lock shared between scheduler and handler: identifier + acquiredExternally takes it over, release frees it', async () => {
    const scheduler = new Mutex(redisClient, 'shared', { lockTimeout: 30 * 60 * 1e3, refreshInterval: 0 });
    assert.equal(await scheduler.tryAcquire(), true);
    const mutexIdentifier = scheduler.identifier;
    const handler = new Mutex(connect(server), 'shared', { lockTimeout: 10 * 1e3, identifier: mutexIdentifier, acquiredExternally: true });
    await handler.acquire();
    assert.equal(handler.identifier, mutexIdentifier);
    assert.equal(await mutexFree('shared'), false);
    await handler.release();
    assert.ok(await mutexFree('shared'), 'the handler freed the lock the scheduler took');
    const late = new Mutex(redisClient, 'shared', { identifier: mutexIdentifier, acquiredExternally: true });
    await assert.rejects(late.acquire(), TimeoutError, 'a hold that is gone is not taken over');
  });

  it('Semaphore: at most 5 at once; a 6th waits for a release', async () => {
    const semaphores = Array.from({ length: 6 }, () => new Semaphore(redisClient, 'semResource', 5, { acquireTimeout: 5_000 }));
    for (const s of semaphores.slice(0, 5)) await s.acquire();
    const sixth = semaphores[5]!;
    const waiting = sixth.acquire();
    await delay(100);
    assert.equal(sixth.isAcquired, false);
    await semaphores[0]!.release();
    await waiting;
    assert.equal(sixth.isAcquired, true);
    for (const s of semaphores.slice(1)) await s.release();
  });

  it('MultiSemaphore: takes 2 of 5 permits at once, sharing its semaphore with Semaphore', async () => {
    const semaphore = new MultiSemaphore(redisClient, 'multiResource', 5, 2);
    const single = new Semaphore(redisClient, 'multiResource', 5, { acquireAttemptsLimit: 1 });
    const three = new MultiSemaphore(redisClient, 'multiResource', 5, 3);
    await semaphore.acquire();
    await three.acquire();
    assert.equal(await single.tryAcquire(), false, '2 + 3 of 5 permits taken');
    await semaphore.release();
    assert.equal(await single.tryAcquire(), true);
    await single.release();
    await three.release();
  });

  it('RedlockSemaphore and RedlockMultiSemaphore are refused, typed, naming the reason and what to use', () => {
    for (const make of [() => new RedlockSemaphore([redisClient, redisClient, redisClient], 'x', 5), () => new RedlockMultiSemaphore([redisClient, redisClient, redisClient], 'x', 5, 2)]) {
      assert.throws(make, (error: unknown) => error instanceof PadlockOptionError && error.code === 'INVALID_OPTION' && /majorities/.test(error.message) && /ZooKeeper or etcd/.test(error.message));
    }
  });
});

describe("padlock/redis-semaphore: redis-semaphore's own test scenarios", () => {
  it('should acquire and release lock', async () => {
    const mutex = new Mutex(redisClient, 'key');
    assert.equal(mutex.isAcquired, false);
    await mutex.acquire();
    assert.equal(mutex.isAcquired, true);
    assert.match(mutex.identifier, /^[0-9a-f]{32}$/);
    assert.ok((mutex.fence ?? 0) > 0, 'a fence comes with every acquisition');
    await mutex.release();
    assert.equal(mutex.isAcquired, false);
    assert.ok(await mutexFree('key'));
  });

  it('should reject after timeout', async () => {
    const mutex1 = new Mutex(redisClient, 'key', timeoutOptions);
    const mutex2 = new Mutex(redisClient, 'key', timeoutOptions);
    await mutex1.acquire();
    await assert.rejects(mutex2.acquire(), (error: unknown) => error instanceof TimeoutError && error.message === 'Acquire mutex key timeout');
    await mutex1.release();
    assert.ok(await mutexFree('key'));
  });

  it('should return false for tryAcquire after timeout, true when free', async () => {
    const mutex1 = new Mutex(redisClient, 'key', timeoutOptions);
    const mutex2 = new Mutex(redisClient, 'key', timeoutOptions);
    await mutex1.acquire();
    assert.equal(await mutex2.tryAcquire(), false);
    await mutex1.release();
    assert.equal(await mutex2.tryAcquire(), true);
    await mutex2.release();
  });

  it('should refresh lock every refreshInterval ms until release; stop when stopped', async () => {
    const mutex = new Mutex(redisClient, 'key', timeoutOptions);
    await mutex.acquire();
    await delay(400);
    assert.equal(await mutexFree('key'), false, 'still held past lockTimeout');
    mutex.stopRefresh();
    assert.ok(await eventually(() => mutexFree('key'), 1_000), 'expired once not refreshed');
    await mutex.release();
  });

  it('should call onLockLost if the lock was lost between refreshes (here: taken by force)', async () => {
    const lost: LostLockError[] = [];
    const mutex = new Mutex(redisClient, 'key', {
      ...timeoutOptions,
      onLockLost(err) {
        assert.equal(this.isAcquired, false);
        lost.push(err);
      },
    });
    await mutex.acquire();
    await admin.mutex('key').forceRelease();
    assert.ok(await eventually(() => lost.length === 1, 2_000));
    assert.equal(lost[0]!.message, 'Lost mutex for key key');
    await mutex.release();
  });

  it('should be reusable', async () => {
    const mutex = new Mutex(redisClient, 'key', timeoutOptions);
    for (let lifecycle = 0; lifecycle < 3; lifecycle++) {
      await mutex.acquire();
      await delay(100);
      assert.equal(await mutexFree('key'), false);
      await mutex.release();
      assert.ok(await mutexFree('key'));
    }
  });

  it('the trap: lockTimeout is a renewed lease, as in redis-semaphore, not a fixed one', async () => {
    const mutex = new Mutex(redisClient, 'job', { lockTimeout: 300, acquireTimeout: 200 });
    await mutex.acquire();
    await delay(900); // three leases
    assert.equal(mutex.isAcquired, true);
    assert.equal(await mutexFree('job'), false);
    await mutex.release();
  });

  it('semaphore: limit respected by concurrent acquirers, FIFO without polling', async () => {
    let inside = 0;
    let most = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        const semaphore = new Semaphore(redisClient, 'sem', 3, { acquireTimeout: 5_000 });
        await semaphore.acquire();
        most = Math.max(most, ++inside);
        await delay(30);
        inside--;
        await semaphore.release();
      }),
    );
    assert.equal(most, 3);
  });

  it('aborts a wait by its abortSignal, with the signal reason', async () => {
    const holder = new Mutex(redisClient, 'abort');
    await holder.acquire();
    const controller = new AbortController();
    const waiting = new Mutex(redisClient, 'abort', { acquireTimeout: 5_000 }).acquire(controller.signal);
    setTimeout(() => controller.abort(new Error('stop')), 50);
    await assert.rejects(waiting, /stop/);
    await holder.release();
  });

  it('refuses, typed, a custom identifier without acquiredExternally, and a semaphore taken over', () => {
    assert.throws(() => new Mutex(redisClient, 'key', { identifier: 'my-own-identifier-0001' }), PadlockOptionError);
    assert.throws(() => new Semaphore(redisClient, 'key', 2, { identifier: 'my-own-identifier-0001', acquiredExternally: true }), PadlockOptionError);
    assert.throws(() => new Mutex(redisClient, 'key', { acquiredExternally: true }), /meanless without custom identifier/);
  });
});

describe('padlock/redis-semaphore: RedlockMutex over 3 independent masters', () => {
  const { masters } = useMasters(3);

  it('README: acquire, critical code, release; exclusive; survives one master down', async () => {
    const redisClients = masters.map((m) => connect(m, { maxRetriesPerRequest: 0 }));
    const mutex = new RedlockMutex(redisClients, 'lockingResource', { acquireTimeout: 200 });
    const other = new RedlockMutex(masters.map((m) => connect(m)), 'lockingResource', { acquireTimeout: 200 });
    await mutex.acquire();
    try {
      assert.equal(await other.tryAcquire(), false);
    } finally {
      await mutex.release();
    }
    // A release returns once a majority released; the last master's follows (its first EVALSHA on a
    // fresh connection may come back NOSCRIPT and be sent again). What this row shows is a lock free
    // on two masters taken with the third down, so it waits for every master to be free first.
    const views = masters.map((m) => padlockOn(m).mutex('lockingResource'));
    assert.ok(await eventually(async () => (await Promise.all(views.map((v) => v.isLocked()))).every((locked) => !locked)), 'free on every master');
    masters[0]!.pause();
    try {
      assert.equal(await other.tryAcquire(), true);
      await other.release();
    } finally {
      masters[0]!.resume();
    }
  });
});
