/**
 * Fault matrix, the network between client and Redis, through a TCP proxy (proxy.ts): replies lost
 * (the connection resets after the server did the work; the client resends) and replies delayed
 * past the lease.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect, delay, startServer } from '../harness/redis.js';
import { describeReport, isLive, isSafe } from './checker.js';
import { RedisProxy } from './proxy.js';
import { Random } from './random.js';
import { openServers, runChecked, runWithHeldFault, type Servers } from './scenario.js';
import { isHeld } from '../harness/lock-state.js';

const LEASE_MS = 300;

let servers: Servers;
let proxy: RedisProxy;
before(async () => {
  servers = await openServers({ startServer, connect });
  proxy = await RedisProxy.start(servers.lock);
});
after(() => proxy.close());

describe('fault: lost and delayed replies', () => {
  it('lost replies: resent scripts apply once, nobody overlaps, all are served, the lock ends free', async () => {
    proxy.loseReplies(0.05, new Random(7));
    const { report, exits } = await runChecked(servers, {
      name: 'proxy:lost', workers: 3, sections: 20, leaseMs: LEASE_MS, workMs: [1, 4],
      lockEndpoint: { host: proxy.host, port: proxy.port },
    });
    proxy.loseReplies(0, new Random(0));
    assert.ok(proxy.stats.lostReplies >= 3, `replies were lost: ${JSON.stringify(proxy.stats)}`);
    assert.ok(isSafe(report) && isLive(report), describeReport(report));
    assert.ok(exits.every((e) => e.clean));
    assert.equal(await isHeld(servers.admin, 'padlock:{proxy:lost}:lock'), false, 'no hold was left behind');
  });

  it('replies delayed past the lease: the holder is told, the others get the lock, nobody overlaps', async () => {
    const { report, fleet } = await runWithHeldFault(servers, {
      workers: 3, sections: 5, leaseMs: LEASE_MS, workMs: [1, 4],
      // Only the holder talks to Redis through the proxy.
      configure: (worker) => (worker === 0 ? { lockServer: { host: proxy.host, port: proxy.port } } : {}),
      inject: async (_held, _holder, fleet) => {
        proxy.delayReplies(LEASE_MS * 3);
        const before = proxy.stats.delayedReplies;
        await fleet.next('section', (s) => s.worker !== 0);
        assert.ok(proxy.stats.delayedReplies > before, 'the renewals\' replies were held back');
        await delay(LEASE_MS);
        proxy.delayReplies(0);
      },
    });
    assert.equal(fleet.completed.find((s) => s.worker === 0 && s.seq === 0)?.lost, 'expired');
    assert.ok(isSafe(report) && isLive(report), describeReport(report));
  });
});
