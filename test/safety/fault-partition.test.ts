/**
 * Fault matrix, a network partition between the holder and Redis: the holder runs in its own
 * network namespace, joined to the host by a veth pair, and nftables drops its packets to the
 * lock's server (not to the store's) for longer than the lease. Skipped, with the reason, where the
 * machine does not allow namespaces.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect, startServer } from '../harness/redis.js';
import { describeReport, isLive, isSafe } from './checker.js';
import { Namespace, partitionUnavailable } from './netns.js';
import { openServers, runWithHeldFault, type Servers } from './scenario.js';

const LEASE_MS = 300;

let unavailable: string | null;
let ns: Namespace | undefined;
let servers: Servers;
before(async () => {
  unavailable = await partitionUnavailable();
  if (unavailable !== null) return;
  ns = await Namespace.create();
  // The servers listen on loopback and on the host's end of the veth.
  const provider = {
    startServer: (options?: { args?: readonly string[] }) =>
      startServer({ args: ['--bind', '127.0.0.1', ns?.hostAddress ?? '127.0.0.1', '--protected-mode', 'no', ...(options?.args ?? [])] }),
    connect,
  };
  servers = await openServers(provider);
});
after(() => ns?.remove());

describe('fault: network partition (ip netns + veth + nftables)', () => {
  it('the partitioned holder is told, the others get the lock, its late write is refused, its release leaves the new key alone', async (t) => {
    if (unavailable !== null || ns === undefined) {
      t.skip(`no network namespaces here: ${unavailable ?? 'setup failed'}`);
      return;
    }
    const space = ns;
    const { report, fleet } = await runWithHeldFault(servers, {
      workers: 3, sections: 5, leaseMs: LEASE_MS, workMs: [1, 4],
      // Worker 0 lives in the namespace and reaches both servers through the veth.
      configure: (worker) =>
        worker === 0
          ? { lockServer: { host: space.hostAddress, port: servers.lock.port }, storeServer: { host: space.hostAddress, port: servers.store.port } }
          : {},
      wrap: (config) => (config.worker === 0 ? space.wrapper : undefined),
      inject: async (_held, _holder, fleet) => {
        await space.cut(servers.lock.port);
        try {
          await fleet.next('section', (s) => s.worker !== 0 && s.write === 'ok');
          assert.ok((await space.dropped()) > 0, 'the holder\'s renewals were dropped');
        } finally {
          await space.heal();
        }
      },
    });
    const holder = fleet.completed.find((s) => s.worker === 0 && s.seq === 0);
    assert.equal(holder?.lost, 'expired', 'the holder learnt it lost the lock');
    assert.equal(holder?.write, 'refused', 'its late write was refused');
    assert.equal(holder?.releaseError, 'LockNotHeldError');
    assert.ok(isSafe(report) && isLive(report), describeReport(report));
  });
});
