/**
 * A server that stalls past a lease (`DEBUG SLEEP`) while someone waits: `acquire()` never
 * resolves with a lease whose time has already run out by this client's conservative clock. A
 * grant that arrives out of time is renewed at once if the server still has it (the waiter keeps
 * its turn), else given back, and the wait goes on — or fails typed at its deadline.
 */
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import type { RedisServer } from '../src/devserver/redis-server.js';
import type { Redis } from 'ioredis';
import { LockTimeoutError, type Lease } from '../src/index.js';
import { connect, delay, eventually, padlockOn, startServer } from './harness/redis.js';

let server: RedisServer;
before(async () => {
  server = await startServer({ args: ['--enable-debug-command', 'yes'] });
});

/** A holder of `name` with a fixed 1 s lease, a waiter queued behind it, and the server's fence of the holder. */
async function heldWithWaiter(name: string, waitMs: number): Promise<{ fence: number; waiting: Promise<Lease> }> {
  const holder = padlockOn(server);
  const held = await holder.mutex(name).acquire({ leaseMs: 1_000 });
  const admin = connect(server);
  const waiting = padlockOn(server).mutex(name).acquire({ waitMs, leaseMs: 1_000 });
  waiting.catch(() => undefined);
  // Queued: its attempt found the lock held (the holder's client is recorded, the waiter's entry queued).
  assert.ok(await eventually(async () => (await admin.llen(`padlock:{${name}}:queue`)) >= 1, 5_000), 'the waiter is queued');
  return { fence: held.fence, waiting };
}

/**
 * The waiter's lease is held with time left, after the holder's (`holderFence`), and the server
 * holds `name` for it (the lock key's value is `<fence>|<owner>|<count>|…`); then it is released.
 */
async function assertServed(admin: Redis, name: string, lease: Lease, holderFence: number): Promise<void> {
  assert.equal(lease.isHeld, true, 'the lease returned is held');
  assert.ok(lease.expiresAt > Date.now(), `it has time left (expires in ${lease.expiresAt - Date.now()} ms)`);
  assert.ok(lease.fence > holderFence);
  const [storedFence, , count] = ((await admin.get(`padlock:{${name}}:lock`)) ?? '').split('|');
  assert.deepEqual([storedFence, Number(count) > 0, (await admin.pttl(`padlock:{${name}}:lock`)) > 0], [String(lease.fence), true, true], 'the server holds it for this lease');
  await lease.release();
}

describe('a server stalled past the lease while a waiter waits', () => {
  it('the waiter gets a lease with time left, and the server holds it for the waiter', async () => {
    const admin = connect(server);
    const { fence, waiting } = await heldWithWaiter('stall:renewed', 30_000);
    // Past the holder's 1 s lease: the waiter's attempt is granted when the server wakes, and its reply comes too late.
    await admin.call('DEBUG', 'SLEEP', '2');
    await assertServed(admin, 'stall:renewed', await waiting, fence);
  });

  it('a late grant the server no longer has is given back, and the wait goes on to a lease with time left', async () => {
    const admin = connect(server);
    const stall = connect(server);
    const { fence, waiting } = await heldWithWaiter('stall:retaken', 30_000);
    // Two stalls: the grant is made between them, and by the time its reply is read and a renewal
    // sent, the grant's 1 s has run out on the server too.
    const first = admin.call('DEBUG', 'SLEEP', '2');
    await delay(1_500);
    const second = stall.call('DEBUG', 'SLEEP', '1.5');
    await Promise.all([first, second]);
    // The server holds it for this lease: the late grant given back was not this one.
    await assertServed(admin, 'stall:retaken', await waiting, fence);
  });

  it('at its deadline, the wait fails with LockTimeoutError and leaves the lock free', async () => {
    const admin = connect(server);
    const stall = connect(server);
    // A waiter with a 50 ms lease (a heartbeat every 16 ms) and 1.2 s to wait, behind a 1 s holder.
    const holder = padlockOn(server);
    await holder.mutex('stall:timeout').acquire({ leaseMs: 1_000 });
    const started = Date.now();
    const waiting = padlockOn(server).mutex('stall:timeout').acquire({ waitMs: 1_200, leaseMs: 50 });
    waiting.catch(() => undefined);
    const at = (ms: number): Promise<void> => delay(Math.max(0, started + ms - Date.now()));
    // Stalled from 0.7 s to 1.25 s: the waiter's heartbeat, sent as the stall began, is granted as
    // it ends (the holder's lease ended at 1 s), for 50 ms; a second stall of 150 ms, queued behind
    // that heartbeat, holds back its reply past the grant's end and past the wait's deadline. Its
    // renewal finds the grant gone, and the wait has no time left.
    await at(700);
    const first = admin.call('DEBUG', 'SLEEP', '0.55');
    await at(950);
    const second = stall.call('DEBUG', 'SLEEP', '0.15');
    await Promise.all([first, second]);
    await assert.rejects(waiting, LockTimeoutError);
    const left = (await admin.get('padlock:{stall:timeout}:lock')) ?? '';
    assert.ok(left === '' || left.split('|')[2] === '0', `nothing left held (${left})`);
  });
});
