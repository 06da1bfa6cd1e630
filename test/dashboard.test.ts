/**
 * The dashboard in a real browser (Debian's chromium, driven by playwright-core) against a real
 * redis-server: `padlock dashboard` run as the bin (a held lock and its fence, read-only by default,
 * live removal on release), the mounted handler on a plain node:http server under a path prefix
 * (the force-release dialog end to end, its holder told, the audit log), a dead holder flagged, and
 * recorded hold/wait times drawn as charts. With PADLOCK_SCREENSHOT=1 the last test writes
 * docs/dashboard.png (the README's screenshot).
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { fork, type ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import type { RedisServer } from '../src/devserver/redis-server.js';
import { createDashboard, type Dashboard } from '../src/dashboard/index.js';
import { auditKey } from '../src/dashboard/audit-log.js';
import { timingsKey } from '../src/timings.js';
import { Padlock, PadlockOptionError } from '../src/index.js';
import { connect, eventually, padlockOn, startServer } from './harness/redis.js';
import { startDashboardBin } from './harness/cli.js';
import { noChromium, useBrowser } from './harness/browser.js';
import { redisInternals } from '../src/testing.js';

const browser = useBrowser();
const children: ChildProcess[] = [];
after(() => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

/** The row of lock `name` in the page's table. */
function row(page: Page, name: string): ReturnType<Page['locator']> {
  return page.locator(`#locks tbody tr[data-lock="${name}"]`);
}


describe('recordTimings', () => {
  it('is refused when it is not true, false or { nameOf?, ttlMs? }, naming the option', async () => {
    const server = await startServer();
    const redis = connect(server);
    for (const [value, option] of [['yes', 'recordTimings'], [{ ttl: 5 }, 'recordTimings.ttl'], [{ ttlMs: 10 }, 'recordTimings.ttlMs'], [{ nameOf: 'x' }, 'recordTimings.nameOf']] as const) {
      assert.throws(() => new Padlock({ redis, recordTimings: value as never }), (error: unknown) => error instanceof PadlockOptionError && error.message.includes(option), JSON.stringify(value));
    }
  });
});

