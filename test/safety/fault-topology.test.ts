/**
 * Fault matrix on topologies: worker processes hold the lock on a Redis Cluster, a Sentinel set or a
 * Redlock set
 * (each section a fenced read-modify-write on a separate store server) while a node fails. What
 * must hold whatever happens to the lock: the protected data stays right (no lost update, no stale
 * read or write accepted, fences in order). Where the topology promises more (a failover under
 * replica acknowledgement), no two valid holds overlap either.
 */
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { connect, delay, startServer, startServers } from '../harness/redis.js';
import type { RedisServer } from '../../src/devserver/redis-server.js';
import { startCluster, startSentinelSet, type RedisCluster, type SentinelSet } from '../harness/topologies.js';
import { lockKeys } from '../../src/keys.js';
import { describeReport, isLive, isSafe, type SafetyReport } from './checker.js';
import { openServers, runChecked, type RunOptions, type Servers } from './scenario.js';
import type { LockTopology } from './worker.js';

/** The data is right, whatever the lock did: the fence did its job. */
function dataSafe(report: SafetyReport): boolean {
  return (
    report.lostUpdates === 0 &&
    report.staleWritesAccepted === 0 &&
    report.staleReadsAccepted === 0 &&
    report.fenceViolations.length === 0 &&
    report.finalValue === report.acceptedWrites
  );
}

/** Long enough that only the fault, not a busy machine, can cost a hold. */
const LEASE_MS = 2_000;
const base: Omit<RunOptions, 'lockTopology'> = { workers: 3, sections: 12, leaseMs: LEASE_MS, workMs: [1, 4], timeoutMs: 90_000 };

let servers: Servers;
before(async () => {
  servers = await openServers({ startServer, connect }); // the store lives on its own server
});

describe('fault matrix: Redis Cluster (3 masters, a replica each)', () => {
  let cluster: RedisCluster;
  let lockTopology: LockTopology = { cluster: [] };
  before(async () => {
    cluster = await startCluster();
    lockTopology = { cluster: cluster.nodes.map((n) => ({ host: n.host, port: n.port })) };
  });

  it('a master that does not serve the lock frozen for a while: nothing changes', async () => {
    const name = `cluster-freeze-${process.pid}`;
    const lockMaster = await cluster.nodeForKey(lockKeys('padlock', name).lock);
    const other = (await cluster.masters()).find((m) => m !== lockMaster);
    assert.ok(other !== undefined);
    const { report } = await runChecked(servers, {
      ...base, name, lockTopology,
      during: async (fleet) => {
        await fleet.next('section');
        other.pause();
        await delay(1_500);
        other.resume();
      },
    });
    assert.ok(isSafe(report) && isLive(report), describeReport(report));
  });

  it('the lock\'s master killed mid-run: its replica takes over; the data stays right and every section is served', async (t) => {
    const name = `cluster-kill-${process.pid}`;
    // After the freeze before, the frozen master may have been failed over: read the lock's master
    // only once every node agrees again (a node's stale view can name a master that is a replica now).
    await cluster.waitForHealthy();
    const lockMaster = await cluster.nodeForKey(lockKeys('padlock', name).lock);
    const { report } = await runChecked(servers, {
      ...base, name, lockTopology,
      during: async (fleet) => {
        await fleet.next('section');
        const failover = await cluster.failover(lockMaster, 'kill');
        t.diagnostic(`failover took ${failover.ms} ms`);
      },
    });
    t.diagnostic(describeReport(report));
    assert.ok(dataSafe(report), describeReport(report));
    assert.ok(isLive(report), describeReport(report));
    await cluster.revive(lockMaster);
  });
});

describe('fault matrix: Sentinel (a primary, 2 replicas, 3 sentinels)', () => {
  let set: SentinelSet;
  let lockTopology: LockTopology = { cluster: [] };
  before(async () => {
    set = await startSentinelSet({ replicas: 2 });
    lockTopology = { sentinels: set.sentinels.map((s) => ({ host: s.host, port: s.port })), name: set.name };
  });

  it('primary killed mid-run, with replicas.min 1: no two valid holds overlap, the data stays right, every section is served', async (t) => {
    const { report } = await runChecked(servers, {
      ...base, name: `sentinel-acked-${process.pid}`, lockTopology, replicas: { min: 1, timeoutMs: 500 },
      during: async (fleet) => {
        await fleet.next('section');
        const failover = await set.failover('kill');
        t.diagnostic(`failover took ${failover.ms} ms`);
        await set.revive(failover.previous);
      },
    });
    assert.ok(isSafe(report), describeReport(report));
    assert.ok(isLive(report), describeReport(report));
  });

  it('primary killed mid-run, without acknowledgement: the data stays right (fences), every section is served', async (t) => {
    const { report } = await runChecked(servers, {
      ...base, name: `sentinel-plain-${process.pid}`, lockTopology,
      during: async (fleet) => {
        await fleet.next('section');
        const failover = await set.failover('kill');
        t.diagnostic(`failover took ${failover.ms} ms`);
        await set.revive(failover.previous);
      },
    });
    t.diagnostic(describeReport(report));
    assert.ok(dataSafe(report), describeReport(report));
    assert.ok(isLive(report), describeReport(report));
  });
});

describe('fault matrix: Redlock (5 independent masters)', () => {
  let masters: RedisServer[];
  let lockTopology: LockTopology = { masters: [] };
  before(async () => {
    masters = await startServers(5);
    lockTopology = { masters: masters.map((m) => ({ host: m.host, port: m.port })) };
  });

  it('two masters frozen mid-run: nothing overlaps, the data stays right, every section is served', async () => {
    const { report } = await runChecked(servers, {
      ...base, name: `redlock-minority-${process.pid}`, lockTopology,
      during: async (fleet) => {
        await fleet.next('section');
        for (const m of masters.slice(0, 2)) m.pause();
        await delay(2_500);
        for (const m of masters.slice(0, 2)) m.resume();
      },
    });
    assert.ok(isSafe(report) && isLive(report), describeReport(report));
  });

  it('three masters frozen mid-run, then back: no overlap, the data stays right, every section is served once they return', async (t) => {
    const { report } = await runChecked(servers, {
      ...base, name: `redlock-majority-${process.pid}`, lockTopology,
      during: async (fleet) => {
        await fleet.next('section');
        for (const m of masters.slice(0, 3)) m.pause();
        await delay(2_500);
        for (const m of masters.slice(0, 3)) m.resume();
      },
    });
    t.diagnostic(describeReport(report));
    assert.ok(isSafe(report), describeReport(report));
    assert.ok(isLive(report), describeReport(report));
  });
});
