/**
 * The dashboard on every Redis topology padlock serves besides one server, in a real browser: a
 * Sentinel-managed primary (`padlock dashboard --url redis+sentinel://…`), a Cluster (locks on
 * every master, found by SCAN on each; force-released through the page, the holder told), and
 * Redlock (`createDashboard({ redis: masters })`: a lock shown as its majority of masters has it,
 * force-released on every master).
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Page } from 'playwright-core';
import { Padlock } from '../src/index.js';
import { createDashboard, type Dashboard, type DashboardOptions } from '../src/dashboard/index.js';
import { lockKeys } from '../src/keys.js';
import { redisInternals } from '../src/testing.js';
import { eventually, useMasters } from './harness/redis.js';
import { cleanEnv, runBin } from './harness/cli.js';
import { startCluster, startSentinelSet, type RedisCluster, type SentinelSet } from './harness/topologies.js';
import { noChromium, useBrowser } from './harness/browser.js';

const browser = useBrowser();
const padlocks: Padlock[] = [];
const servers: { http: Server; dashboard: Dashboard }[] = [];
after(async () => {
  for (const { http, dashboard } of servers) {
    await dashboard.close();
    http.closeAllConnections();
    http.close();
  }
  await Promise.all(padlocks.map((p) => p.close()));
});

function row(page: Page, name: string): ReturnType<Page['locator']> {
  return page.locator(`#locks tbody tr[data-lock="${name}"]`);
}

/** Serves a mounted dashboard on a free port; its URL. */
async function serve(options: DashboardOptions): Promise<string> {
  const dashboard = createDashboard({ intervalMs: 250, ...options });
  const http = createServer((req, res) => dashboard(req, res));
  servers.push({ http, dashboard });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(http.address() as AddressInfo).port}/`;
}

/** Opens the Force release dialog of `name`, types its name and releases it. */
async function forceRelease(page: Page, name: string): Promise<void> {
  await row(page, name).getByRole('button', { name: 'Force release' }).click();
  const dialog = page.getByRole('dialog', { name: `Force release ${name}` });
  await dialog.getByRole('textbox', { name: 'Lock name' }).fill(name);
  await dialog.getByRole('button', { name: 'Release' }).click();
  await dialog.waitFor({ state: 'hidden' });
}

describe('the dashboard on Sentinel, Cluster and Redlock', { skip: noChromium }, () => {
  describe('a Sentinel-managed primary', () => {
    let set: SentinelSet;
    before(async () => {
      set = await startSentinelSet({ name: 'locks', replicas: 1, sentinels: 1 });
    });

    it('padlock dashboard --url redis+sentinel://… lists the lock held on the primary, with its fence', async () => {
      const padlock = new Padlock({ redis: set.client(), prefix: 'dse' });
      padlocks.push(padlock);
      const lease = await padlock.mutex('invoice:9').acquire();
      const url = `redis+sentinel://${set.sentinels.map((s) => `127.0.0.1:${s.port}`).join(',')}/locks`;
      let pid = -1;
      let resolveUrl: (value: string) => void = () => undefined;
      const listening = new Promise<string>((resolve) => (resolveUrl = resolve));
      const done = runBin(['dashboard', '--url', url, '--prefix', 'dse', '--port', '0'], {
        env: cleanEnv(),
        onStdout: (soFar, childPid) => {
          pid = childPid;
          const line = /^(.*)\n/.exec(soFar)?.[1];
          if (line !== undefined) resolveUrl(line);
        },
      });
      void done.then((run) => resolveUrl(`(exited ${run.code}: ${run.stderr})`));
      const page = await browser.page();
      await page.goto(await listening);
      await row(page, 'invoice:9').waitFor();
      assert.equal(await row(page, 'invoice:9').locator('td.fence').textContent(), String(lease.fence));
      assert.match((await page.locator('#store').textContent()) ?? '', /Sentinel primary 'locks'/);
      await page.close();
      process.kill(pid, 'SIGTERM');
      assert.equal((await done).code, 143);
      await lease.release();
    });
  });

  describe('a Cluster of 3 masters', () => {
    let cluster: RedisCluster;
    before(async () => {
      cluster = await startCluster({ masters: 3, replicasPerMaster: 0 });
    });

    it('lists the locks of every master, and force-releases one through the page (its holder told)', async () => {
      // Renewed every 10 s: told at once by the force-release (sharded pub/sub), not at a renewal.
      const holder = new Padlock({ redis: cluster.client(), prefix: 'dcl' });
      padlocks.push(holder);
      const names = Array.from({ length: 9 }, (_, i) => `order:${i}`);
      const leases = await Promise.all(names.map((n) => holder.mutex(n).acquire()));
      await redisInternals(holder).listeningForForce;
      const masters = new Set(await Promise.all(names.map(async (n) => (await cluster.nodeForKey(lockKeys('dcl', n).lock)).port)));
      assert.ok(masters.size >= 2, `the locks live on ${masters.size} masters`);
      const url = await serve({ redis: cluster.client(), prefix: 'dcl', allowRelease: true });
      const page = await browser.page();
      await page.goto(url);
      for (const [i, name] of names.entries()) assert.equal(await row(page, name).locator('td.fence').textContent(), String(leases[i]?.fence));
      await forceRelease(page, 'order:4');
      await row(page, 'order:4').waitFor({ state: 'detached' });
      assert.ok(await eventually(() => leases[4]?.signal.aborted === true, 1_000), "the holder's lease.signal aborted at once");
      assert.equal(await page.locator('#locks tbody tr').count(), names.length - 1);
      await page.close();
      await Promise.all(leases.filter((_, i) => i !== 4).map((l) => l.release()));
    });
  });

  describe('Redlock over 3 masters', () => {
    const set = useMasters(3);

    it('shows a lock as its majority of masters has it, and force-releases it on every master', async () => {
      // Renewed every 10 s: told at once by the force-release (a notice on every master), not at a renewal.
      const holder = new Padlock({ redis: set.admins, prefix: 'drl' });
      padlocks.push(holder);
      const app = new Padlock({ redis: set.admins, prefix: 'drl' });
      padlocks.push(app);
      const lease = await holder.mutex('ledger').acquire();
      await redisInternals(holder).listeningForForce;
      const url = await serve({ redis: set.admins, padlock: app, allowRelease: true });
      const page = await browser.page();
      await page.goto(url);
      const lock = row(page, 'ledger');
      await lock.waitFor();
      assert.equal(await lock.locator('td.fence').textContent(), String(lease.fence));
      assert.match((await lock.textContent()) ?? '', /client alive/);
      assert.match((await page.locator('#store').textContent()) ?? '', /Redlock over 3 masters/);
      await forceRelease(page, 'ledger');
      await lock.waitFor({ state: 'detached' });
      assert.ok(await eventually(() => lease.signal.aborted, 1_000), "the holder's lease.signal aborted at once");
      for (const admin of set.admins) assert.equal(await app.mutex('ledger').isLocked(), false, `free on ${admin.options.port}`);
      await page.close();
    });
  });
});