describe('the dashboard in a browser', { skip: noChromium }, () => {
  let server: RedisServer;
  before(async () => {
    server = await startServer();
  });

  it('padlock dashboard: a held lock with its fence, read-only by default, gone live once released; Ctrl-C stops it', async () => {
    const holder = padlockOn(server, { prefix: 'db1' });
    const lease = await holder.mutex('orders:42').acquire();
    const bin = startDashboardBin(['--url', server.url, '--prefix', 'db1', '--port', '0']);
    const url = await bin.url;
    assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/$/, 'the first line is the URL');
    const page = await browser.page();
    // What a user's devtools would show in red: a failed request (the icon's 404) or a script error.
    const consoleErrors: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'error') consoleErrors.push(`${message.text()} ${message.location().url}`);
    });
    page.on('pageerror', (error) => consoleErrors.push(String(error)));
    await page.goto(url);
    const lock = row(page, 'orders:42');
    await lock.waitFor();
    assert.equal(await lock.locator('td.fence').textContent(), String(lease.fence));
    assert.match((await lock.textContent()) ?? '', /client alive/);
    assert.match((await page.getByRole('status').textContent()) ?? '', /^Live/);
    // Read-only: no button at all, nor an actions column.
    assert.equal(await page.getByRole('button', { name: 'Force release' }).count(), 0);
    assert.equal(await page.getByRole('columnheader', { name: 'Actions' }).count(), 0);
    const refused = await fetch(new URL('release', url), { method: 'POST', headers: { 'content-type': 'application/json', 'x-padlock-dashboard': '1' }, body: JSON.stringify({ name: 'orders:42', kind: 'mutex', confirm: 'orders:42' }) });
    assert.equal(refused.status, 403);
    assert.equal(lease.isHeld, true);

    await lease.release();
    await lock.waitFor({ state: 'detached' });
    await page.locator('#locks-empty').waitFor({ state: 'visible' });
    assert.deepEqual(consoleErrors, [], 'the page logs no console error');
    await page.close();

    process.kill(await bin.pid, 'SIGINT');
    const run = await bin.done;
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stderr, '');
  });

  describe('mounted on a plain node:http server under /admin/locks, with allowRelease', () => {
    let http: Server;
    let base: string;
    let dashboard: Dashboard;
    before(async () => {
      const app = padlockOn(server, { prefix: 'db2' });
      dashboard = createDashboard({ redis: connect(server), padlock: app, allowRelease: true, basePath: '/admin/locks', authorize: (req) => (req.headers['x-user'] === 'mallory' ? false : 'alice'), intervalMs: 250 });
      http = createServer((req, res) => dashboard(req, res, () => res.writeHead(200, { 'content-type': 'text/plain' }).end('the application')));
      await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
      base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
    });
    after(async () => {
      await dashboard.close();
      http.closeAllConnections();
      await new Promise((resolve) => http.close(resolve));
    });

    it('leaves other paths to the application, redirects to its trailing slash, asks authorize()', async () => {
      assert.equal(await (await fetch(`${base}/other`)).text(), 'the application');
      const redirect = await fetch(`${base}/admin/locks`, { redirect: 'manual' });
      assert.equal(redirect.status, 308);
      assert.equal(redirect.headers.get('location'), '/admin/locks/');
      assert.equal((await fetch(`${base}/admin/locks/`, { headers: { 'x-user': 'mallory' } })).status, 403);
      const page = await fetch(`${base}/admin/locks/`);
      assert.equal(page.status, 200);
      assert.match(page.headers.get('content-security-policy') ?? '', /default-src 'none'/);
      // The one link is the inline icon (data:).
      assert.doesNotMatch(await page.text(), /<script src|<link(?! rel="icon" href="data:)|https?:\/\/(?!www\.w3\.org)/, 'nothing fetched from elsewhere');
      // The server checks the typed name too, and wants the header a cross-site form cannot send.
      const release = (body: object, headers: Record<string, string> = { 'content-type': 'application/json', 'x-padlock-dashboard': '1' }): Promise<Response> =>
        fetch(`${base}/admin/locks/release`, { method: 'POST', headers, body: JSON.stringify(body) });
      assert.equal((await release({ name: 'a', kind: 'mutex', confirm: 'b' })).status, 400);
      assert.equal((await release({ name: 'a', kind: 'mutex', confirm: 'a' }, { 'content-type': 'application/json' })).status, 400);
      assert.equal((await release({ name: 'a', kind: 'table', confirm: 'a' })).status, 400);
    });

    it('Force release: a dialog asks for the name, Release stays disabled until it matches, the holder is told, the audit log shows who and why', async () => {
      // Renewed every 10 s: told at once by the force-release, not at a renewal.
      const holder = padlockOn(server, { prefix: 'db2' });
      const lease = await holder.mutex('jobs:nightly').acquire();
      await redisInternals(holder).listeningForForce;
      const page = await browser.page();
      await page.goto(`${base}/admin/locks`);
      const lock = row(page, 'jobs:nightly');
      await lock.waitFor();
      const force = lock.getByRole('button', { name: 'Force release' });
      await force.click();
      const dialog = page.getByRole('dialog', { name: 'Force release jobs:nightly' });
      await dialog.waitFor();
      const release = dialog.getByRole('button', { name: 'Release' });
      assert.equal(await release.isDisabled(), true, 'disabled before anything is typed');
      const typed = dialog.getByRole('textbox', { name: 'Lock name' });
      await typed.fill('jobs:nightl');
      assert.equal(await release.isDisabled(), true, 'disabled while the name does not match');
      await typed.fill('jobs:nightly');
      assert.equal(await release.isDisabled(), false, 'enabled once it matches');
      await dialog.getByRole('textbox', { name: 'Reason, for the audit log' }).fill('stuck since the deploy');
      await release.click();
      await dialog.waitFor({ state: 'hidden' });
      await lock.waitFor({ state: 'detached' });
      assert.ok(await eventually(() => lease.signal.aborted, 1_000), "the holder's lease.signal aborted at once");
      const audit = page.locator('#audit tbody tr').first();
      await audit.getByText('stuck since the deploy').waitFor();
      assert.match((await audit.textContent()) ?? '', new RegExp(`alice.*jobs:nightly.*${lease.fence}`));
      // Bounded in Redis: a capped list with an expiry.
      const admin = connect(server);
      assert.equal(await admin.llen(auditKey('db2')), 1);
      assert.ok((await admin.pttl(auditKey('db2'))) > 0, 'the audit log expires');
      await page.close();
    });

    it('keeps each Force release button from one refresh to the next: it keeps the keyboard focus, and the dialog gives the focus back to it', async () => {
      const holder = padlockOn(server, { prefix: 'db2' });
      const lease = await holder.mutex('jobs:focus').acquire();
      const page = await browser.page();
      await page.goto(`${base}/admin/locks`);
      const lock = row(page, 'jobs:focus');
      const force = lock.getByRole('button', { name: 'Force release' });
      await force.focus();
      // The focused button marked, to tell it from a new one made at a refresh (the page's DOM, not this file's types).
      await page.evaluate('document.activeElement.marked = true');
      // Two refreshes at least (every 250 ms): the row's "Held for" cell changes at each.
      const heldFor = lock.locator('td').nth(4);
      for (let i = 0; i < 2; i++) {
        const before = await heldFor.textContent();
        assert.ok(await eventually(async () => (await heldFor.textContent()) !== before, 5_000), 'the page refreshed');
      }
      const focused = (): Promise<boolean> => page.evaluate<boolean>('document.activeElement !== null && document.activeElement.marked === true');
      assert.equal(await focused(), true, 'the button that had the focus still has it');
      await page.keyboard.press('Enter');
      const dialog = page.getByRole('dialog', { name: 'Force release jobs:focus' });
      await dialog.waitFor();
      await page.keyboard.press('Escape');
      await dialog.waitFor({ state: 'hidden' });
      assert.equal(await focused(), true, 'closed, the dialog gives the focus back to its button');
      await lease.release();
      await lock.waitFor({ state: 'detached' });
      await page.close();
    });

    it('flags a dead holder (lease alive, its client gone) and says what the reaper would do', async () => {
      const child = fork(fileURLToPath(new URL('./fixtures/reap-holder.js', import.meta.url)), [server.url, 'payments:settle', '60000', '1000', 'db2']);
      children.push(child);
      await new Promise((resolve, reject) => {
        child.once('message', resolve);
        child.once('exit', (code) => reject(new Error(`the holder exited (${code})`)));
      });
      const page = await browser.page();
      await page.goto(`${base}/admin/locks/`);
      const lock = row(page, 'payments:settle');
      await lock.getByText('client alive').waitFor();
      assert.equal(await lock.getByText('dead holder').count(), 0);
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
      // Its liveness key runs out within livenessMs (1 s); its 60 s lease still runs.
      await lock.getByText('dead holder').waitFor();
      assert.match((await lock.textContent()) ?? '', /client dead/);
      assert.match((await lock.textContent()) ?? '', /padlock reap .* frees it now/);
      await page.close();
    });

    it('draws recorded hold and wait times as charts (recordTimings), bounded in Redis', async () => {
      const recording = padlockOn(server, { prefix: 'db2', recordTimings: true });
      const other = padlockOn(server, { prefix: 'db2' });
      const blocker = await other.mutex('reports:daily').acquire();
      const waited = recording.withLock('reports:daily', () => new Promise((resolve) => setTimeout(resolve, 30)), { waitMs: 10_000 });
      await new Promise((resolve) => setTimeout(resolve, 400));
      await blocker.release();
      await waited;
      for (let i = 0; i < 4; i++) await recording.withLock('reports:daily', () => new Promise((resolve) => setTimeout(resolve, 5 * i)));
      await recording.close(); // sends what is pending
      const admin = connect(server);
      // close() waits at most 1 s for its last flush: on a loaded machine it may land just after.
      let ttl = -2;
      assert.ok(await eventually(async () => (ttl = await admin.pttl(timingsKey('db2', 'reports:daily'))) > 0, 10_000), 'the histogram was written');
      assert.ok(ttl <= 86_400_000, `the histogram expires within a day (${ttl})`);
      assert.ok((await admin.hlen(timingsKey('db2', 'reports:daily'))) <= 36);

      const page = await browser.page();
      await page.goto(`${base}/admin/locks/`);
      const figure = page.getByRole('figure', { name: 'reports:daily' });
      await figure.waitFor();
      const hold = figure.getByRole('img', { name: /^Hold times of reports:daily: 5 holds/ });
      const wait = figure.getByRole('img', { name: /^Wait times of reports:daily: 5 acquisitions/ });
      await hold.waitFor();
      await wait.waitFor();
      // The one acquisition that waited (400 ms, less its first attempt's round trip) is in a bucket above 50 ms.
      assert.match((await wait.getAttribute('aria-label')) ?? '', /(≤ [125]00 ms|≤ [\d.]+ s|> [\d.]+ min): 1/);
      assert.ok((await hold.locator('rect').count()) === 17);
      // The axis names the bars around the last one (30 s), so that none but the last reads as "> 5 min".
      assert.deepEqual(await hold.locator('text').allTextContents(), ['1 ms', '100 ms', '1 s', '30 s', '> 5 min']);
      if (process.env['PADLOCK_SCREENSHOT'] === '1') await screenshot(page, server);
      await page.close();
    });
  });
});

/** The README's picture: a few locks of every kind, waiters, a dead holder, charts. */
async function screenshot(page: Page, server: RedisServer): Promise<void> {
  const a = padlockOn(server, { prefix: 'db2', recordTimings: true });
  const b = padlockOn(server, { prefix: 'db2' });
  await a.mutex('orders:7').acquire();
  void b.fairMutex('orders:7').acquire({ waitMs: 30_000 }).catch(() => undefined);
  void b.fairMutex('orders:7').acquire({ waitMs: 30_000 }).catch(() => undefined);
  await a.readWrite('config').read.acquire();
  await b.readWrite('config').read.acquire();
  const pool = a.semaphore('exports', 3);
  await pool.acquire({ permits: 2 });
  for (let i = 0; i < 12; i++) await a.withLock('invoices:batch', () => new Promise((resolve) => setTimeout(resolve, 3 * i * i)));
  await new Promise((resolve) => setTimeout(resolve, 2_500));
  await page.setViewportSize({ width: 1280, height: 900 });
  await row(page, 'exports').waitFor();
  await page.getByRole('figure', { name: 'invoices:batch' }).waitFor();
  await page.screenshot({ path: fileURLToPath(new URL('../../docs/dashboard.png', import.meta.url)), fullPage: true });
}
