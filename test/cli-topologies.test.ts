/**
 * The operator commands on a real Redis Cluster (`redis-cli --cluster create`: SCAN on every
 * master, a Cluster found out from one node's URL or named with --cluster) and on a Sentinel set
 * (`redis+sentinel://`).
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Padlock, type Lease } from '../src/index.js';
import { lockKeys } from '../src/keys.js';
import type { InspectReport } from '../src/cli/inspect.js';
import type { ListReport } from '../src/cli/list.js';
import type { ReleaseReport } from '../src/cli/release.js';
import type { WatchFrame } from '../src/cli/watch.js';
import { startCluster, startSentinelSet, type RedisCluster, type SentinelSet } from './harness/topologies.js';
import { eventually } from './harness/redis.js';
import { assertOneLineError, runBin, type Run } from './harness/cli.js';

const padlocks: Padlock[] = [];
after(() => Promise.all(padlocks.map((p) => p.close())));

function parsed<T>(run: Run): T {
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.stderr, '');
  return JSON.parse(run.stdout) as T;
}

describe('on a Redis Cluster', () => {
  let cluster: RedisCluster;
  let url: string;
  before(async () => {
    cluster = await startCluster({ masters: 3, replicasPerMaster: 0 });
    const [seed] = cluster.nodes;
    assert.ok(seed !== undefined);
    url = seed.url;
  });

  function padlockOn(prefix: string, leaseMs = 30_000): Padlock {
    const padlock = new Padlock({ redis: cluster.client(), prefix, leaseMs });
    padlocks.push(padlock);
    return padlock;
  }

  it('lists the locks of every master, from one node\'s URL (found out) or with --cluster', async () => {
    const padlock = padlockOn('cl1');
    const names = Array.from({ length: 12 }, (_, i) => `order:${i}`);
    const leases = await Promise.all(names.map((n) => padlock.mutex(n).acquire()));
    const masters = new Set(await Promise.all(names.map(async (n) => (await cluster.nodeForKey(lockKeys('cl1', n).lock)).port)));
    assert.ok(masters.size >= 2, `the locks live on ${masters.size} masters`);

    for (const flags of [[], ['--cluster']]) {
      const report = parsed<ListReport>(await runBin(['list', '--json', '--url', url, '--prefix', 'cl1', ...flags]));
      assert.equal(report.redis.topology, 'cluster');
      assert.deepEqual(report.locks.map((l) => l.name), [...names].sort());
      for (const lock of report.locks) {
        const lease = leases[names.indexOf(lock.name)];
        assert.deepEqual(lock.holders, [{ owner: lease?.owner, holdCount: 1, clients: [padlock.shared.clientId] }]);
        assert.equal(lock.fence, lease?.fence);
      }
    }
    const some = parsed<ListReport>(await runBin(['list', 'order:1*', '--json', '--url', url, '--prefix', 'cl1']));
    assert.deepEqual(some.locks.map((l) => l.name), ['order:1', 'order:10', 'order:11']);
    const text = await runBin(['list', '--url', url, '--prefix', 'cl1']);
    assert.equal(text.code, 0, text.stderr);
    assert.equal(text.stdout.trimEnd().split('\n').length, 1 + names.length);
    await Promise.all(leases.map((l) => l.release()));
  });

  it('inspects a lock and its queue, and force-releases it to its waiter (sharded pub/sub)', async () => {
    const holderSide = padlockOn('cl2');
    const waiterSide = padlockOn('cl2');
    const stuck: Lease = await holderSide.mutex('job:7').acquire();
    const waiting = waiterSide.fairMutex('job:7').acquire({ waitMs: 20_000 });
    const admin = cluster.client();
    assert.ok(await eventually(async () => (await admin.llen(lockKeys('cl2', 'job:7').queue)) === 1));

    const { lock } = parsed<InspectReport>(await runBin(['inspect', 'job:7', '--json', '--url', url, '--prefix', 'cl2']));
    assert.equal(lock.fence, stuck.fence);
    assert.deepEqual(lock.waiters.map((w) => [w.kind, w.clientId, w.alive]), [['fair', waiterSide.shared.clientId, true]]);

    const released = parsed<ReleaseReport>(await runBin(['release', 'job:7', '--force', '--yes', '--json', '--url', url, '--prefix', 'cl2']));
    assert.equal(released.released, true);
    assert.equal(released.before.waiting, 1);
    const next = await waiting;
    assert.ok(next.fence > stuck.fence);
    await next.release();
  });

  it('watches every master (--json, without a terminal) until SIGINT', async () => {
    const padlock = padlockOn('cl3');
    const leases = await Promise.all(['a', 'b', 'c', 'd', 'e', 'f'].map((n) => padlock.mutex(n).acquire()));
    let stopped = false;
    const run = await runBin(['watch', '--json', '--interval', '200', '--url', url, '--prefix', 'cl3'], {
      onStdout: (soFar, pid) => {
        if (!stopped && soFar.split('\n').length > 2) {
          stopped = true;
          process.kill(pid, 'SIGINT');
        }
      },
    });
    assert.equal(run.code, 0, run.stderr);
    const frames = run.stdout.trimEnd().split('\n').map((line) => JSON.parse(line) as WatchFrame);
    assert.ok(frames.length >= 2);
    for (const frame of frames) assert.deepEqual(frame.locks.map((l) => l.name), ['a', 'b', 'c', 'd', 'e', 'f']);
    await Promise.all(leases.map((l) => l.release()));
  });
});

describe('on a Sentinel set', () => {
  let set: SentinelSet;
  let url: string;
  before(async () => {
    set = await startSentinelSet({ name: 'locks', replicas: 1, sentinels: 1 });
    url = `redis+sentinel://${set.sentinels.map((s) => `127.0.0.1:${s.port}`).join(',')}/locks`;
  });

  it('lists, inspects and force-releases through the primary the sentinels name', async () => {
    const padlock = new Padlock({ redis: set.client(), prefix: 'se1' });
    padlocks.push(padlock);
    const lease = await padlock.mutex('invoice:9').acquire();
    const report = parsed<ListReport>(await runBin(['list', '--json', '--url', url, '--prefix', 'se1']));
    assert.equal(report.redis.topology, 'sentinel');
    assert.deepEqual(report.locks.map((l) => [l.name, l.fence]), [['invoice:9', lease.fence]]);
    const { lock } = parsed<InspectReport>(await runBin(['inspect', 'invoice:9', '--json', '--url', url, '--prefix', 'se1']));
    assert.deepEqual(lock.holders, [{ owner: lease.owner, holdCount: 1, clients: [padlock.shared.clientId] }]);
    const text = await runBin(['list', '--url', url, '--prefix', 'se1']);
    assert.match(text.stdout, /^invoice:9 +mutex /m);
    assert.equal(parsed<ReleaseReport>(await runBin(['release', 'invoice:9', '--force', '--yes', '--json', '--url', url, '--prefix', 'se1'])).released, true);
    assert.equal(await padlock.mutex('invoice:9').isLocked(), false);
  });

  it('says so when the sentinels do not know the master name (exit 1)', async () => {
    const wrong = url.replace(/\/locks$/, '/nosuchmaster');
    assertOneLineError(await runBin(['list', '--url', wrong]), 1, /^padlock: cannot reach Redis at redis\+sentinel:\/\/.*\/nosuchmaster: the sentinels answered: ERR No such master with that name$/);
  });
});
