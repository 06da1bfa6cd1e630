/**
 * `padlock demo` end to end: the built bin, run as users run it, with its own redis-server (no
 * REDIS_URL), seller processes and all; then its failure paths, each a one-line message and an exit
 * code.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RedisServer } from '../src/devserver/redis-server.js';
import { freePort } from '../src/devserver/redis-server.js';
import type { DemoReport } from '../src/cli/demo.js';
import { connect, startServer } from './harness/redis.js';
import { assertOneLineError, cleanEnv, runBin } from './harness/cli.js';

/** Whether something accepts TCP connections on 127.0.0.1:`port`. */
function isListening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

function portOf(url: string): number {
  return Number(new URL(url).port);
}

describe('padlock demo: the ticket sale', () => {
  it('oversells without a lock and sells exactly the stock with each lock, on a private redis-server it then stops', async () => {
    const run = await runBin(['demo', '--sellers', '4', '--tickets', '200', '--json']);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stderr, '');
    const report = JSON.parse(run.stdout) as DemoReport;
    assert.equal(report.redis.private, true);
    assert.equal(report.sellers, 4);
    assert.equal(report.tickets, 200);

    const [unlocked, ...locked] = report.phases;
    assert.ok(unlocked !== undefined && unlocked.lock === 'none');
    // The window (GET, ~1 ms of work, SET) overlaps between 4 processes on nearly every sale.
    assert.ok(unlocked.oversold > 0, `the unguarded phase should oversell: ${JSON.stringify(unlocked)}`);
    assert.equal(unlocked.sold, 200 + unlocked.oversold);
    assert.equal(unlocked.salesBySeller.reduce((a, b) => a + b, 0), unlocked.sold);
    assert.equal(unlocked.acquisitionsPerSecond, null);

    assert.deepEqual(locked.map((p) => p.lock), ['mutex', 'fairMutex']);
    for (const phase of locked) {
      assert.equal(phase.sold, 200, `${phase.label} sold`);
      assert.equal(phase.oversold, 0, `${phase.label} oversold`);
      assert.equal(phase.stockLeft, 0, `${phase.label} stock left`);
      assert.equal(phase.salesBySeller.length, 4);
      assert.equal(phase.salesBySeller.reduce((a, b) => a + b, 0), 200, `${phase.label}: per-seller sales add up`);
      // Each seller's last acquisition finds the stock empty.
      assert.equal(phase.acquisitions, 200 + 4, `${phase.label} acquisitions`);
      assert.ok(phase.acquisitionsPerSecond !== null && phase.acquisitionsPerSecond > 0);
      assert.ok(phase.waitP99Ms !== null && phase.waitP99Ms >= 0);
      assert.ok(phase.fairness >= 0.25 && phase.fairness <= 1, `${phase.label}: Jain's index over 4 sellers is within [1/4, 1], got ${phase.fairness}`);
    }
    assert.equal(await isListening(portOf(report.redis.url)), false, 'the private redis-server is stopped on exit');
  });

  it('prints progress lines and a table, without ANSI codes, when stdout is not a terminal', async () => {
    const run = await runBin(['demo', '--sellers', '2', '--tickets', '40']);
    assert.equal(run.code, 0, run.stderr);
    assert.ok(!run.stdout.includes("\u001b["), "no escape codes in a pipe");
    assert.match(run.stdout, /^padlock demo: 2 seller processes sell 40 tickets, on a private redis-server .* at redis:\/\/127\.0\.0\.1:\d+/);
    assert.match(run.stdout, /^ 1\/\d+ {2}no lock +\d+\/40 sold/m);
    assert.match(run.stdout, /^ 2\/3 {2}mutex +40\/40 sold +\d+\.\d\d s$/m);
    assert.match(run.stdout, /^ 3\/3 {2}fairMutex +40\/40 sold +\d+\.\d\d s$/m);
    assert.match(run.stdout, /^phase +sold +oversold +seconds +acq\/s +wait p99 +fairness$/m);
    assert.match(run.stdout, /^mutex +40 +0 /m);
    assert.match(run.stdout, /^fairMutex +40 +0 /m);
    assert.match(run.stdout, /^With .*exactly 40\.$/m);
  });

  it('uses REDIS_URL when given, and deletes the keys it wrote', async () => {
    const server: RedisServer = await startServer();
    const client = connect(server);
    await client.set('unrelated', 'kept');
    const run = await runBin(['demo', '--sellers', '2', '--tickets', '30', '--json'], { env: cleanEnv({ REDIS_URL: server.url }) });
    assert.equal(run.code, 0, run.stderr);
    const report = JSON.parse(run.stdout) as DemoReport;
    assert.equal(report.redis.private, false);
    assert.equal(report.redis.url, server.url);
    assert.ok(report.phases.slice(1).every((p) => p.sold === 30 && p.oversold === 0));
    assert.deepEqual(await client.keys('*'), ['unrelated'], 'only the keys that were there before remain');
  });

  it('stops its sellers and its redis-server on Ctrl-C, exiting 130', async () => {
    let port = 0;
    let interrupted = false;
    const run = await runBin(['demo', '--sellers', '2', '--tickets', '100000'], {
      onStdout: (soFar, pid) => {
        const match = /127\.0\.0\.1:(\d+)/.exec(soFar);
        if (match === null || interrupted) return;
        port = Number(match[1]);
        interrupted = true;
        // Let the sellers start before interrupting.
        setTimeout(() => process.kill(pid, 'SIGINT'), 500);
      },
    });
    assertOneLineError(run, 130, /interrupted/);
    assert.ok(port > 0);
    assert.equal(await isListening(port), false, 'the private redis-server is stopped');
  });
});

