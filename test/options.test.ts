import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import type { RedisServer } from '../src/devserver/redis-server.js';
import { Padlock, PadlockOptionError, RedisUnavailableError, RedisCommandError } from '../src/index.js';
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
    assert.throws(() => new Padlock({} as never), isOptionError('redis'));
    assert.throws(() => new Padlock({ redis: {} as never }), isOptionError('redis'));
    assert.throws(() => new Padlock({ redis, prefix: '' }), isOptionError('prefix'));
    assert.throws(() => new Padlock({ redis, prefix: 'a{b}' }), isOptionError('prefix'));
    assert.throws(() => new Padlock({ redis, leaseMs: NaN }), isOptionError('leaseMs'));
    assert.throws(() => new Padlock({ redis, leaseMs: 5 }), isOptionError('leaseMs'));
    assert.throws(() => new Padlock({ redis, leaseMs: Infinity }), isOptionError('leaseMs'));
    assert.throws(() => new Padlock({ redis, leasMs: 10 } as never), isOptionError('options.leasMs'));
    assert.throws(() => new Padlock({ redis, leaseMs: NaN }), /leaseMs must be a finite number from 10 to 2147483647, got NaN/);
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
    assert.equal(await commandCalls(admin, 'evalsha'), before + 2, 'only the good acquire and release reached Redis');
  });

  it('accepts Infinity for waitMs and names with braces, spaces, unicode and at the length limit', async () => {
    const padlock = padlockOn(server);
    for (const name of ['{x}', '}{', 'a b', 'zé🔒', '%7B', 'x'.repeat(1_000)]) {
      const lease = await padlock.mutex(name).acquire({ waitMs: Infinity });
      assert.equal(await padlock.mutex(name).isLocked(), true);
      await lease.release();
    }
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
});
