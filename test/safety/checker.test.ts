/**
 * The checker itself: it flags each kind of violation in hand-made records, and padlock's locks
 * pass it under contention with holders stalling past their leases.
 */
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { Padlock } from '../../src/index.js';
import { connect, startServer } from '../harness/redis.js';
import { check, describeReport, isLive, isSafe, type SafetyReport } from './checker.js';
import type { StoreEntry } from './fenced-store.js';
import { hasFairMutex } from './lock-clients.js';
import type { SectionRecord } from './records.js';
import { openServers, runChecked, type Servers } from './scenario.js';

const MS = 1_000_000n;

/** docs/safety.md, known bug 1. */

function hold(fence: number, from: number, until: number | null, owner = `owner-${fence}`): SectionRecord {
  return {
    worker: 0, slot: 0, seq: fence, owner, fence,
    waitStartedAt: BigInt(from) * MS, acquiredAt: BigInt(from) * MS,
    validUntil: until === null ? null : BigInt(until) * MS, releasedAt: BigInt(until ?? from) * MS,
    read: 'ok', write: 'ok', lost: null, releaseError: null,
  };
}

function write(fence: number, current: number, expected: number, stale = false): StoreEntry {
  return { op: 'write', fence, accepted: true, stale, current, expected, owner: `owner-${fence}` };
}

describe('checker: detects each violation in hand-made histories', () => {
  const clean = [hold(1, 0, 10), hold(2, 11, 20), hold(3, 21, 30)];
  const cleanStore = [write(1, 0, 0), write(2, 1, 1), write(3, 2, 2)];

  it('passes a clean history', () => {
    const report = check({ sections: clean, store: cleanStore, finalValue: 3, expectedSections: 3 });
    assert.ok(isSafe(report) && isLive(report), describeReport(report));
  });

  it('flags overlapping valid holds, but not a hold that was no longer valid', () => {
    const overlapping = check({ sections: [hold(1, 0, 10), hold(2, 5, 20)], store: [], finalValue: 0, expectedSections: 2 });
    assert.equal(overlapping.overlaps.length, 1);
    assert.equal(overlapping.overlaps[0]?.overlapMs, 5);
    const expired = check({ sections: [hold(1, 0, 4), hold(2, 5, 20)], store: [], finalValue: 0, expectedSections: 2 });
    assert.equal(expired.overlaps.length, 0);
    const neverValid = check({ sections: [hold(1, 0, null), hold(2, 5, 20)], store: [], finalValue: 0, expectedSections: 2 });
    assert.equal(neverValid.overlaps.length, 0);
  });

  it('flags lost updates, stale writes accepted and a counter that does not add up', () => {
    const report = check({ sections: clean, store: [write(1, 0, 0), write(2, 1, 0, true)], finalValue: 1, expectedSections: 3 });
    assert.equal(report.lostUpdates, 1);
    assert.equal(report.staleWritesAccepted, 1);
    assert.equal(isSafe(report), false);
    assert.equal(isSafe(check({ sections: clean, store: cleanStore, finalValue: 2, expectedSections: 3 })), false);
  });

  it('flags duplicate and decreasing fences', () => {
    const duplicate = check({ sections: [hold(1, 0, 10), hold(1, 11, 20, 'other')], store: [], finalValue: 0, expectedSections: 2 });
    assert.ok(duplicate.fenceViolations.some((v) => v.includes('two owners')));
    const decreasing = check({ sections: [hold(5, 0, 10), hold(3, 11, 20)], store: [], finalValue: 0, expectedSections: 2 });
    assert.ok(decreasing.fenceViolations.some((v) => v.includes('after fence 5')));
    // A grant whose process was paused before acquire returned, and that had expired by then.
    const pausedGrant = check({ sections: [hold(5, 0, 10), hold(3, 11, null)], store: [], finalValue: 0, expectedSections: 2 });
    assert.deepEqual(pausedGrant.fenceViolations, []);
  });

  it('flags unserved sections', () => {
    const report = check({ sections: clean, store: cleanStore, finalValue: 3, expectedSections: 5 });
    assert.equal(report.unserved, 2);
    assert.equal(isLive(report), false);
  });
});

describe('checker: padlock passes', () => {
  let servers: Servers;
  let mutexReport: SafetyReport | undefined;
  before(async () => {
    servers = await openServers({ startServer, connect });
  });

  it('mutex: 4 processes × 2 acquirers × 25 sections, some stalling past their lease', async () => {
    const { report, exits } = await runChecked(servers, {
      workers: 4, slots: 2, sections: 25, leaseMs: 200, workMs: [0, 4],
      stall: { probability: 0.03, ms: 450 },
    });
    mutexReport = report;
    assert.ok(isSafe(report), describeReport(report));
    assert.ok(isLive(report), describeReport(report));
    assert.ok(exits.every((e) => e.clean), `workers exit by themselves: ${JSON.stringify(exits)}`);
  });

  it('mutex: in that run, stalls past the lease cost the lease and the store refused the stalled holders', () => {
    const report = mutexReport;
    assert.ok(report !== undefined, 'the run above completed');
    assert.ok(report.lostHolds > 0, `some stalls cost the lease (so the run tested something): ${describeReport(report)}`);
    assert.ok(report.staleRefused > 0, `the store refused the stalled holders: ${describeReport(report)}`);
  });

  it('fairMutex: 4 processes × 2 acquirers × 25 sections', async (t) => {
    const probe = new Padlock({ redis: connect(servers.lock) });
    const available = hasFairMutex(probe);
    await probe.close();
    if (!available) {
      t.skip('padlock.fairMutex does not exist yet in src/padlock.ts');
      return;
    }
    const { report } = await runChecked(servers, {
      kind: 'fairMutex', workers: 4, slots: 2, sections: 25, leaseMs: 200, workMs: [0, 4],
      stall: { probability: 0.03, ms: 450 },
    });
    assert.ok(isSafe(report), describeReport(report));
    assert.ok(isLive(report), describeReport(report));
  });
});
