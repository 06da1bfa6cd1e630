/**
 * The dashboard as Express middleware (`app.use('/ops/locks', dashboard)`), on a real redis-server:
 * mounted under a path Express strips, beside the application's own routes and behind its own
 * JSON body parser, which has read the request before the dashboard sees it.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { createDashboard, type Dashboard } from '../src/dashboard/index.js';
import { connect, eventually, padlockOn, startServer } from './harness/redis.js';
import { redisInternals } from '../src/testing.js';

describe('the dashboard mounted in an Express app', () => {
  let http: Server;
  let base: string;
  let dashboard: Dashboard;
  let app: ReturnType<typeof padlockOn>;
  before(async () => {
    const server = await startServer();
    app = padlockOn(server, { prefix: 'ex' });
    dashboard = createDashboard({ redis: connect(server), padlock: app, prefix: 'ex', allowRelease: true, authorize: () => 'alice', intervalMs: 250 });
    const web = express();
    web.use(express.json());
    web.use('/ops/locks', dashboard);
    web.get('/health', (_req, res) => void res.send('ok'));
    http = web.listen(0, '127.0.0.1');
    await new Promise<void>((resolve) => http.once('listening', () => resolve()));
    base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  });
  after(async () => {
    await dashboard.close();
    http.closeAllConnections();
    await new Promise((resolve) => http.close(resolve));
  });

  it('serves the page and a held lock under the mount path, redirects to its trailing slash, leaves the rest to the app', async () => {
    const lease = await app.mutex('express:order').acquire();
    assert.equal(await (await fetch(`${base}/health`)).text(), 'ok');
    const redirect = await fetch(`${base}/ops/locks`, { redirect: 'manual' });
    assert.equal(redirect.status, 308);
    assert.equal(redirect.headers.get('location'), '/ops/locks/', 'the redirect keeps the path Express stripped');
    const page = await fetch(`${base}/ops/locks/`);
    assert.equal(page.status, 200);
    assert.match(await page.text(), /<title>/);
    const snapshot = (await (await fetch(`${base}/ops/locks/snapshot.json`)).json()) as { locks: { name: string; fence?: number }[] };
    const shown = snapshot.locks.find((l) => l.name === 'express:order');
    assert.equal(shown?.fence, lease.fence, 'the held lock and its fence');
    await lease.release();
  });

  it('force-releases behind the application\'s JSON body parser (the body already read), and the holder is told', async () => {
    const lease = await app.mutex('express:stuck').acquire();
    await redisInternals(app).listeningForForce;
    const reply = await fetch(`${base}/ops/locks/release`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-padlock-dashboard': '1' },
      body: JSON.stringify({ name: 'express:stuck', kind: 'mutex', confirm: 'express:stuck', why: 'stuck deploy' }),
    });
    assert.equal(reply.status, 200, await reply.clone().text());
    assert.deepEqual(((await reply.json()) as { who: string; released: boolean }).released, true);
    assert.equal(await app.mutex('express:stuck').isLocked(), false);
    assert.ok(await eventually(() => lease.signal.aborted, 1_000), 'the holder is told at once, not at its next renewal (10 s away)');
    assert.equal(lease.isHeld, false);
  });
});
