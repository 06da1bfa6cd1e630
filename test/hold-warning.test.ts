/**
 * `holdWarning`: a hold that has used 80 % of its lease without a renewal — a fixed lease nearly
 * over, or a renewed lease whose renewals fail — is announced once, with the advice to size leases
 * from measured hold times. Renewed holds that renew, and holds released in time, say nothing.
 */
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import type { RedisServer } from '../src/devserver/redis-server.js';
import { monotonicNow } from '../src/clock.js';
import type { HoldWarningEvent } from '../src/index.js';
import { delay, eventually, padlockOn, startServer } from './harness/redis.js';

let server: RedisServer;
before(async () => {
  server = await startServer();
});

function warnings(padlock: ReturnType<typeof padlockOn>): (HoldWarningEvent & { at: number })[] {
  const seen: (HoldWarningEvent & { at: number })[] = [];
  padlock.on('holdWarning', (warning) => seen.push({ ...warning, at: monotonicNow() }));
  return seen;
}

describe('holdWarning', () => {
  it('warns once when a fixed lease is 80 % used, before it is lost, with the advice to size leases from hold times', async () => {
    const padlock = padlockOn(server);
    const seen = warnings(padlock);
    const start = monotonicNow();
    const lease = await padlock.mutex('hw:fixed').acquire({ leaseMs: 500 });
    assert.ok(await eventually(() => lease.signal.aborted, 3_000), 'the fixed lease runs out');
    const lostAt = monotonicNow();
    assert.equal(seen.length, 1, 'one warning');
    const [warning] = seen;
    assert.ok(warning !== undefined);
    assert.equal(warning.name, 'hw:fixed');
    assert.equal(warning.owner, lease.owner);
    assert.equal(warning.fence, lease.fence);
    assert.equal(warning.reason, 'fixed-lease');
    assert.equal(warning.leaseMs, 500);
    assert.ok(warning.at - start >= 380 && warning.at < lostAt, `warned after ${(warning.at - start).toFixed(0)} ms, before the loss`);
    assert.ok(warning.heldMs >= 380 && warning.heldMs <= 500, `held ${warning.heldMs} ms`);
    assert.ok(warning.remainingMs > 0 && warning.remainingMs <= 110, `${warning.remainingMs} ms left`);
    assert.match(warning.message, /^lock "hw:fixed" has been held 0\.\d s of its fixed 0\.5 s lease/);
    assert.match(warning.message, /size leaseMs from measured hold times \(the padlock\.lock\.hold\.duration metric\)/);
  });

  it('says nothing for a fixed lease released in time, nor for renewed leases', async () => {
    const padlock = padlockOn(server, { leaseMs: 150 });
    const seen = warnings(padlock);
    const fixed = await padlock.mutex('hw:quick').acquire({ leaseMs: 400 });
    await delay(200);
    await fixed.release();
    const renewed = await padlock.mutex('hw:renewed').acquire();
    const extended = await padlock.mutex('hw:auto').acquire({ leaseMs: 150, autoExtend: true });
    await delay(800); // past the released lease's 80 %, and more than five renewed leases
    assert.ok(renewed.isHeld && extended.isHeld);
    await renewed.release();
    await extended.release();
    assert.deepEqual(seen, []);
  });

  it('warns when renewals fail for 80 % of the lease (Redis silent), before the lock is lost', async () => {
    const own = await startServer();
    const padlock = padlockOn(own, { leaseMs: 600, replyTimeoutMs: 100 });
    padlock.on('error', () => undefined); // the failed renewals
    const seen = warnings(padlock);
    const lease = await padlock.mutex('hw:silent').acquire();
    own.pause();
    try {
      assert.ok(await eventually(() => lease.signal.aborted, 5_000), 'lost at its deadline');
    } finally {
      own.resume();
    }
    assert.equal(seen.length, 1);
    const [warning] = seen;
    assert.equal(warning?.reason, 'renewals-failing');
    assert.match(warning.message, /^lock "hw:silent": no renewal has succeeded for 80 % of its 0\.6 s lease, and it is lost in 0\.\d s unless one does/);
  });
});
