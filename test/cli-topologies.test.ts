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
import type { ReapReport } from '../src/cli/reap.js';
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { livenessKey } from '../src/keys.js';
import { monotonicNow } from '../src/clock.js';
import { startCluster, startSentinelSet, type RedisCluster, type SentinelSet } from './harness/topologies.js';
import { delay, eventually } from './harness/redis.js';
import { assertOneLineError, runBin, type Run } from './harness/cli.js';
import { readWriteScenario, semaphoreScenario, type KindsScenario } from './harness/cli-kinds.js';
import { redisInternals } from '../src/testing.js';

const padlocks: Padlock[] = [];
const children: ChildProcess[] = [];
after(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await Promise.all(padlocks.map((p) => p.close()));
});

/** A child process holding `name` (60 s lease) through a Cluster client, until SIGKILLed (test/fixtures/reap-holder.ts). */
async function clusterHolder(url: string, name: string, prefix: string, livenessMs: number): Promise<{ child: ChildProcess; owner: string; fence: number; clientId: string }> {
  const child = fork(fileURLToPath(new URL('./fixtures/reap-holder.js', import.meta.url)), [`cluster:${url}`, name, '60000', String(livenessMs), prefix]);
  children.push(child);
  const held = await new Promise<{ owner: string; fence: number; clientId: string }>((resolve, reject) => {
    child.once('message', (m) => resolve(m as { owner: string; fence: number; clientId: string }));
    child.once('exit', (code) => reject(new Error(`the holder exited (${code})`)));
  });
  return { child, ...held };
}

