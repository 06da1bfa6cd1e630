/**
 * Fault matrix, all Redis down: every call ends with a typed error within a bound, a holder is told
 * it lost its lock, and a process that closes its Padlock and client exits by itself (nothing left
 * open). Runs in a child process so that "exits by itself" can be observed.
 */
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { UnavailableReport } from './unavailable-child.js';

const CHILD = fileURLToPath(new URL('./unavailable-child.js', import.meta.url));

interface ChildRun {
  readonly report: UnavailableReport;
  readonly code: number | null;
  /** Time from the report line to the process's exit, in ms. */
  readonly exitAfterMs: number;
}

function runChild(): Promise<ChildRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CHILD], { stdio: ['ignore', 'pipe', 'inherit'] });
    let output = '';
    let reportedAt = 0;
    const guard = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (reportedAt === 0 && output.includes('\n')) reportedAt = performance.now();
    });
    child.on('error', reject);
    child.on('exit', (code) => {
      clearTimeout(guard);
      try {
        resolve({ report: JSON.parse(output) as UnavailableReport, code, exitAfterMs: performance.now() - reportedAt });
      } catch (error) {
        reject(new Error(`child failed (code ${code}): ${output}`, { cause: error }));
      }
    });
  });
}

let run: ChildRun;
before(async () => {
  run = await runChild();
});

describe('fault: all Redis down', () => {
  it('tryAcquire rejects with RedisUnavailableError within padlock\'s own bound, whatever the client\'s retry budget', () => {
    const { tryAcquire } = run.report;
    assert.equal(tryAcquire.error, 'RedisUnavailableError', JSON.stringify(tryAcquire));
    assert.equal(tryAcquire.code, 'REDIS_UNAVAILABLE');
    // The 1 s grace (README, "When Redis is down"); the client alone would take ~10 s.
    assert.ok(tryAcquire.tookMs < 1_000 + 2_000, `no hang: ${tryAcquire.tookMs.toFixed(0)} ms`);
  });

  it('acquire({ waitMs }) rejects within waitMs, with an error that says Redis was unreachable', () => {
    const { acquireWithWait } = run.report;
    assert.ok(acquireWithWait.code !== null, `a typed PadlockError: ${JSON.stringify(acquireWithWait)}`);
    assert.ok(acquireWithWait.tookMs < 1_000 + 2_000, `within waitMs: ${acquireWithWait.tookMs.toFixed(0)} ms`);
    assert.ok(
      acquireWithWait.saysUnavailable,
      `Redis was never reachable, yet the rejection is a bare ${acquireWithWait.error} ("timed out waiting for lock") with no RedisUnavailableError as cause`,
    );
  });

  it('a holder whose Redis dies is told within its lease; release then says the lock is not held', () => {
    const { holderLost, releaseAfterLoss } = run.report;
    assert.equal(holderLost.reason, 'expired');
    assert.ok(holderLost.afterMs < 300 + 1_500, `lost after ${holderLost.afterMs.toFixed(0)} ms`);
    assert.equal(releaseAfterLoss.error, 'LockNotHeldError');
    assert.ok(releaseAfterLoss.tookMs < 1_000);
  });

  it('close() returns within its bound and the process exits by itself', () => {
    assert.ok(run.report.closeMs < 5_000 + 1_000, `close took ${run.report.closeMs.toFixed(0)} ms`);
    assert.equal(run.code, 0);
    // ioredis keeps one reconnect timer of up to 2 s after disconnect(); nothing else may remain.
    assert.ok(run.exitAfterMs < 5_000, `exited ${run.exitAfterMs.toFixed(0)} ms after closing`);
  });
});
