/**
 * The dashboard on the stores with a catalog, on PostgreSQL: `padlock dashboard --postgres` run as
 * the bin (the snapshot endpoint shows a held lock, its waiter and a semaphore as the catalog reads
 * them; Force release frees the lock through `forceRelease()`, its holder is told at once, the waiter
 * served, the audit entry shown; Ctrl-C stops it), `createDashboard({ padlock })` mounted for a
 * Padlock on it, and a store flag beside `--url` refused. ZooKeeper and etcd: test/cli-stores.test.ts.
 * A real server. Then the page itself in a real browser (Chromium, as test/dashboard.test.ts drives
 * it on Redis) on ZooKeeper, etcd and PostgreSQL: a held lock's row, its fence, live updates.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createDashboard, type Snapshot } from '../src/dashboard/index.js';
import { LockLostError, Padlock } from '../src/index.js';
import { Etcd3 } from 'etcd3';
import zookeeper from 'node-zookeeper-client';
import { noChromium, useBrowser } from './harness/browser.js';
import { assertOneLineError, runBin, startDashboardBin, until } from './harness/cli.js';
import { startEtcd, type Cluster } from './harness/etcd.js';
import { startPostgres, type PostgresServer } from './harness/postgres.js';
import { startZooKeeper, type Ensemble } from './harness/zookeeper.js';



const snapshotAt = async (url: string): Promise<Snapshot> => (await fetch(new URL('snapshot.json', url))).json() as Promise<Snapshot>;

/** One PostgreSQL server for the file (each describe uses prefixes of its own). */
let postgresServer: Promise<PostgresServer> | undefined;
const sharedPostgres = (): Promise<PostgresServer> => (postgresServer ??= startPostgres());

