/**
 * The read/write lock's safety property, across OS processes: readers and a writer never hold at
 * once (nor two writers), while readers do share the lock; with a holder paused past its lease
 * (SIGSTOP) and a holder killed (SIGKILL). Intervals are the workers' own (process.hrtime, one
 * monotonic clock for the machine), from acquire's return to the last instant the client still
 * believed it held the lock.
 */
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import type { RedisServer } from '../../src/devserver/redis-server.js';
import { eventually, startServer } from '../harness/redis.js';
import { isStopped } from './fleet.js';
import { checkReadWrite, type ReadWriteReport } from './read-write-checker.js';
import { ReadWriteFleet } from './read-write-fleet.js';
import type { ReadWriteWorkerConfig } from './read-write-worker.js';

let server: RedisServer;
before(async () => {
  server = await startServer();
});

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function configs(name: string, workers: number, overrides: (worker: number) => Partial<ReadWriteWorkerConfig> = () => ({})): ReadWriteWorkerConfig[] {
  return Array.from({ length: workers }, (_, worker) => ({
    worker, url: server.url, name, sections: 12, slots: 2, leaseMs: 2_000, readShare: 0.75, workMs: [2, 10] as const, seed: 7 + worker,
    ...overrides(worker),
  }));
}

function assertSafe(report: ReadWriteReport): void {
  assert.deepEqual(report.writerOverlaps, [], 'a writer overlapped another holder');
  assert.deepEqual(report.fenceViolations, []);
}

describe('safety: read/write lock across OS processes', () => {
  it('readers share, writers exclude everyone (4 processes × 2 slots, 75 % reads)', async () => {
    const fleet = new ReadWriteFleet(configs(`rw-safety:plain:${process.hrtime.bigint()}`, 4));
    await fleet.finish();
    const report = checkReadWrite(fleet.sections);
    assertSafe(report);
    assert.equal(report.sections, 4 * 2 * 12, `every section was served (${fleet.failures.join('; ')})`);
    assert.ok(report.writes > 0, 'some sections wrote');
    assert.ok(report.readerOverlaps > 0, 'readers held the lock together');
    assert.ok(new Set(fleet.sections.map((s) => s.worker)).size === 4);
  });

  it('a reader paused (SIGSTOP) past its lease loses it alone; the writer then admitted never overlaps it', async () => {
    const leaseMs = 500;
    const fleet = new ReadWriteFleet(configs(`rw-safety:stop:${process.hrtime.bigint()}`, 3, (worker) => (worker === 0 ? { linger: 'read', leaseMs, sections: 1, slots: 1 } : { readShare: 0.5, waitForGo: true })));
    const [held, paused] = await fleet.holding();
    paused.child.kill('SIGSTOP');
    assert.ok(await eventually(() => isStopped(paused.pid), 2_000), 'the reader is stopped');
    const stoppedAt = process.hrtime.bigint();
    await sleep(leaseMs * 4);
    paused.child.kill('SIGCONT');
    paused.child.send({ type: 'continue' });
    await fleet.finish();
    const report = checkReadWrite(fleet.sections);
    assertSafe(report);
    const stale = fleet.sections.find((s) => s.owner === held.owner);
    assert.ok(stale !== undefined && stale.lost !== null, 'the paused reader was told its hold was lost');
    assert.ok(fleet.sections.some((s) => s.side === 'write' && s.worker !== 0 && s.acquiredAt > stoppedAt), 'writers went on while it was paused');
    assert.equal(fleet.sections.filter((s) => s.worker !== 0).length, 2 * 2 * 12, 'the others were all served');
  });

  it('a writer killed (SIGKILL) while holding: its lease runs out and everyone else is served, without overlap', async () => {
    const leaseMs = 500;
    const fleet = new ReadWriteFleet(configs(`rw-safety:kill:${process.hrtime.bigint()}`, 3, (worker) => (worker === 0 ? { linger: 'write', leaseMs, sections: 1, slots: 1 } : { waitForGo: true })));
    const [, holder] = await fleet.holding();
    holder.child.kill('SIGKILL');
    assert.equal((await holder.exited).signal, 'SIGKILL');
    await fleet.finish();
    const report = checkReadWrite(fleet.sections);
    assertSafe(report);
    assert.equal(fleet.sections.filter((s) => s.worker !== 0).length, 2 * 2 * 12, 'the others were all served');
  });
});
