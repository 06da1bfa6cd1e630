/**
 * Fault matrix, the Redis server: frozen (SIGSTOP), paused (CLIENT PAUSE), killed and restarted
 * empty, its script cache flushed, and the holder's connections killed (CLIENT KILL), each while a
 * worker holds the lock and others wait for it.
 */
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { releaseScript, renewScript } from '../../src/stores/redis/scripts/index.js';
import { connect, delay, eventually, startServer } from '../harness/redis.js';
import { describeReport, isLive, isSafe } from './checker.js';
import { isStopped } from './fleet.js';
import { openServers, runWithHeldFault, type Servers } from './scenario.js';

const LEASE_MS = 300;
/** For the rows where the hold must survive: a lease a busy machine's hiccup cannot outlast. */
const STURDY_LEASE_MS = 2_000;

let servers: Servers;
before(async () => {
  servers = await openServers({ startServer, connect });
});

const base = { workers: 3, sections: 6, leaseMs: LEASE_MS, workMs: [1, 4] as const };

/** Milliseconds a fresh command takes on a new connection to the lock's server. */
async function probeLatency(): Promise<number> {
  const probe = new Redis({ port: servers.lock.port, host: servers.lock.host, maxRetriesPerRequest: null });
  probe.on('error', () => undefined);
  const started = performance.now();
  await probe.set('probe', '1');
  probe.disconnect();
  return performance.now() - started;
}

describe('fault: Redis server', () => {
  it('redis-server frozen (SIGSTOP) past the lease: the holder is told, nobody overlaps, all are served after SIGCONT', async () => {
    const { report, fleet, exits } = await runWithHeldFault(servers, {
      ...base,
      inject: async () => {
        servers.lock.pause();
        try {
          // SIGSTOP is delivered asynchronously: the state reads T a moment later, not at once.
          assert.ok(await eventually(() => isStopped(servers.lock.pid), 2_000), 'redis-server is stopped');
          await delay(LEASE_MS * 3);
        } finally {
          servers.lock.resume();
        }
      },
    });
    assert.ok(isSafe(report) && isLive(report), describeReport(report));
    assert.equal(fleet.completed.find((s) => s.worker === 0 && s.seq === 0)?.lost, 'expired', 'the holder learnt it lost the lock');
    assert.ok(exits.every((e) => e.clean));
  });

  it('CLIENT PAUSE past the lease: same outcome', async () => {
    const { report, fleet } = await runWithHeldFault(servers, {
      ...base,
      inject: async () => {
        await servers.admin.call('CLIENT', 'PAUSE', String(LEASE_MS * 3), 'ALL');
        const latency = await probeLatency();
        assert.ok(latency > LEASE_MS, `commands are held back while paused (${latency.toFixed(0)} ms)`);
      },
    });
    assert.ok(isSafe(report) && isLive(report), describeReport(report));
    assert.equal(fleet.completed.find((s) => s.worker === 0 && s.seq === 0)?.lost, 'expired');
  });

  it('redis-server killed and restarted empty: the holder is told at its next renewal; fences keep increasing, off the server\'s clock', async () => {
    let before = 0;
    const { report, fleet, exits } = await runWithHeldFault(servers, {
      ...base, name: 'restart',
      inject: async (held) => {
        before = held.fence;
        await servers.lock.restart();
        await delay(LEASE_MS);
      },
    });
    const holder = fleet.completed.find((s) => s.worker === 0 && s.seq === 0);
    assert.notEqual(holder?.lost, null, 'the holder learnt it lost the lock');
    // The fence key went with the data, but fences rest on the server's clock (docs/protocol.md):
    // the holders after the restart get greater fences, and the store takes their writes.
    const after = fleet.completed.filter((s) => s.write === 'ok' && s.fence > before);
    assert.ok(after.length > 0, `a holder after the restart wrote with a greater fence: ${describeReport(report)}`);
    assert.equal(report.staleWritesAccepted, 0, describeReport(report));
    assert.equal(report.lostUpdates, 0, describeReport(report));
    assert.ok(isLive(report), describeReport(report));
    assert.ok(exits.every((e) => e.clean));
  });

  it('SCRIPT FLUSH while holding: renewals and release reload the scripts, the hold survives', async () => {
    const { report, fleet } = await runWithHeldFault(servers, {
      ...base, leaseMs: STURDY_LEASE_MS,
      inject: async () => {
        await servers.admin.script('FLUSH');
        assert.deepEqual(await servers.admin.script('EXISTS', renewScript.sha, releaseScript.sha), [0, 0], 'the cache is empty');
        assert.ok(await eventually(async () => ((await servers.admin.script('EXISTS', renewScript.sha)) as number[])[0] === 1, STURDY_LEASE_MS * 2), 'a renewal reloaded its script');
        await delay(LEASE_MS * 2);
      },
    });
    const holder = fleet.completed.find((s) => s.worker === 0 && s.seq === 0);
    assert.equal(holder?.lost, null, 'the hold was kept');
    assert.equal(holder?.write, 'ok');
    assert.equal(holder?.releaseError, null);
    assert.ok(isSafe(report) && isLive(report), describeReport(report));
  });

  it('CLIENT KILL of the holder\'s and the waiters\' connections: they reconnect, the hold survives, waiters are served', async () => {
    const { report, fleet } = await runWithHeldFault(servers, {
      ...base, leaseMs: STURDY_LEASE_MS,
      inject: async () => {
        let ids: (string | undefined)[] = [];
        const named = async (): Promise<boolean> => {
          const list = (await servers.admin.call('CLIENT', 'LIST')) as string;
          ids = list.split('\n').filter((line) => /name=safety-w\d+ /.test(line)).map((line) => /id=(\d+)/.exec(line)?.[1]);
          return ids.length >= 5; // three command connections, and the two waiters' subscriber connections
        };
        assert.ok(await eventually(named), `found the workers' connections: ${ids.length}`);
        for (const id of ids) if (id !== undefined) await servers.admin.call('CLIENT', 'KILL', 'ID', id);
        const after = (await servers.admin.call('CLIENT', 'LIST')) as string;
        for (const id of ids) assert.ok(!after.includes(`id=${id} `), 'the connections are gone');
        await delay(LEASE_MS * 2);
      },
    });
    const holder = fleet.completed.find((s) => s.worker === 0 && s.seq === 0);
    assert.equal(holder?.lost, null, 'the hold was kept');
    assert.equal(holder?.write, 'ok');
    assert.ok(isSafe(report) && isLive(report), describeReport(report));
  });
});
