/**
 * Fault matrix, the client's wall clock: stepping `Date` (only the wall clock: monotonic clocks are
 * untouched, as with NTP or an operator) changes nothing. The same skew breaks the client-clock
 * variant (broken-variants.test.ts).
 */
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { connect, delay, padlockOn, startServer } from '../harness/redis.js';
import { describeReport, isLive, isSafe } from './checker.js';
import { shiftWallClock } from './fake-clock.js';
import { openServers, runChecked, type Servers } from './scenario.js';

let servers: Servers;
before(async () => {
  servers = await openServers({ startServer, connect });
});

describe('fault: client wall-clock jumps', () => {
  it('in one process: a held lease renews through ±1 h jumps and stays held', async () => {
    const padlock = padlockOn(servers.lock, { leaseMs: 300 });
    const lease = await padlock.mutex('clock:local').acquire();
    let offset = 0;
    const restore = shiftWallClock(() => offset);
    try {
      const before = lease.expiresAt;
      offset = 3_600_000;
      assert.ok(Date.now() - before > 3_000_000, 'the fake clock moved');
      await delay(400);
      assert.equal(lease.isHeld, true);
      offset = -3_600_000;
      await delay(400);
      assert.equal(lease.isHeld, true);
      assert.equal(lease.signal.aborted, false);
    } finally {
      restore();
    }
    assert.ok(Math.abs(lease.expiresAt - Date.now()) < 1_000, 'expiresAt follows the real clock again');
    await lease.release();
  });

  it('across processes: workers whose clocks are hours apart, and jump mid-run, still exclude each other', async () => {
    const offsets = [0, 3_600_000, -3_600_000, 86_400_000];
    const { report } = await runChecked(servers, {
      // A lease long enough that only a clock jump, not a busy machine stalling a worker, could lose it.
      workers: 4, sections: 20, leaseMs: 2_000, workMs: [1, 4],
      configure: (worker) => ({ clock: { offsetMs: offsets[worker] ?? 0, jumpMs: worker % 2 === 0 ? 7_200_000 : -7_200_000, jumpAfterMs: 300 } }),
    });
    assert.ok(isSafe(report) && isLive(report), describeReport(report));
    assert.equal(report.lostHolds, 0, 'no hold was lost to a clock jump');
  });
});
