/**
 * The `padlock` command on the consensus stores: `list` reads every lock in use through the store's
 * catalog (holders, fences, waiters), `release --force` frees one and its holder is told, and bad
 * store flags are one-line usage errors. Real servers, the real bin.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Etcd3 } from 'etcd3';
import type { Client as ZooKeeperClient } from 'node-zookeeper-client';
import { LockLostError, Padlock, type Lease } from '../src/index.js';
import type { ListReport } from '../src/cli/list.js';
import type { ReleaseReport } from '../src/cli/release.js';
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

/** One store under test: its flag, and a Padlock on it. */
interface StoreUnderTest {
  readonly flag: string[];
  padlock(prefix: string): Padlock;
}

function operatorCommands(name: string, start: () => Promise<StoreUnderTest>): void {
  describe(`padlock list and release --force on ${name}`, () => {
    const padlocks: Padlock[] = [];
    after(() => Promise.allSettled(padlocks.map((p) => p.close({ drainMs: 0 }))));

    it('lists the locks in use (holder, fence, waiters, a semaphore\'s permits), frees one by force, and its holder is told', async () => {
      const store = await start();
      const holder = store.padlock('ops');
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

      const all = JSON.parse((await runBin(['list', '--json', '--prefix', 'ops', ...store.flag])).stdout) as ListReport;
      const pool = all.locks.find((l) => l.name === 'pool');
      assert.deepEqual(pool?.permits?.used, 2);
      assert.deepEqual(all.locks.map((l) => l.name), ['invoice:7', 'other', 'pool']);

      const table = await runBin(['list', '--prefix', 'ops', ...store.flag]);
      assert.match(table.stdout, /invoice:7/);

      const released = await runBin(['release', 'invoice:7', '--force', '--yes', '--json', '--prefix', 'ops', ...store.flag]);
      assert.equal(released.code, 0, released.stderr);
      const out = JSON.parse(released.stdout) as ReleaseReport;
      assert.equal(out.released, true);
      assert.equal(out.before.fence, lease.fence);
      await eventually(() => lease.signal.aborted, 'the holder is told at its next renewal');
      assert.ok(lease.signal.reason instanceof LockLostError);
      const next = await waiting;
      assert.ok(next.fence > lease.fence, 'the waiter got its turn');
      await next.release();
      await permits.release();

      const again = await runBin(['release', 'invoice:7', '--force', '--yes', '--prefix', 'ops', ...store.flag]);
      assert.equal(again.code, 0);
      assert.match(again.stdout, /not held: nothing to release/);
    });

    it('refuses a store flag beside --url, or two stores, or a malformed host list, in one line', async () => {
      const store = await start();
      assertOneLineError(await runBin(['list', ...store.flag, '--url', 'redis://127.0.0.1:1']), 2, /--url and --cluster are for Redis/);
      assertOneLineError(await runBin(['list', '--zookeeper', '127.0.0.1:1', '--etcd', '127.0.0.1:1']), 2, /one store/);
      assertOneLineError(await runBin(['list', store.flag[0] ?? '', 'not a host']), 2, /host:port/);
    });
  });
}

let etcd: StoreUnderTest | undefined;
operatorCommands('etcd', async () => {
  if (etcd !== undefined) return etcd;
  const cluster = await startEtcd(1);
  const clients: Etcd3[] = [];
  after(() => clients.forEach((c) => c.close()));
  etcd = {
    flag: ['--etcd', cluster.hosts.map((h) => h.replace(/^https?:\/\//, '')).join(',')],
    padlock: (prefix) => {
      const client = new Etcd3({ hosts: cluster.hosts });
      clients.push(client);
      return new Padlock({ etcd: client, prefix, leaseMs: 3_000 });
    },
  };
  return etcd;
});

let zk: StoreUnderTest | undefined;
operatorCommands('ZooKeeper', async () => {
  if (zk !== undefined) return zk;
  const ensemble = await startZooKeeper(1);
  const clients: ZooKeeperClient[] = [];
  after(() => clients.forEach((c) => closeClient(c)));
  zk = {
    flag: ['--zookeeper', ensemble.connectString],
    padlock: (prefix) => {
      const client = zooKeeperClient(ensemble);
      clients.push(client);
      return new Padlock({ zookeeper: client, prefix, leaseMs: 3_000 });
    },
  };
  return zk;
});
