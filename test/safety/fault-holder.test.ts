/**
 * Fault matrix, the holder's process: SIGKILL, SIGSTOP past its lease, and an event loop blocked
 * past its lease. Each row checks that the fault took effect, then the outcome: the lock comes back,
 * a paused holder is told it lost the lock, its late write is refused by the fenced store, its
 * release leaves the new holder's key alone, and the checker finds nothing wrong.
 */
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import type { Padlock } from '../../src/index.js';
import { connect, eventually, padlockOn, startServer } from '../harness/redis.js';
import { describeReport, isSafe } from './checker.js';
import { FencedStore } from './fenced-store.js';
import { isStopped, type WorkerHandle } from './fleet.js';
import { ms, type SectionRecord } from './records.js';
import { ParentHolder, openServers, runChecked, type Servers } from './scenario.js';
import { holdsOf } from '../harness/lock-state.js';

const LEASE_MS = 300;
/** docs/safety.md, known bug 1. */
/** "No hang" bound for the lock to come back after its holder died: the lease plus scheduling slack. */
const FREED_WITHIN_MS = LEASE_MS + 1_500;

let servers: Servers;
let parent: Padlock;
before(async () => {
  servers = await openServers({ startServer, connect });
  parent = padlockOn(servers.lock);
});

describe('fault: holder killed (SIGKILL)', () => {
  {
    const seq = 2;
    it('the lock is free again within the lease, the survivors are served, nothing overlaps', async () => {
      let freedAfterMs = Infinity;
      const { report, fleet, exits } = await runChecked(servers, {
        workers: 3, sections: 8, leaseMs: LEASE_MS, workMs: [1, 4],
        // The survivors start once the holder holds (the fleet tells them): see Fleet.
        configure: (worker) => (worker === 0 ? { linger: { seq } } : { waitForGo: true }),
        during: async (fleet) => {
          const [, holder] = await fleet.next('holding');
          const killedAt = process.hrtime.bigint();
          holder.child.kill('SIGKILL');
          const exit = await holder.exited;
          assert.equal(exit.signal, 'SIGKILL', 'the holder really died');
          const [next] = await fleet.next('acquired', (r) => r.worker !== 0 && r.acquiredAt > killedAt);
          freedAfterMs = ms(next.acquiredAt - killedAt);
        },
      });
      assert.ok(isSafe(report), describeReport(report));
      assert.equal(fleet.completed.filter((s) => s.worker !== 0).length, 2 * 8, 'the survivors were all served');
      assert.ok(exits.slice(1).every((e) => e.clean));
      assert.ok(freedAfterMs < FREED_WITHIN_MS, `the next holder got the lock ${freedAfterMs.toFixed(0)} ms after the kill (lease ${LEASE_MS} ms)`);
    });
  }
});

describe('lease of a fresh hold taken right after a release', () => {
  it('is the lease asked for, not the release tombstone\'s TTL', async () => {
    const lock = parent.mutex(`tombstone:${process.hrtime.bigint()}`);
    const first = await lock.acquire({ leaseMs: LEASE_MS });
    await first.release();
    const second = await lock.acquire({ leaseMs: LEASE_MS });
    const pttl = await servers.admin.pttl(`padlock:{${lock.name}}:lock`);
    assert.ok(pttl <= LEASE_MS, `the key lives ${pttl} ms for a ${LEASE_MS} ms lease`);
    assert.ok(second.expiresAt - Date.now() <= LEASE_MS, `the client expects ${(second.expiresAt - Date.now()).toFixed(0)} ms`);
    await second.release();
  });
});

/**
 * A holder that has read the store is frozen by `freeze` past its lease; the parent takes the lock
 * once Redis expired it and does its own read-modify-write; then the holder resumes.
 */
async function pausedHolderRow(
  freeze: (holder: WorkerHandle) => Promise<void>,
  thaw: (holder: WorkerHandle) => void,
  stallMs?: number,
): Promise<{ stale: SectionRecord; next: ParentHolder; report: ReturnType<typeof describeReport>; safe: boolean }> {
  const name = `paused:${stallMs === undefined ? 'signal' : 'stall'}:${process.hrtime.bigint()}`;
  const lock = parent.mutex(name);
  const store = new FencedStore(servers.storeClient, name);
  let next: ParentHolder | undefined;
  const { report, fleet } = await runChecked(servers, {
    name, workers: 1, sections: 1, leaseMs: LEASE_MS,
    configure: () => ({ linger: stallMs === undefined ? { seq: 0 } : { seq: 0, stallMs } }),
    parentSections: () => (next === undefined ? [] : [next.record]),
    during: async (fleet) => {
      const [held, holder] = await fleet.next('holding');
      assert.equal(held.read, 'ok');
      await freeze(holder);
      assert.ok(await eventually(async () => !(await lock.isLocked()), FREED_WITHIN_MS), 'Redis expired the frozen holder\'s key');
      next = await ParentHolder.acquire(lock, store, 5_000);
      assert.ok(next.lease.fence > held.fence);
      assert.equal(await next.readModifyWrite(), true);
      const finished = fleet.next('section');
      thaw(holder);
      await finished;
      next.confirm();
      assert.equal(next.lease.isHeld, true, 'the new holder still holds after the stale release');
      assert.equal(await holdsOf(servers.admin, `padlock:{${name}}:lock`, next.lease.owner), 1, 'its key is intact');
      await next.release();
    },
  });
  const stale = fleet.completed[0];
  assert.ok(stale !== undefined && next !== undefined);
  return { stale, next, report: describeReport(report), safe: isSafe(report) };
}

function assertStaleHolderHandled(stale: SectionRecord, next: ParentHolder): void {
  assert.notEqual(stale.lost, null, 'the lease signal fired with a LockLostError');
  assert.ok(stale.validUntil !== null && stale.validUntil < next.record.acquiredAt, 'the stale holder stopped claiming the lock before the next one got it');
  assert.equal(stale.write, 'refused', 'the fenced store refused the stale write');
  assert.equal(stale.releaseError, 'LockNotHeldError', 'the stale release reported the loss');
}

describe('fault: holder paused past its lease', () => {
  it('SIGSTOP then SIGCONT: lost signal, stale write refused, new holder\'s key kept', async () => {
    const { stale, next, report, safe } = await pausedHolderRow(
      async (holder) => {
        holder.child.kill('SIGSTOP');
        // The signal is delivered asynchronously: the kernel may show the state a moment later.
        assert.ok(await eventually(() => isStopped(holder.pid), 2_000), 'the holder is stopped');
      },
      (holder) => {
        holder.child.kill('SIGCONT');
        holder.send({ type: 'continue' });
      },
    );
    assertStaleHolderHandled(stale, next);
    assert.ok(safe, report);
  });

  it('event loop blocked (Atomics.wait) past the lease: same outcome', async () => {
    const { stale, next, report, safe } = await pausedHolderRow(
      () => Promise.resolve(),
      () => undefined,
      LEASE_MS * 5,
    );
    assertStaleHolderHandled(stale, next);
    assert.equal(stale.lost, 'expired');
    assert.ok(safe, report);
  });
});
