import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import type { RedisServer } from '../src/devserver/redis-server.js';
import { LockTimeoutError, Padlock, PadlockOptionError, RedisUnavailableError, RedisCommandError, type RedisClient } from '../src/index.js';
import { Cluster as Cluster5, Redis as Redis5 } from 'ioredis';
import { Cluster as Cluster6, Redis as Redis6 } from 'ioredis6';
import { Redis as Valkey } from 'iovalkey';
import { createClient, createClientPool, createCluster } from '@redis/client';
import { createClient as createClient5 } from 'redis5';
import { createClient as createClient4 } from 'redis4';
import { commandCalls, connect, padlockOn, startServer } from './harness/redis.js';

let server: RedisServer;
before(async () => {
  server = await startServer();
});

function isOptionError(option: string) {
  return (error: unknown): boolean => error instanceof PadlockOptionError && error.option === option && error.code === 'INVALID_OPTION';
}

describe('validation', () => {
  it('refuses bad Padlock options, naming the option', () => {
    const redis = connect(server);
    assert.throws(() => new Padlock(undefined as never), isOptionError('options'));
    assert.throws(() => new Padlock({}), isOptionError('redis'));
    assert.throws(() => new Padlock({ redis: {} as never }), isOptionError('redis'));
    assert.throws(() => new Padlock({ redis, prefix: '' }), isOptionError('prefix'));
    assert.throws(() => new Padlock({ redis, prefix: 'a{b}' }), isOptionError('prefix'));
    assert.throws(() => new Padlock({ redis, leaseMs: NaN }), isOptionError('leaseMs'));
    assert.throws(() => new Padlock({ redis, leaseMs: 5 }), isOptionError('leaseMs'));
    assert.throws(() => new Padlock({ redis, leaseMs: Infinity }), isOptionError('leaseMs'));
    assert.throws(() => new Padlock({ redis, leasMs: 10 } as never), isOptionError('options.leasMs'));
    assert.throws(() => new Padlock({ redis, leaseMs: NaN }), /leaseMs must be a finite number from 10 to 2147483647, got NaN/);
    assert.throws(() => new Padlock({ redis, livenessMs: 999 }), isOptionError('livenessMs'));
    assert.throws(() => new Padlock({ redis, livenessMs: Infinity }), /livenessMs must be a finite number from 1000 to 2147483647, got Infinity/);
    assert.throws(() => new Padlock({ redis, reapDeadHolders: 'yes' as never }), isOptionError('reapDeadHolders'));
    assert.equal(new Padlock({ redis }).livenessMs, 10_000, 'livenessMs defaults to 10 s');
  });

  it('refuses bad names and acquire options before any Redis command', async () => {
    const admin = connect(server);
    const padlock = padlockOn(server);
    const before = await commandCalls(admin, 'evalsha');
    assert.throws(() => padlock.mutex(''), isOptionError('name'));
    assert.throws(() => padlock.mutex('x'.repeat(1_001)), isOptionError('name'));
    assert.throws(() => padlock.mutex(42 as never), isOptionError('name'));
    assert.throws(() => padlock.mutex('\uD800'), isOptionError('name'));
    const lock = padlock.mutex('opts');
    await assert.rejects(lock.acquire({ waitMs: -1 }), isOptionError('waitMs'));
    await assert.rejects(lock.acquire({ waitMs: NaN }), isOptionError('waitMs'));
    await assert.rejects(lock.acquire({ leaseMs: Infinity }), isOptionError('leaseMs'));
    await assert.rejects(lock.acquire({ autoExtend: 'yes' as never }), isOptionError('autoExtend'));
    await assert.rejects(lock.acquire({ signal: {} as never }), isOptionError('signal'));
    await assert.rejects(lock.acquire({ owner: 'short' }), isOptionError('owner'));
    await assert.rejects(lock.tryAcquire({ owner: 'has spaces in it!!' }), isOptionError('owner'));
    await assert.rejects(lock.acquire({ wait: 5 } as never), isOptionError('options.wait'));
    await assert.rejects(lock.withLock(undefined as never), isOptionError('fn'));
    const lease = await lock.acquire();
    await assert.rejects(lease.extend(-5), isOptionError('ms'));
    await lease.release();
    // The good acquire, the liveness key it needs first (this Padlock's first hold), the read of the
    // server's maxmemory-policy sent beside the first call, and the release.
    assert.equal(await commandCalls(admin, 'evalsha'), before + 4, 'only the good acquire and release reached Redis');
  });

  it('accepts Infinity for waitMs and names with braces, spaces, unicode and at the length limit', async () => {
    const padlock = padlockOn(server);
    for (const name of ['{x}', '}{', 'a b', 'zé🔒', '%7B', 'x'.repeat(1_000)]) {
      const lease = await padlock.mutex(name).acquire({ waitMs: Infinity });
      assert.equal(await padlock.mutex(name).isLocked(), true);
      await lease.release();
    }
  });

  it('refuses a client that lacks what padlock calls, naming what is missing, before any command', () => {
    // Passed the old check (evalsha and duplicate only), then failed at the first lock blaming the data.
    const fake = { evalsha: () => Promise.resolve(null), duplicate: () => fake };
    assert.throws(
      () => new Padlock({ redis: fake as never }),
      (error: unknown) =>
        isOptionError('redis')(error) &&
        error instanceof PadlockOptionError &&
        error.value === fake &&
        /redis must be an ioredis or iovalkey Redis or Cluster, or a connected node-redis client, cluster or sentinel .* \(this ioredis-like object lacks eval\(\), pipeline\(\), subscribe\(\), unsubscribe\(\), on\(\), disconnect\(\), a status string\)/.test(error.message),
    );
    // Each member counts: a full look-alike without one of them is refused, naming just that one.
    const full: Record<string, unknown> = { status: 'ready' };
    for (const method of ['evalsha', 'eval', 'pipeline', 'duplicate', 'subscribe', 'unsubscribe', 'on', 'disconnect']) full[method] = () => undefined;
    for (const member of Object.keys(full)) {
      const rest = { ...full };
      delete rest[member];
      const named = member === 'status' ? 'a status string' : `${member}()`;
      assert.throws(() => new Padlock({ redis: rest as never }), (e: unknown) => isOptionError('redis')(e) && e instanceof Error && e.message.includes(`lacks ${named})`), member);
    }
    assert.throws(() => new Padlock({ redis: 'redis://127.0.0.1:6379' as never }), /redis must be an ioredis or iovalkey Redis or Cluster, or a connected node-redis client, cluster or sentinel \(createClient, createCluster, createSentinel\), got "redis:/);
  });

  it('refuses a node-redis client that is not connected, in legacy mode, or a pool, saying what to change', async () => {
    const url = `redis://${server.host}:${server.port}`;
    const refused = (redis: unknown, says: RegExp): void =>
      assert.throws(() => new Padlock({ redis: redis as never }), (e: unknown) => isOptionError('redis')(e) && e instanceof Error && says.test(e.message), String(says));
    refused(createClient({ url }), /this node-redis client is not connected \(await its connect\(\) before new Padlock\)/);
    refused(createCluster({ rootNodes: [{ url }] }), /this node-redis cluster is not connected/);
    refused(createClient4({ url, legacyMode: true }), /a node-redis client without legacyMode/);
    const closed = await createClient({ url }).connect();
    closed.destroy();
    refused(closed, /this node-redis client is not connected \(await its connect\(\) before new Padlock\), or was closed/);
    const pool = createClientPool({ url });
    refused(pool, /a node-redis client pool is not supported \(pass a client from createClient\)/);
    await pool.close();
    // The Redlock array names the master at fault.
    const open = await createClient({ url }).connect();
    try {
      assert.throws(() => new Padlock({ redis: [open, createClient({ url }), open] as never }), isOptionError('redis[1]'));
    } finally {
      open.destroy();
    }
  });

  it('refuses an ioredis or iovalkey client that was closed, saying so', async () => {
    const url = `redis://${server.host}:${server.port}`;
    for (const client of [new Redis5(url), new Redis6(url), new Valkey(url)]) {
      await client.ping();
      await client.quit();
      assert.throws(() => new Padlock({ redis: client }), (e: unknown) => isOptionError('redis')(e) && e instanceof Error && /this client was closed \(quit\(\) or disconnect\(\) was called\)/.test(e.message));
    }
    // Refused as soon as it is closed, and still once its socket is gone (status 'end').
    const dropped = new Redis5(url);
    await dropped.ping();
    const ended = new Promise((resolve) => dropped.once('end', resolve));
    dropped.disconnect();
    assert.throws(() => new Padlock({ redis: dropped }), isOptionError('redis'));
    await ended;
    assert.equal(dropped.status, 'end');
    assert.throws(() => new Padlock({ redis: dropped }), isOptionError('redis'));
  });

  it('accepts node-redis 4, 5 and 6 clients and iovalkey, and each locks for real', async () => {
    const url = `redis://${server.host}:${server.port}`;
    const made: { redis: RedisClient; close: () => unknown }[] = [];
    const c6 = await createClient({ url }).connect();
    made.push({ redis: c6, close: () => c6.destroy() });
    const c5 = await createClient5({ url }).connect();
    made.push({ redis: c5, close: () => c5.destroy() });
    const c4 = createClient4({ url });
    await c4.connect();
    made.push({ redis: c4, close: () => c4.disconnect() });
    const valkey = new Valkey(url);
    made.push({ redis: valkey, close: () => valkey.disconnect() });
    try {
      for (const { redis } of made) {
        const padlock = new Padlock({ redis });
        const lease = await padlock.mutex('any-client').acquire({ waitMs: 5_000 });
        assert.equal(lease.isHeld, true);
        await lease.release();
        await padlock.close();
      }
    } finally {
      for (const { close } of made) await close();
    }
  });

  it('accepts ioredis 5 and 6 Redis and Cluster instances, connected or not yet', async () => {
    const url = `redis://${server.host}:${server.port}`;
    // This repo holds two ioredis copies, whose classes are distinct types; a user's project has one,
    // the one padlock's declarations import. Hence the casts for the ioredis6 alias only.
    const as5 = (client: Redis6 | Cluster6): Redis5 => client as unknown as Redis5;
    // lazyConnect: construction alone must be enough, as a Cluster's nodes may not answer yet.
    const clients: (Redis5 | Cluster5)[] = [
      new Redis5(url, { lazyConnect: true }),
      as5(new Redis6(url, { lazyConnect: true })),
      new Cluster5([{ host: server.host, port: server.port }], { lazyConnect: true }),
      as5(new Cluster6([{ host: server.host, port: server.port }], { lazyConnect: true })),
    ];
    try {
      for (const redis of clients) {
        const padlock = new Padlock({ redis });
        await padlock.close();
      }
      // And one of each version locks for real.
      for (const redis of [new Redis5(url), as5(new Redis6(url))]) {
        clients.push(redis);
        const padlock = new Padlock({ redis });
        const lease = await padlock.mutex('either-ioredis').acquire({ waitMs: 5_000 });
        assert.equal(lease.isHeld, true);
        await lease.release();
        await padlock.close();
      }
    } finally {
      for (const client of clients) client.disconnect();
    }
  });

  it('takes an option set to undefined as absent (exactOptionalPropertyTypes accepts it too)', async () => {
    const padlock = padlockOn(server, { prefix: undefined, leaseMs: undefined });
    assert.equal(padlock.prefix, 'padlock');
    assert.equal(padlock.leaseMs, 30_000);
    // This file compiles under exactOptionalPropertyTypes: each `undefined` here is a type check too.
    const options = { waitMs: undefined, leaseMs: undefined, autoExtend: undefined, signal: undefined, owner: undefined };
    const lease = await padlock.mutex('undefined-options').acquire(options);
    assert.equal(lease.holdCount, 1);
    await lease.release();
    const maybe = await padlock.mutex('undefined-options').tryAcquire({ signal: undefined });
    assert.notEqual(maybe, null);
    await maybe?.release();
  });

  it('surfaces Redis errors as typed errors with the cause', async () => {
    const admin = connect(server);
    await admin.set('padlock:{wrong}:lock', 'a string');
    const padlock = padlockOn(server);
    await assert.rejects(padlock.mutex('wrong').acquire(), (e: unknown) => e instanceof RedisCommandError && /WRONGTYPE/.test(e.message) && e.cause !== undefined);
    const down = await startServer();
    // How long a dead server takes to fail a command is the client's setting (maxRetriesPerRequest).
    const p = new Padlock({ redis: connect(down, { maxRetriesPerRequest: 1 }) });
    await down.kill();
    await assert.rejects(p.mutex('down').tryAcquire(), (e: unknown) => e instanceof RedisUnavailableError && e.cause !== undefined);
    await p.close();
  });

  it("times out with a whole number of milliseconds waited and the awaiting caller's frame in the stack (a timer made the error)", async () => {
    const holder = padlockOn(server);
    const waiter = padlockOn(server);
    try {
      const lease = await holder.mutex('timeout-stack').acquire();
      async function callerOfTimeoutStack(): Promise<unknown> {
        return await waiter.mutex('timeout-stack').acquire({ waitMs: 150 });
      }
      await assert.rejects(callerOfTimeoutStack(), (e: unknown) => {
        assert.ok(e instanceof LockTimeoutError);
        assert.ok(Number.isInteger(e.waitedMs) && e.waitedMs >= 150, `waitedMs ${e.waitedMs}`);
        assert.match(e.message, new RegExp(`timed out after ${e.waitedMs} ms`));
        assert.match(e.stack ?? '', /^LockTimeoutError: timed out after \d+ ms waiting for lock "timeout-stack"\n/);
        assert.match(e.stack ?? '', /callerOfTimeoutStack/);
        return true;
      });
      async function callerOfMultiTimeout(): Promise<unknown> {
        return await waiter.multi(['timeout-free', 'timeout-stack']).acquire({ waitMs: 150 });
      }
      await assert.rejects(callerOfMultiTimeout(), (e: unknown) => e instanceof LockTimeoutError && /callerOfMultiTimeout/.test(e.stack ?? ''));
      await lease.release();
    } finally {
      await holder.close();
      await waiter.close();
    }
  });
});
