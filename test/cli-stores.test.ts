/**
 * The `padlock` command on the consensus stores: `list` reads every lock in use through the store's
 * catalog (holders, fences, waiters), `inspect` shows one in full (and a free name as Redis's does),
 * `watch` redraws the list, `release --force` frees one and its holder is told, `dashboard` serves
 * the same read (its snapshot endpoint; test/dashboard-stores.test.ts for PostgreSQL), and bad store flags
 * (or Redis-only options beside a store) are one-line usage errors. Real servers, the real bin.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Etcd3 } from 'etcd3';
import type { Client as ZooKeeperClient } from 'node-zookeeper-client';
import { LockLostError, Padlock, type Lease } from '../src/index.js';
import type { InspectReport } from '../src/cli/inspect.js';
import type { ListReport } from '../src/cli/list.js';
import type { ReleaseReport } from '../src/cli/release.js';
import type { WatchFrame } from '../src/cli/watch.js';
import type { Snapshot } from '../src/dashboard/index.js';
import { assertOneLineError, runBin } from './harness/cli.js';
import { startEtcd } from './harness/etcd.js';
import { startZooKeeper } from './harness/zookeeper.js';
import { closeClient, zooKeeperClient } from './harness/zookeeper-store-target.js';

/** Resolves once `check()` holds, or fails after `ms`. */
async function eventually(check: () => boolean, what: string, ms = 15_000): Promise<void> {
  const until = Date.now() + ms;
  while (!check()) {
    if (Date.now() > until) assert.fail(`not within ${ms} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** The owner tokens queued on `name` (not holding it), once there are `count`, read through the store's own catalog. */
async function queuedOwners(padlock: Padlock, name: string, count: number): Promise<string[]> {
  const catalog = padlock.shared.store.catalog?.();
  assert.ok(catalog !== undefined, 'the store has a catalog');
  try {
    const until = Date.now() + 15_000;
    for (;;) {
      const lock = (await catalog.locks()).find((l) => l.name === name && l.kind === 'mutex');
      const waiting = lock?.entries.filter((e) => !e.holds).map((e) => e.owner) ?? [];
      if (waiting.length >= count) return waiting;
      if (Date.now() > until) assert.fail(`${count} waiter(s) on '${name}' not queued within 15 s`);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  } finally {
    await catalog.close();
  }
}

/** One store under test: its flag, and a Padlock on it. */
interface StoreUnderTest {
  readonly flag: string[];
  /** A Padlock with a 3 s lease; `longLived`: a 30 s lease (and, on ZooKeeper, session), renewed only every 10 s. */
  padlock(prefix: string, longLived?: boolean): Padlock;
}

function operatorCommands(name: string, start: () => Promise<StoreUnderTest>): void {
  describe(`padlock list, inspect, watch and release --force on ${name}`, () => {
    const padlocks: Padlock[] = [];
    after(() => Promise.allSettled(padlocks.map((p) => p.close({ drainMs: 0 }))));

    it('lists the locks in use (holder, fence, waiters, a semaphore\'s permits), frees one by force, and its holder is told', async () => {
      const store = await start();
      // Renewed every 10 s: told at once by the force-release, not at a renewal.
      const holder = store.padlock('ops', true);
      const waiter = store.padlock('ops');
      padlocks.push(holder, waiter);
      const lease: Lease = await holder.mutex('invoice:7').acquire();
      const waiting = waiter.mutex('invoice:7').acquire({ waitMs: 30_000 });
      const permits = await holder.semaphore('pool', 3).acquire({ permits: 2 });
      await holder.mutex('other').acquire();

      const listed = await runBin(['list', '--json', '--prefix', 'ops', ...store.flag, 'invoice:*']);
      assert.equal(listed.code, 0, listed.stderr);
      const report = JSON.parse(listed.stdout) as ListReport;
      assert.deepEqual(report.locks.map((l) => l.name), ['invoice:7'], 'the glob picks the name');
      const [invoice] = report.locks;
      assert.equal(invoice?.held, true);
      assert.equal(invoice?.fence, lease.fence);
      assert.deepEqual(invoice?.holders.map((h) => [h.owner, h.holdCount]), [[lease.owner, 1]]);
      assert.equal(invoice?.waiting, 1);
      // ZooKeeper times a wait from the waiter's znode's ctime; etcd keeps revisions, no time.
      if (store.flag.includes('--zookeeper')) assert.ok(typeof invoice?.oldestWaitMs === 'number' && invoice.oldestWaitMs >= 0 && invoice.oldestWaitMs < 60_000, `oldest wait ${invoice?.oldestWaitMs}`);
      else assert.equal(invoice?.oldestWaitMs, null);

      const all = JSON.parse((await runBin(['list', '--json', '--prefix', 'ops', ...store.flag])).stdout) as ListReport;
      const pool = all.locks.find((l) => l.name === 'pool');
      assert.deepEqual(pool?.permits, { used: 2, limit: null, codeLimit: 3 }, "no stored limit: the holder's code's limit is shown");
      assert.deepEqual(all.locks.map((l) => l.name), ['invoice:7', 'other', 'pool']);

      const table = await runBin(['list', '--prefix', 'ops', ...store.flag]);
      assert.match(table.stdout, /invoice:7/);
      assert.match(table.stdout, /pool +semaphore 2\/3 /, 'the limit shown, not 2/?');

      // Renewed now: its next renewal is about 10 s away, far past the second it has to be told in.
      await lease.extend(30_000);
      const released = await runBin(['release', 'invoice:7', '--force', '--yes', '--json', '--prefix', 'ops', ...store.flag]);
      assert.equal(released.code, 0, released.stderr);
      const out = JSON.parse(released.stdout) as ReleaseReport;
      assert.equal(out.released, true);
      assert.equal(out.before.fence, lease.fence);
      await eventually(() => lease.signal.aborted, 'the holder is told at once', 1_000);
      assert.ok(lease.signal.reason instanceof LockLostError);
      const next = await waiting;
      assert.ok(next.fence > lease.fence, 'the waiter got its turn');
      await next.release();
      await permits.release();

      const again = await runBin(['release', 'invoice:7', '--force', '--yes', '--prefix', 'ops', ...store.flag]);
      assert.equal(again.code, 0);
      assert.match(again.stdout, /not held: nothing to release/);
    });

    it('inspect shows a held lock in full: its holder, fence and hold count, and its waiter (a name used by two kinds, each)', async () => {
      const store = await start();
      const holder = store.padlock('insp');
      const waiter = store.padlock('insp');
      padlocks.push(holder, waiter);
      const lease = await holder.mutex('order:42').acquire();
      const again = await holder.mutex('order:42').acquire({ owner: lease.owner });
      const permit = await holder.semaphore('order:42', 2).acquire();
      const waiting = waiter.mutex('order:42').acquire({ waitMs: 30_000 });
      try {
        const [waiterOwner = ''] = await queuedOwners(holder, 'order:42', 1);

        const json = await runBin(['inspect', 'order:42', '--json', '--prefix', 'insp', ...store.flag]);
        assert.equal(json.code, 0, json.stderr);
        const report = JSON.parse(json.stdout) as InspectReport;
        assert.equal(report.known, true);
        assert.deepEqual(report.locks.map((l) => l.kind), ['mutex', 'semaphore'], 'each kind of the name, as on Redis');
        const { lock } = report;
        assert.equal(lock.held, true);
        assert.equal(lock.fence, lease.fence);
        assert.deepEqual(lock.holders.map((h) => [h.owner, h.holdCount]), [[lease.owner, 2]]);
        assert.equal(lock.waiting, 1);
        assert.deepEqual(lock.waiters.map((w) => [w.position, w.owner, w.kind, w.alive]), [[1, waiterOwner, 'mutex', true]]);
        assert.deepEqual(report.locks[1]?.holders.map((h) => [h.owner, h.permits]), [[permit.owner, 1]]);

        const text = await runBin(['inspect', 'order:42', '--prefix', 'insp', ...store.flag]);
        assert.equal(text.code, 0, text.stderr);
        assert.match(text.stdout, /^lock +order:42 · mutex$/m);
        assert.match(text.stdout, new RegExp(`^state +held by ${lease.owner} \\(2 holds\\), fence ${lease.fence}`, 'm'));
        // ZooKeeper times the wait from the waiter's znode's ctime; etcd keeps no time.
        assert.match(text.stdout, store.flag.includes('--zookeeper') ? /^queue +1 waiting; the longest-queued for [\d.]+ (ms|s)$/m : /^queue +1 waiting$/m);
        assert.match(text.stdout, new RegExp(`^ +1 +${waiterOwner} +mutex `, 'm'), 'the waiter is listed');
        assert.match(text.stdout, /^lock +order:42 · semaphore$/m);
        assert.doesNotMatch(text.stdout, /^keys$/m, 'a store has no keys to show');
        assert.doesNotMatch(text.stdout, /dead/, 'a participant lives as long as its session or lease: no heartbeat to miss');

        // watch redraws what list reads: one JSON frame, then Ctrl-C ends it (exit 0).
        let stopped = false;
        const watched = await runBin(['watch', '--json', '--interval', '0.1', '--prefix', 'insp', ...store.flag], {
          onStdout: (soFar, pid) => {
            if (!stopped && soFar.includes('\n')) {
              stopped = true;
              process.kill(pid, 'SIGINT');
            }
          },
        });
        assert.equal(watched.code, 0, watched.stderr);
        const [frame] = watched.stdout.trimEnd().split('\n').map((line) => JSON.parse(line) as WatchFrame);
        assert.deepEqual(frame?.locks.map((l) => [l.name, l.kind, l.fence, l.waiting]), [['order:42', 'mutex', lease.fence, 1], ['order:42', 'semaphore', permit.fence, 0]]);
      } finally {
        // Even after a failed assertion: the waiter gets its turn, and nothing is left running.
        await again.release();
        await lease.release();
        await permit.release();
        await waiting.then((next) => next.release());
      }
    });

    it('padlock dashboard serves the locks through the catalog: its snapshot shows a held lock, and Ctrl-C stops it', async () => {
      const store = await start();
      const holder = store.padlock('dash');
      padlocks.push(holder);
      const lease = await holder.mutex('orders:42').acquire();
      let url = '';
      let snapshot: Snapshot | undefined;
      const run = await runBin(['dashboard', '--port', '0', '--prefix', 'dash', ...store.flag], {
        onStdout: (soFar, pid) => {
          const line = /^(.*)\n/.exec(soFar)?.[1];
          if (url !== '' || line === undefined) return;
          url = line;
          // The snapshot, then Ctrl-C.
          void fetch(new URL('snapshot.json', url))
            .then(async (response) => (snapshot = (await response.json()) as Snapshot))
            .finally(() => process.kill(pid, 'SIGINT'));
        },
      });
      assert.equal(run.code, 0, run.stderr);
      assert.match(snapshot?.store ?? '', new RegExp(`^${store.flag.includes('--zookeeper') ? 'ZooKeeper' : 'etcd'} .*, prefix dash$`));
      assert.deepEqual(snapshot?.locks.map((l) => [l.name, l.fence, l.holders.map((h) => h.liveness)]), [['orders:42', lease.fence, ['alive']]]);
      await lease.release();
    });

    it('inspect of a name nothing holds or waits for says so as on Redis, exit 0', async () => {
      const store = await start();
      // Independent runs of the command, side by side (each one's start-up is most of its time).
      const [text, json] = await Promise.all([runBin(['inspect', 'never:used', '--prefix', 'insp', ...store.flag]), runBin(['inspect', 'never:used', '--json', '--prefix', 'insp', ...store.flag])]);
      assert.equal(text.code, 0, text.stderr);
      assert.match(text.stdout, /^Nothing is known of lock 'never:used' under prefix 'insp': (ZooKeeper|etcd) .* has no holder or waiter of it/);
      assert.equal(json.code, 0, json.stderr);
      const report = JSON.parse(json.stdout) as InspectReport;
      assert.equal(report.known, false);
      assert.deepEqual([report.lock.kind, report.lock.held, report.locks.length], ['mutex', false, 1]);
    });

    it('refuses a store flag beside --url, or two stores, or a malformed host list, or a Redis-only option, in one line', async () => {
      const store = await start();
      const refusals: [string[], RegExp][] = [
        [['list', ...store.flag, '--url', 'redis://127.0.0.1:1'], /--url and --cluster are for Redis/],
        [['inspect', 'x', ...store.flag, '--cluster'], /--url and --cluster are for Redis/],
        [['watch', ...store.flag, '--all'], /--all is for Redis/],
        [['list', '--zookeeper', '127.0.0.1:1', '--etcd', '127.0.0.1:1'], /one store/],
        [['list', store.flag[0] ?? '', 'not a host'], /host:port/],
      ];
      // Independent runs of the command, side by side (each one's start-up is most of its time).
      const runs = await Promise.all(refusals.map(([args]) => runBin(args)));
      refusals.forEach(([, said], i) => assertOneLineError(runs[i]!, 2, said));
    });
  });
}

// Closed after the file's tests (registered here, not in a test: a test's own `after` runs when that
// test ends, and would leave open the clients of every later test).
const etcdClients: Etcd3[] = [];
const zooKeeperClients: ZooKeeperClient[] = [];
after(() => {
  etcdClients.forEach((c) => c.close());
  zooKeeperClients.forEach((c) => closeClient(c));
});

let etcd: StoreUnderTest | undefined;
operatorCommands('etcd', async () => {
  if (etcd !== undefined) return etcd;
  const cluster = await startEtcd(1);
  etcd = {
    flag: ['--etcd', cluster.hosts.map((h) => h.replace(/^https?:\/\//, '')).join(',')],
    padlock: (prefix, longLived = false) => {
      const client = new Etcd3({ hosts: cluster.hosts });
      etcdClients.push(client);
      return new Padlock({ etcd: client, prefix, leaseMs: longLived ? 30_000 : 3_000 });
    },
  };
  return etcd;
});

let zk: StoreUnderTest | undefined;
operatorCommands('ZooKeeper', async () => {
  if (zk !== undefined) return zk;
  const ensemble = await startZooKeeper(1);
  zk = {
    flag: ['--zookeeper', ensemble.connectString],
    padlock: (prefix, longLived = false) => {
      const client = longLived ? zooKeeperClient(ensemble, 30_000) : zooKeeperClient(ensemble);
      zooKeeperClients.push(client);
      return new Padlock({ zookeeper: client, prefix, leaseMs: longLived ? 30_000 : 3_000 });
    },
  };
  return zk;
});