describe('the dashboard on stores with a catalog', { timeout: 60_000 }, () => {
  const padlocks: Padlock[] = [];
  after(() => Promise.allSettled(padlocks.map((p) => p.close({ drainMs: 0 }))));

  describe('on PostgreSQL', () => {
    let server: PostgresServer;
    before(async () => {
      server = await sharedPostgres();
    });

    it('shows the locks in use, frees one by Force release (its holder told, the waiter served, the audit entry shown), and stops on Ctrl-C', async () => {
      // A 30 s lease: told by the force-release's NOTIFY, not at a renewal.
      const holder = new Padlock({ postgres: server.pool({ max: 4 }), prefix: 'dash', leaseMs: 30_000 });
      const waiter = new Padlock({ postgres: server.pool({ max: 4 }), prefix: 'dash' });
      padlocks.push(holder, waiter);
      const lease = await holder.mutex('orders:42').acquire();
      const waiting = waiter.mutex('orders:42').acquire({ waitMs: 30_000 });
      const permit = await holder.semaphore('pool', 2).acquire();
      const bin = startDashboardBin(['--postgres', `postgres://postgres@127.0.0.1:${server.port}/postgres`, '--prefix', 'dash', '--port', '0', '--interval', '100ms', '--allow-release']);
      const url = await bin.url;
      assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/$/, `the first line is the URL, got ${url}`);
      try {
        const page = await fetch(url);
        assert.equal(page.status, 200);
        assert.match(await page.text(), /<title>padlock dashboard<\/title>/);

        const first = await until(() => snapshotAt(url), 'the waiter is queued', (s) => s.locks.find((l) => l.name === 'orders:42')?.waiting === 1);
        assert.equal(first.store, `PostgreSQL 127.0.0.1:${server.port}/postgres, prefix dash`);
        assert.equal(first.allowRelease, true);
        assert.deepEqual(first.timings, [], 'no distributions off Redis');
        const orders = first.locks.find((l) => l.name === 'orders:42');
        assert.equal(orders?.fence, lease.fence);
        assert.deepEqual(orders?.holders.map((h) => [h.owner, h.holdCount, h.liveness]), [[`${lease.owner.slice(0, 8)}…`, 1, 'alive']]);
        assert.ok(typeof orders?.leaseMs === 'number' && orders.leaseMs > 20_000, `lease left by the server's clock: ${orders?.leaseMs}`);
        assert.deepEqual(first.locks.map((l) => [l.name, l.kindLabel]), [['orders:42', 'mutex'], ['pool', 'semaphore 1/2']]);

        const released = await fetch(new URL('release', url), {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-padlock-dashboard': '1' },
          body: JSON.stringify({ name: 'orders:42', kind: 'mutex', confirm: 'orders:42', why: 'stuck deploy' }),
        });
        assert.equal(released.status, 200, await released.clone().text());
        const entry = (await released.json()) as { released: boolean; fence: number | null };
        assert.deepEqual([entry.released, entry.fence], [true, lease.fence]);
        await until(() => lease.signal.aborted, 'the holder is told at once', Boolean, 1_000);
        assert.ok(lease.signal.reason instanceof LockLostError);
        const next = await waiting;
        assert.ok(next.fence > lease.fence, 'the waiter got its turn');

        const after = await until(() => snapshotAt(url), 'the new holder is shown', (s) => s.locks.find((l) => l.name === 'orders:42')?.fence === next.fence);
        assert.deepEqual(after.audit.map((a) => [a.name, a.kind, a.fence, a.why, a.released]), [['orders:42', 'mutex', lease.fence, 'stuck deploy', true]]);
        await next.release();
        await permit.release();
        await until(() => snapshotAt(url), 'nothing is left in use', (s) => s.locks.length === 0);
      } finally {
        process.kill(await bin.pid, 'SIGINT');
      }
      const run = await bin.done;
      assert.equal(run.code, 0, run.stderr);
    });

    it('createDashboard({ padlock }) with a Padlock on PostgreSQL serves its locks through the catalog, read-only by default', async () => {
      const holder = new Padlock({ postgres: server.pool({ max: 4 }), prefix: 'mounted' });
      padlocks.push(holder);
      const dashboard = createDashboard({ padlock: holder });
      const http = createServer(dashboard);
      await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
      const lease = await holder.readWrite('report').read.acquire();
      try {
        const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/`;
        const snapshot = await snapshotAt(url);
        assert.equal(snapshot.store, 'PostgreSQL (schema padlock, prefix mounted)');
        assert.equal(snapshot.allowRelease, false);
        assert.deepEqual(snapshot.locks.map((l) => [l.name, l.kind, l.fence, l.holders.map((h) => h.side)]), [['report', 'readWrite', lease.fence, ['read']]]);
        const refused = await fetch(new URL('release', url), { method: 'POST', headers: { 'content-type': 'application/json', 'x-padlock-dashboard': '1' }, body: JSON.stringify({ name: 'report', kind: 'readWrite', confirm: 'report' }) });
        assert.equal(refused.status, 403);
        assert.equal(lease.isHeld, true);
      } finally {
        await lease.release();
        await dashboard.close();
        await new Promise((resolve) => http.close(resolve));
      }
    });
  });

  it('refuses a store flag beside --url, in one line', async () => {
    assertOneLineError(await runBin(['dashboard', '--postgres', 'postgres://127.0.0.1:1/x', '--url', 'redis://127.0.0.1:1']), 2, /--url and --cluster are for Redis/);
  });
});

describe('the page in a browser, on every store with a catalog', { skip: noChromium, timeout: 90_000 }, () => {
  const browser = useBrowser();
  let zooKeeper: Ensemble;
  let etcd: Cluster;
  let postgres: PostgresServer;
  const closers: (() => unknown)[] = [];
  before(async () => {
    [zooKeeper, etcd, postgres] = await Promise.all([startZooKeeper(), startEtcd(), sharedPostgres()]);
  });
  after(async () => {
    for (const close of closers.reverse()) await close();
  });

  /** A Padlock on `store` with a client of its own (closed after the tests). */
  const padlockOn = (store: 'zookeeper' | 'etcd' | 'postgres'): Padlock => {
    let made: Padlock;
    if (store === 'zookeeper') {
      const client = zookeeper.createClient(zooKeeper.connectString, { sessionTimeout: 4_000 });
      made = new Padlock({ zookeeper: client, prefix: 'browser' });
      closers.push(() => client.close());
    } else if (store === 'etcd') {
      const client = new Etcd3({ hosts: etcd.hosts, dialTimeout: 2_000 });
      made = new Padlock({ etcd: client, prefix: 'browser' });
      closers.push(() => client.close());
    } else {
      made = new Padlock({ postgres: postgres.pool({ max: 4 }), prefix: 'browser' });
    }
    closers.push(() => made.close({ drainMs: 0 }));
    return made;
  };

  for (const store of ['zookeeper', 'etcd', 'postgres'] as const) {
    it(`${store}: a held lock shows with its fence and holder, and goes live once released; no console error`, async () => {
      const app = padlockOn(store);
      const dashboard = createDashboard({ padlock: app, intervalMs: 200 });
      const http = createServer(dashboard);
      await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
      closers.push(async () => {
        await dashboard.close();
        http.closeAllConnections();
        await new Promise((resolve) => http.close(resolve));
      });
      const lease = await app.mutex('orders:42').acquire();
      const page = await browser.page();
      const consoleErrors: string[] = [];
      page.on('console', (message) => {
        if (message.type() === 'error') consoleErrors.push(`${message.text()} ${message.location().url}`);
      });
      page.on('pageerror', (error) => consoleErrors.push(String(error)));
      await page.goto(`http://127.0.0.1:${(http.address() as AddressInfo).port}/`);
      const row = page.locator('#locks tbody tr[data-lock="orders:42"]');
      await row.waitFor();
      assert.equal(await row.locator('td.fence').textContent(), String(lease.fence));
      assert.match((await row.textContent()) ?? '', new RegExp(lease.owner.slice(0, 8)));
      assert.match((await page.getByRole('status').textContent()) ?? '', /^Live/);
      await lease.release();
      await row.waitFor({ state: 'detached' });
      await page.locator('#locks-empty').waitFor({ state: 'visible' });
      assert.deepEqual(consoleErrors, [], 'the page logs no console error');
      await page.close();
    });
  }
});
