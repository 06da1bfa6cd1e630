/**
 * The safety checker over Redlock's own faults (5 independent masters; 3 worker processes, each
 * section a fenced read-modify-write on a separate store server): a minority killed, and a majority
 * restarted empty while a section is held. No two valid holds may overlap, the data must stay
 * right, and every section must be served while (or once) a majority lives.
 */
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { connect, delay, startServer, startServers } from '../harness/redis.js';
import type { RedisServer } from '../../src/devserver/redis-server.js';
import { describeReport, isLive, isSafe } from './checker.js';
import { openServers, runChecked, type Servers } from './scenario.js';
import type { LockTopology } from './worker.js';

let servers: Servers;
let masters: RedisServer[];
let lockTopology: LockTopology = { masters: [] };
before(async () => {
  servers = await openServers({ startServer, connect }); // the store lives on its own server
  masters = await startServers(5);
  lockTopology = { masters: masters.map((m) => ({ host: m.host, port: m.port })) };
});

describe('fault matrix: Redlock faults (5 masters, 3 workers)', () => {
  it('2 of 5 masters killed mid-run (3 s renewed leases: room for a CPU-starved CI machine; 1 s leases are proven in test/redlock-faults.test.ts), restarted empty later: no hold lost, none overlapping, every section served', async (t) => {
    const { report } = await runChecked(servers, {
      workers: 3, sections: 10, leaseMs: 3_000, workMs: [100, 300], timeoutMs: 90_000, name: `redlock-kill-minority-${process.pid}`, lockTopology,
      during: async (fleet) => {
        await fleet.next('acquired');
        await Promise.all(masters.slice(3).map((m) => m.kill()));
        // Several leases' worth of sections on the three left.
        await fleet.next('section');
        await fleet.next('section');
        await fleet.next('section');
        await Promise.all(masters.slice(3).map((m) => m.restart()));
      },
    });
    t.diagnostic(describeReport(report));
    assert.ok(isSafe(report) && isLive(report), describeReport(report));
    assert.equal(report.lostHolds, 0, `a lost minority cost holds: ${describeReport(report)}`);
  });

  it('3 of 5 masters restarted empty while a section is held (6 s leases): no overlapping valid holds, the data right, every section served once they count again', async (t) => {
    const { report } = await runChecked(servers, {
      workers: 3, sections: 4, leaseMs: 6_000, workMs: [1, 4], timeoutMs: 90_000, name: `redlock-restart-majority-${process.pid}`, lockTopology,
      // Worker 0 holds at its section 1, having read the store; the others start once it holds.
      configure: (worker) => (worker === 0 ? { linger: { seq: 1 } } : { waitForGo: true }),
      during: async (fleet) => {
        const [, holder] = await fleet.next('holding');
        await Promise.all(masters.slice(0, 3).map((m) => m.kill()));
        await Promise.all(masters.slice(0, 3).map((m) => m.restart()));
        // Long enough for a waiter to try the lock again (its heartbeat: 1 s) while the section is held.
        await delay(2_500);
        holder.send({ type: 'continue' });
      },
    });
    t.diagnostic(describeReport(report));
    assert.ok(isSafe(report), describeReport(report));
    assert.ok(isLive(report), describeReport(report));
    // The holder, told at its next renewal that it lost the lock, still writes when it continues: its
    // write is refused only if a second holder (a greater fence) got in meanwhile, on the restarted masters.
    assert.equal(report.staleRefused, 0, `a second holder took the lock while the restarted masters sat out: ${describeReport(report)}`);
  });
});
