/**
 * Fault matrix, contention storm: many processes, each with many concurrent acquirers, on one lock.
 */
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { Padlock } from '../../src/index.js';
import { connect, startServer } from '../harness/redis.js';
import { describeReport, isLive, isSafe } from './checker.js';
import { hasFairMutex, type LockKind } from './lock-clients.js';
import { openServers, runChecked, type Servers } from './scenario.js';

let servers: Servers;
let fair = false;
before(async () => {
  servers = await openServers({ startServer, connect });
  const probe = new Padlock({ redis: connect(servers.lock) });
  fair = hasFairMutex(probe);
  await probe.close();
});

describe('fault: contention storm across processes', () => {
  for (const kind of ['mutex', 'fairMutex'] as const satisfies readonly LockKind[]) {
    it(`${kind}: 6 processes × 8 acquirers × 12 sections on one lock`, async (t) => {
      if (kind === 'fairMutex' && !fair) {
        t.skip('padlock.fairMutex does not exist yet in src/padlock.ts');
        return;
      }
      const { report, exits } = await runChecked(servers, { kind, workers: 6, slots: 8, sections: 12, leaseMs: 2_000, workMs: [0, 1] });
      assert.ok(isSafe(report) && isLive(report), describeReport(report));
      assert.equal(report.sections, 6 * 8 * 12);
      assert.ok(exits.every((e) => e.clean), 'every worker exited by itself');
      t.diagnostic(`max wait ${report.maxWaitMs.toFixed(0)} ms over ${report.sections} sections`);
    });
  }
});
