/**
 * The checker turns red on the textbook mistakes. Each broken client differs from a correct lock
 * by one mistake only (see broken-locks.ts); the "no fence check" variant is padlock with a store
 * that does not enforce fences.
 */
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { Padlock } from '../../src/index.js';
import { connect, eventually, startServer } from '../harness/redis.js';
import { describeReport, isSafe } from './checker.js';
import { openServers, runChecked, type Servers } from './scenario.js';

let servers: Servers;
before(async () => {
  servers = await openServers({ startServer, connect });
});

describe('checker: broken variants are caught', () => {
  it('a plain DEL release: a holder whose lease ran out deletes its successor\'s key', async () => {
    const { report } = await runChecked(servers, {
      kind: 'broken-plain-del', workers: 3, sections: 40, leaseMs: 60, workMs: [2, 6],
      stall: { probability: 0.15, ms: 150 },
    });
    assert.ok(report.overlaps.length > 0, describeReport(report));
    assert.equal(isSafe(report), false);
    assert.equal(report.staleWritesAccepted, 0, 'the fenced store still refused the stale holders');
  });

  it('SET without NX: two callers get the lock at once', async () => {
    const { report } = await runChecked(servers, {
      kind: 'broken-no-nx', workers: 3, sections: 40, leaseMs: 1_000, workMs: [1, 4],
      // All three run at once: the others start when worker 0 first holds (on a busy machine, a
      // worker started late could find the others' sections all done, and overlap none).
      configure: (worker) => (worker === 0 ? { linger: { seq: 0, stallMs: 1 } } : { waitForGo: true }),
    });
    assert.ok(report.overlaps.length > 0, describeReport(report));
    assert.equal(isSafe(report), false);
  });

  it('a client-clock deadline: a client whose wall clock runs ahead takes held locks', async () => {
    const { report } = await runChecked(servers, {
      kind: 'broken-client-clock', workers: 3, sections: 40, leaseMs: 300, workMs: [2, 6],
      // The client whose clock runs ahead starts once worker 1 holds (which keeps its first hold
      // 100 ms): on a busy machine it could otherwise run its sections before or after the others,
      // and overlap none.
      configure: (worker) => (worker === 0 ? { clock: { offsetMs: 1_000 }, waitForGo: true } : worker === 1 ? { linger: { seq: 0, stallMs: 100 } } : {}),
    });
    assert.ok(report.overlaps.length > 0, describeReport(report));
    assert.equal(isSafe(report), false);
  });

  it('no fence check in the store: a stale holder\'s write lands and an update is lost', async () => {
    const operator = new Padlock({ redis: connect(servers.lock) });
    const { report } = await runChecked(servers, {
      // Worker 1 starts once worker 0 holds its second section (on a busy machine worker 0 may start
      // so late that worker 1 had run all its sections before); fairMutex, so that worker 1 cannot
      // barge through worker 0's sections.
      name: 'broken:no-fence-check', kind: 'fairMutex', storeMode: 'unchecked', workers: 2, sections: 40, leaseMs: 1_000, workMs: [1, 3],
      configure: (worker) => (worker === 0 ? { linger: { seq: 1 } } : { waitForGo: true }),
      during: async (fleet) => {
        // Worker 0 has read the store and holds the lock: take it away (as an expiry would) and let
        // worker 1 complete a section with a higher fence before worker 0 writes.
        const [held, worker] = await fleet.next('holding');
        assert.equal(await operator.fairMutex('broken:no-fence-check').forceRelease(), true);
        assert.ok(await eventually(() => fleet.completed.some((s) => s.worker === 1 && s.fence > held.fence && s.write === 'ok')));
        worker.send({ type: 'continue' });
      },
    });
    await operator.close();
    assert.ok(report.staleWritesAccepted > 0, describeReport(report));
    assert.ok(report.lostUpdates > 0, describeReport(report));
    assert.equal(isSafe(report), false);
  });
});