describe('padlock demo: failures are one line and an exit code', () => {
  it('refuses a malformed URL (exit 2), from --url or REDIS_URL, without printing its password', async () => {
    assertOneLineError(await runBin(['demo', '--url', 'http://localhost:6379']), 2, /invalid Redis URL 'http:\/\/localhost:6379' in --url/);
    assertOneLineError(await runBin(['demo', '--url', 'not a url']), 2, /invalid Redis URL/);
    const fromEnv = await runBin(['demo'], { env: cleanEnv({ REDIS_URL: 'redis//:hunter2@host' }) });
    assertOneLineError(fromEnv, 2, /invalid Redis URL .* in REDIS_URL/);
    const withPassword = await runBin(['demo', '--url', 'redis://:hunter2@127.0.0.1:6379/x']);
    assertOneLineError(withPassword, 2, /invalid Redis URL 'redis:\/\/:\*\*\*@127\.0\.0\.1:6379\/x'/);
    assert.doesNotMatch(withPassword.stderr, /hunter2/);
  });

  it('reports an unreachable Redis (exit 1)', async () => {
    const port = await freePort();
    assertOneLineError(await runBin(['demo', '--url', `redis://127.0.0.1:${port}`]), 1, /cannot reach Redis at redis:\/\/127\.0\.0\.1:\d+: connection refused/);
  });

  it('reports a missing redis-server when no URL is given (exit 1)', async () => {
    const emptyDir = mkdtempSync(join(tmpdir(), 'padlock-no-redis-'));
    try {
      const run = await runBin(['demo'], { env: cleanEnv({ PATH: emptyDir }) });
      assertOneLineError(run, 1, /'redis-server' was not found: install Redis .* or pass --url/);
    } finally {
      rmSync(emptyDir, { recursive: true, force: true });
    }
  });

  it('rejects bad options (exit 2) and points at the help', async () => {
    const unknown = await runBin(['demo', '--bogus']);
    assertOneLineError(unknown, 2, /unknown option '--bogus'/);
    assert.match(unknown.stderr, /Run 'padlock demo --help'/);
    assertOneLineError(await runBin(['demo', '--sellers', '0']), 2, /--sellers must be an integer from 1 to 64, got '0'/);
    assertOneLineError(await runBin(['demo', '--tickets', 'many']), 2, /--tickets must be an integer/);
    assertOneLineError(await runBin(['demo', '--url']), 2, /option '--url <url>' argument missing/);
    assertOneLineError(await runBin(['sell']), 2, /unknown command 'sell'/);
  });

  it('prints help for padlock and for the demo (exit 0)', async () => {
    const top = await runBin(['--help']);
    assert.equal(top.code, 0);
    assert.match(top.stdout, /^Usage: padlock <command>/);
    assert.match(top.stdout, /^ {2}demo {2}/m);
    const demo = await runBin(['demo', '--help']);
    assert.equal(demo.code, 0);
    assert.match(demo.stdout, /^Usage: padlock demo \[options\]/);
    for (const option of ['--url', '--sellers', '--tickets', '--json']) assert.match(demo.stdout, new RegExp(`^ {2}${option}`, 'm'));
    const none = await runBin([]);
    assert.equal(none.code, 2);
    assert.match(none.stderr, /^Usage: padlock/);
  });
});