async function kill(child: ChildProcess): Promise<void> {
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}

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
      assert.equal(report.redis?.topology, 'cluster');
      assert.deepEqual(report.locks.map((l) => l.name), [...names].sort());
      for (const lock of report.locks) {
        const lease = leases[names.indexOf(lock.name)];
        assert.deepEqual(lock.holders, [{ owner: lease?.owner, holdCount: 1, clients: [redisInternals(padlock).clientId] }]);
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
    await redisInternals(holderSide).listeningForForce;
    const waiting = waiterSide.fairMutex('job:7').acquire({ waitMs: 20_000 });
    const admin = cluster.client();
    assert.ok(await eventually(async () => (await admin.llen(lockKeys('cl2', 'job:7').queue)) === 1));

    const { lock } = parsed<InspectReport>(await runBin(['inspect', 'job:7', '--json', '--url', url, '--prefix', 'cl2']));
    assert.equal(lock.fence, stuck.fence);
    assert.deepEqual(lock.waiters.map((w) => [w.kind, w.clientId, w.alive]), [['fair', redisInternals(waiterSide).clientId, true]]);

    const released = parsed<ReleaseReport>(await runBin(['release', 'job:7', '--force', '--yes', '--json', '--url', url, '--prefix', 'cl2']));
    assert.equal(released.released, true);
    assert.equal(released.before.waiting, 1);
    assert.ok(await eventually(() => stuck.signal.aborted, 1_000), 'its holder told at once (sharded pub/sub), not at its next renewal (10 s away)');
    const next = await waiting;
    assert.ok(next.fence > stuck.fence);
    await next.release();
  });

  function kinds(prefix: string): KindsScenario {
    const admin = cluster.client();
    return { prefix, connection: ['--url', url], run: (...args) => runBin([...args, '--url', url, '--prefix', prefix]), padlock: () => padlockOn(prefix), llen: (key) => admin.llen(key) };
  }

  it('lists, inspects and force-releases a read/write lock and a semaphore (sharded pub/sub admits their waiters)', async () => {
    await readWriteScenario(kinds('cl-rw'));
    await semaphoreScenario(kinds('cl-sem'), { storedLimit: true });
  });

  it('reaps a SIGKILLed holder whose liveness key lives in another slot: `padlock reap` (--json) and a waiter with reapDeadHolders', async () => {
    const livenessMs = 1_500;
    const admin = cluster.client();
    // The holder's liveness key is in another slot than its lock: the reaper checks it first, then frees.
    const held = await clusterHolder(url, 'dead:a', 'cl4', livenessMs);
    assert.notEqual(await cluster.slotOf(lockKeys('cl4', 'dead:a').lock), await cluster.slotOf(livenessKey('cl4', held.clientId)));
    const waiterSide = new Padlock({ redis: cluster.client(), prefix: 'cl4' });
    padlocks.push(waiterSide);
    const waiting = waiterSide.fairMutex('dead:a').acquire({ waitMs: 30_000 });
    assert.ok(await eventually(async () => (await admin.llen(lockKeys('cl4', 'dead:a').queue)) === 1));
    const alive = parsed<ReapReport>(await runBin(['reap', '--json', '--url', url, '--prefix', 'cl4']));
    assert.deepEqual([alive.redis.topology, alive.locks[0]?.outcome], ['cluster', 'alive']);
    await kill(held.child);
    assert.ok(await eventually(async () => (await admin.exists(livenessKey('cl4', held.clientId))) === 0, livenessMs + 1_000));
    const report = parsed<ReapReport>(await runBin(['reap', '--json', '--url', url, '--prefix', 'cl4']));
    assert.deepEqual(report.locks, [{ name: 'dead:a', outcome: 'reaped', owner: held.owner, fence: held.fence, clients: [held.clientId], waiting: 1 }]);
    const next = await waiting;
    assert.ok(next.fence > held.fence, 'the fair waiter was handed the lock (sharded pub/sub)');
    await next.release();

    const second = await clusterHolder(url, 'dead:b', 'cl4', livenessMs);
    const reaping = new Padlock({ redis: cluster.client(), prefix: 'cl4', reapDeadHolders: true });
    padlocks.push(reaping);
    const pending = reaping.mutex('dead:b').acquire({ waitMs: 30_000 });
    await delay(livenessMs);
    await kill(second.child);
    const killedAt = monotonicNow();
    const lease = await pending;
    assert.ok(monotonicNow() - killedAt < livenessMs + 2_000, `the waiter reaped it ${(monotonicNow() - killedAt).toFixed(0)} ms after the kill (lease: 60 s)`);
    assert.ok(lease.fence > second.fence);
    await lease.release();
  });

  it('watches every master (--json, without a terminal) until SIGINT', async () => {
    const padlock = padlockOn('cl3');
    const leases = await Promise.all(['a', 'b', 'c', 'd', 'e', 'f'].map((n) => padlock.mutex(n).acquire()));
    let stopped = false;
    const run = await runBin(['watch', '--json', '--interval', '200ms', '--url', url, '--prefix', 'cl3'], {
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
    await redisInternals(padlock).listeningForForce;
    const report = parsed<ListReport>(await runBin(['list', '--json', '--url', url, '--prefix', 'se1']));
    assert.equal(report.redis?.topology, 'sentinel');
    assert.deepEqual(report.locks.map((l) => [l.name, l.fence]), [['invoice:9', lease.fence]]);
    const { lock } = parsed<InspectReport>(await runBin(['inspect', 'invoice:9', '--json', '--url', url, '--prefix', 'se1']));
    assert.deepEqual(lock.holders, [{ owner: lease.owner, holdCount: 1, clients: [redisInternals(padlock).clientId] }]);
    const text = await runBin(['list', '--url', url, '--prefix', 'se1']);
    assert.match(text.stdout, /^invoice:9 +mutex /m);
    assert.equal(parsed<ReleaseReport>(await runBin(['release', 'invoice:9', '--force', '--yes', '--json', '--url', url, '--prefix', 'se1'])).released, true);
    assert.ok(await eventually(() => lease.signal.aborted, 1_000), 'its holder told at once, not at its next renewal (10 s away)');
    assert.equal(await padlock.mutex('invoice:9').isLocked(), false);
  });

  it('says so when the sentinels do not know the master name (exit 1)', async () => {
    const wrong = url.replace(/\/locks$/, '/nosuchmaster');
    assertOneLineError(await runBin(['list', '--url', wrong]), 1, /^padlock: cannot reach Redis at redis\+sentinel:\/\/.*\/nosuchmaster: the sentinels answered: ERR No such master with that name$/);
  });
});
