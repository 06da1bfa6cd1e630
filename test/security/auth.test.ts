/**
 * Secured servers: AUTH with `requirepass`, and an ACL user allowed only padlock's keys, channels
 * and commands. Everything padlock does works through them, and a refusal surfaces at once as a
 * typed error naming what Redis said (WRONGPASS, NOAUTH, NOPERM), never as a time-out.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { RedisOptions } from 'ioredis';
import type { RedisServer } from '../../src/devserver/redis-server.js';
import { Padlock, PadlockError, RedisCommandError, type PadlockOptions } from '../../src/index.js';
import { connect, eventually, startServer } from '../harness/redis.js';
import { fullCycle } from './cycle.js';

/** The commands padlock's Lua scripts call, read from the scripts themselves. */
function scriptCommands(): string[] {
  const dir = resolve(dirname(fileURLToPath(import.meta.url)), '../../../src/stores/redis/scripts');
  const commands = new Set<string>();
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.lua'))) {
    for (const match of readFileSync(join(dir, file), 'utf8').matchAll(/redis\.p?call\(\s*'([A-Za-z]+)'/g)) commands.add(match[1]?.toLowerCase() ?? '');
  }
  return [...commands].sort();
}

/** Every command padlock sends itself, and every command its scripts call (PUBLISH by name: the scripts take it as an argument). */
const PADLOCK_COMMANDS = ['evalsha', 'eval', 'subscribe', 'unsubscribe', 'publish', ...scriptCommands()];

/** A refusal must come back well within this (a time-out would take the wait, or ioredis's ~10 s of retries). */
const QUICK_MS = 2_000;

const padlocks: Padlock[] = [];
function padlockFor(server: RedisServer, client: RedisOptions, options: Omit<PadlockOptions, 'redis'> = {}): Padlock {
  const padlock = new Padlock({ redis: connect(server, client), ...options });
  padlocks.push(padlock);
  return padlock;
}

after(async () => {
  await Promise.allSettled(padlocks.map((p) => p.close()));
});

/** Runs `call` and returns its error and how long it took to come. */
async function failure(call: () => Promise<unknown>): Promise<{ error: unknown; ms: number }> {
  const started = performance.now();
  try {
    await call();
  } catch (error) {
    return { error, ms: performance.now() - started };
  }
  assert.fail('expected the call to fail');
}

describe('security: requirepass', () => {
  let server: RedisServer;
  before(async () => {
    server = await startServer({ args: ['--requirepass', 'correct horse'] });
  });

  it('acquire, wait, renew, re-enter and release work with the password', async () => {
    const options = { password: 'correct horse' };
    await fullCycle(padlockFor(server, options), padlockFor(server, options), 'auth:cycle');
  });

  for (const [label, client, pattern] of [
    ['a wrong password', { password: 'battery staple' }, /WRONGPASS/],
    ['no password', {}, /NOAUTH/],
    ['an unknown user', { username: 'nobody', password: 'x' }, /WRONGPASS/],
  ] as const) {
    it(`${label} fails acquire at once with a typed error naming it`, async () => {
      const padlock = padlockFor(server, client);
      for (const call of [() => padlock.mutex('auth:refused').acquire(), () => padlock.mutex('auth:refused').tryAcquire(), () => padlock.mutex('auth:refused').isLocked()]) {
        const { error, ms } = await failure(call);
        assert.ok(error instanceof RedisCommandError, `got ${String(error)}`);
        assert.match(error.message, pattern);
        assert.ok(ms < QUICK_MS, `failed after ${Math.round(ms)} ms`);
      }
    });
  }
});

