/**
 * The fixed-lease hint: `withLock(fn, { leaseMs })` without `autoExtend` is not renewed, and when
 * that lease runs out while `fn` still runs padlock warns, once per process
 * (`PADLOCK_FIXED_LEASE_EXPIRED`). It stays silent for a renewed lease, for a fixed lease whose
 * function ends in time, and for `acquire()`. Once per process: the silent cases run first.
 */
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { LockLostError, type Padlock } from '../src/index.js';
import { FIXED_LEASE_WARNING } from '../src/locks/fixed-lease-warning.js';
import { delay, padlockOn, startServer } from './harness/redis.js';

const warnings: Error[] = [];
process.on('warning', (warning) => {
  if ((warning as Error & { code?: string }).code === FIXED_LEASE_WARNING) warnings.push(warning);
});

let padlock: Padlock;
before(async () => {
  padlock = padlockOn(await startServer());
});

describe('the fixed-lease hint', { concurrency: false }, () => {
  it('is silent for a renewed lease (autoExtend: true), for a fixed lease whose function ends in time, and for acquire()', async () => {
    await padlock.withLock('fixed:renewed', () => delay(1_500), { leaseMs: 1_000, autoExtend: true });
    await padlock.withLock('fixed:in-time', () => delay(10), { leaseMs: 1_000 });
    await padlock.multi(['fixed:m1', 'fixed:m2']).withLock(() => delay(1_500), { leaseMs: 1_000, autoExtend: true });
    const lease = await padlock.mutex('fixed:acquire').acquire({ leaseMs: 100 });
    await delay(300);
    assert.equal(lease.isHeld, false, 'the fixed lease ran out');
    await lease.release().catch(() => undefined);
    await delay(50);
    assert.deepEqual(warnings, []);
  });

  it('warns once per process when a fixed lease runs out while its withLock function still runs', async () => {
    await assert.rejects(padlock.withLock('fixed:trap', () => delay(400), { leaseMs: 100 }), LockLostError);
    await delay(50);
    assert.equal(warnings.length, 1);
    assert.equal(warnings[0]?.name, 'PadlockWarning');
    assert.match(warnings[0]?.message ?? '', /withLock\("fixed:trap"\): its fixed lease of 100 ms .* autoExtend: true/);
    await assert.rejects(padlock.multi(['fixed:t1', 'fixed:t2']).withLock(() => delay(400), { leaseMs: 100 }), LockLostError);
    await delay(50);
    assert.equal(warnings.length, 1, 'once per process');
  });
});

describe("withLock and its lease's signal", () => {
  it('makes no AbortController for a lease whose signal nobody reads (an uncontended withLock), and still rejects with the loss a read signal reports', async () => {
    const Original = globalThis.AbortController;
    let made = 0;
    globalThis.AbortController = class extends Original {
      constructor() {
        super();
        made++;
      }
    };
    try {
      for (let i = 0; i < 3; i++) assert.equal(await padlock.withLock('signal:lazy', () => i), i);
      assert.equal(made, 0, 'no AbortController per withLock');
      await padlock.withLock('signal:read', (lease) => assert.equal(lease.signal.aborted, false));
      assert.equal(made, 1, 'made when read');
    } finally {
      globalThis.AbortController = Original;
    }
  });
});
