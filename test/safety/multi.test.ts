/**
 * The multi-lock's safety property, checked across OS processes: a multi-lock never overlaps a
 * holder of any of its names (another multi-lock, whatever the order of its names, or a mutex),
 * under contention, with a holder paused (SIGSTOP) past its lease, and with a holder killed.
 */
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { connect, eventually, startServer } from '../harness/redis.js';
import { describeReport, isSafe } from './checker.js';
import { isStopped } from './fleet.js';
import { completedSections, resourceOf, runMultiChecked, type MultiRunResult } from './multi-scenario.js';
import { openServers, type Servers } from './scenario.js';

const LEASE_MS = 300;
const RESOURCES = ['r:a', 'r:b', 'r:c'];
/** Worker 0 locks all three names; the others lock overlapping sets in other orders, or one name with a mutex. */
const SETS = [
  [['r:a', 'r:b', 'r:c']],
  [['r:c', 'r:b', 'r:a'], ['r:b']],
  [['r:b', 'r:a'], ['r:c']],
  [['r:c', 'r:a'], ['r:a']],
];

let servers: Servers;
before(async () => {
  servers = await openServers({ startServer, connect });
});

function assertSafe(result: MultiRunResult): void {
  for (const [name, report] of result.reports) {
    assert.ok(report.sections > 0, `${name} was held`);
    assert.ok(isSafe(report), `${name}:\n${describeReport(report)}`);
  }
}

describe('multi-lock safety across OS processes', () => {
  it('under contention: no name is ever held by two owners at once, no update is lost', async () => {
    const result = await runMultiChecked(servers, { resources: RESOURCES, sets: SETS, sections: 12, slots: 2, leaseMs: 1_000, workMs: [0, 3] });
    assertSafe(result);
    for (const worker of SETS.keys()) assert.equal(completedSections(result.fleet, worker), 2 * 12, `worker ${worker} was served`);
    assert.ok(result.exits.every((exit) => exit.clean));
  });

  it('a multi-lock holder paused (SIGSTOP) past its lease: others take its names, its stale writes are refused, it is told', async () => {
    let stoppedAt = 0n;
    const result = await runMultiChecked(servers, {
      resources: RESOURCES, sets: SETS, sections: 4, leaseMs: LEASE_MS, lingerSeq: 1,
      during: async (fleet) => {
        const [, holder] = await fleet.next('holding');
        holder.child.kill('SIGSTOP');
        assert.ok(await eventually(() => isStopped(holder.pid), 2_000), 'the holder is stopped');
        stoppedAt = process.hrtime.bigint();
        // Another worker holds one of its names (so its lease ran out) and writes while it is stopped.
        await fleet.next('section', (record) => record.worker !== 0 && record.acquiredAt > stoppedAt && record.write === 'ok');
        holder.child.kill('SIGCONT');
        holder.send({ type: 'continue' });
      },
    });
    assertSafe(result);
    const stale = result.fleet.completed.filter((record) => record.worker === 0 && record.seq === 1 && Math.floor(record.slot / 100) === 0);
    assert.equal(stale.length, RESOURCES.length, 'the paused section held every name');
    for (const record of stale) {
      assert.notEqual(record.lost, null, `${resourceOf(record, RESOURCES)}: the lease's signal fired`);
      assert.equal(record.releaseError, 'LockNotHeldError');
    }
    assert.ok(stale.some((record) => record.write === 'refused'), 'a stale write was refused by its fence');
    assert.ok(result.exits.every((exit) => exit.clean));
  });

  it('a multi-lock holder killed (SIGKILL): its names come back after the lease, the others are all served', async () => {
    const result = await runMultiChecked(servers, {
      resources: RESOURCES, sets: SETS, sections: 4, leaseMs: LEASE_MS, lingerSeq: 1,
      during: async (fleet) => {
        const [, holder] = await fleet.next('holding');
        holder.child.kill('SIGKILL');
        assert.equal((await holder.exited).signal, 'SIGKILL');
      },
    });
    assertSafe(result);
    for (const worker of [1, 2, 3]) assert.equal(completedSections(result.fleet, worker), 4, `worker ${worker} was served`);
    assert.ok(result.exits.slice(1).every((exit) => exit.clean));
  });
});