describe('security: an ACL user limited to the lock prefix', () => {
  let server: RedisServer;
  let admin: ReturnType<typeof connect>;
  /** Creates user `name` with password 'pw' and the given rules on top of `reset on`. */
  const user = (name: string, ...rules: string[]): Promise<unknown> => admin.call('ACL', 'SETUSER', name, 'reset', 'on', '>pw', ...rules);
  const grants = (commands: readonly string[]): string[] => commands.map((c) => `+${c}`);
  // INFO is not padlock's: ioredis's ready check would ask for it, so it is turned off instead.
  const as = (name: string): RedisOptions => ({ username: name, password: 'pw', enableReadyCheck: false });

  before(async () => {
    assert.ok(['hset', 'pexpire', 'publish'].every((c) => PADLOCK_COMMANDS.includes(c)), `commands read from the scripts: ${PADLOCK_COMMANDS.join(' ')}`);
    server = await startServer();
    admin = connect(server);
    await user('locker', '~padlock:*', '&padlock:*', ...grants(PADLOCK_COMMANDS));
    await admin.call('ACL', 'LOG', 'RESET');
  });

  it('padlock needs nothing beyond its prefix and its command list: a full cycle leaves the ACL log empty', async () => {
    await admin.script('FLUSH'); // so that the EVAL fallback runs too
    await fullCycle(padlockFor(server, as('locker')), padlockFor(server, as('locker')), 'acl:cycle');
    assert.deepEqual(await admin.call('ACL', 'LOG'), [], 'no command, key or channel was denied');
  });

  it('the same holds for the fair mutex (its queue and heartbeat scripts)', async () => {
    await fullCycle(padlockFor(server, as('locker')), padlockFor(server, as('locker')), 'acl:fair', 'fairMutex');
    assert.deepEqual(await admin.call('ACL', 'LOG'), [], 'no command, key or channel was denied');
  });

  it('keys outside the user\'s pattern: RedisCommandError naming NOPERM, at once', async () => {
    await user('elsewhere', '~other:*', '&other:*', ...grants(PADLOCK_COMMANDS));
    const padlock = padlockFor(server, as('elsewhere'));
    for (const call of [() => padlock.mutex('acl:keys').acquire(), () => padlock.mutex('acl:keys').isLocked(), () => padlock.mutex('acl:keys').forceRelease()]) {
      const { error, ms } = await failure(call);
      assert.ok(error instanceof RedisCommandError, `got ${String(error)}`);
      assert.match(error.message, /NOPERM.*keys/);
      assert.ok(ms < QUICK_MS);
    }
    // The same user is fine under its own prefix.
    await fullCycle(padlockFor(server, as('elsewhere'), { prefix: 'other' }), padlockFor(server, as('elsewhere'), { prefix: 'other' }), 'acl:own-prefix');
  });

  it('a command the user lacks: RedisCommandError naming NOPERM and the command', async () => {
    await user('noeval', '~padlock:*', '&padlock:*', ...grants(PADLOCK_COMMANDS.filter((c) => c !== 'evalsha' && c !== 'eval')));
    const { error, ms } = await failure(() => padlockFor(server, as('noeval')).mutex('acl:noeval').acquire());
    assert.ok(error instanceof RedisCommandError, `got ${String(error)}`);
    assert.match(error.message, /NOPERM.*evalsha/);
    assert.ok(ms < QUICK_MS);
  });

  it('a command a script lacks: RedisCommandError, and nothing half-written', async () => {
    // TIME seeds the first fence of a lock, before anything is written.
    await user('notime', '~padlock:*', '&padlock:*', ...grants(PADLOCK_COMMANDS.filter((c) => c !== 'time')));
    const { error } = await failure(() => padlockFor(server, as('notime')).mutex('acl:notime').acquire());
    assert.ok(error instanceof RedisCommandError, `got ${String(error)}`);
    assert.match(error.message, /can't run this command|NOPERM/);
    assert.equal(await admin.exists('padlock:{acl:notime}:lock'), 0, 'no hold was written');
  });

  it('channels outside the user\'s pattern: a waiting acquire fails with a typed error naming NOPERM', async () => {
    await user('nochannels', '~padlock:*', 'resetchannels', ...grants(PADLOCK_COMMANDS));
    const holder = await padlockFor(server, as('locker')).mutex('acl:channels').acquire();
    try {
      const { error, ms } = await failure(() => padlockFor(server, as('nochannels')).mutex('acl:channels').acquire({ waitMs: 3_000 }));
      assert.ok(ms < QUICK_MS, `failed after ${Math.round(ms)} ms`);
      assert.ok(error instanceof Error && /NOPERM/.test(error.message), `got ${String(error)}`);
      assert.ok(error instanceof RedisCommandError, `a typed error, got ${error.name}`);
    } finally {
      await holder.release();
    }
  });

  it('no PUBLISH on its channel: a release that must wake a waiter fails typed and says so', async () => {
    await user('nopublish', '~padlock:*', 'resetchannels', ...grants(PADLOCK_COMMANDS));
    const padlock = padlockFor(server, as('nopublish'));
    const lease = await padlock.mutex('acl:publish').acquire();
    const waiter = padlockFor(server, as('locker')).mutex('acl:publish').acquire({ waitMs: 5_000 });
    assert.ok(await eventually(async () => (await admin.llen('padlock:{acl:publish}:queue')) === 1), 'the waiter queued');
    const { error } = await failure(() => lease.release());
    await padlock.mutex('acl:publish').forceRelease().catch(() => undefined);
    await (await waiter.catch(() => undefined))?.release();
    assert.ok(error instanceof PadlockError && error instanceof RedisCommandError, `got ${String(error)}`);
    assert.match(error.message, /publish/i);
  });
});
