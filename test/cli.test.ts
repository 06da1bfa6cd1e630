/**
 * The operator commands of the `padlock` bin (`list`, `inspect`, `release --force`, `watch`), run
 * as users run them against a real redis-server: their tables, their `--json` (parsed), their
 * failures (one line and an exit code: bad input, an unreachable server), and `watch` and
 * `release`'s confirmation in a real terminal (tmux). The Cluster and Sentinel runs are in
 * cli-topologies.test.ts.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RedisServerStartError, type RedisServer } from '../src/devserver/redis-server.js';
import { freePort } from '../src/devserver/redis-server.js';
import type { Lease } from '../src/index.js';
import { lockKeys } from '../src/keys.js';
import type { InspectReport } from '../src/cli/inspect.js';
import type { ListReport } from '../src/cli/list.js';
import type { ReleaseReport } from '../src/cli/release.js';
import { fit, type WatchFrame } from '../src/cli/watch.js';
import { duration, table } from '../src/cli/render.js';
import { connect, delay, eventually, padlockOn, startServer } from './harness/redis.js';
import { assertOneLineError, cleanEnv, noTmux, runBin, Terminal } from './harness/cli.js';
import { permitsFlagScenario, readWriteScenario, semaphoreScenario, type KindsScenario } from './harness/cli-kinds.js';
import { redisInternals } from '../src/testing.js';

let server: RedisServer;
before(async () => {
  server = await startServer();
});

/** A duration as the CLI prints one (e.g. `850 ms`, `28.1 s`), whatever the machine's speed made it. */
const DURATION = String.raw`(\d+ ms|\d+\.\d s)`;

/** `padlock <args> --url <server>`, with a prefix of the test's own. */
function run(prefix: string, ...args: string[]) {
  return runBin([...args, '--url', server.url, '--prefix', prefix]);
}

async function json<T>(prefix: string, ...args: string[]): Promise<T> {
  const result = await run(prefix, ...args, '--json');
  assert.equal(result.code, 0, result.stderr);
  assert.equal(result.stderr, '');
  return JSON.parse(result.stdout) as T;
}

describe('rendering', () => {
  it('writes durations as operators read them', () => {
    const cases: [number | null, string][] = [[null, '—'], [0, '0 ms'], [999, '999 ms'], [1_000, '1.0 s'], [28_149, '28.1 s'], [59_999, '59.9 s'], [60_000, '1m 00s'], [725_000, '12m 05s'], [3_600_000, '1h 00m'], [11_000_000, '3h 03m'], [190_000_000, '2d 04h'], [-1_500, '-1.5 s']];
    for (const [ms, text] of cases) assert.equal(duration(ms), text, String(ms));
  });

  it('cuts a line to the terminal width, keeping colours and resetting them', () => {
    assert.equal(fit('abcdef', 4), 'abc\u001b[0m');
    assert.equal(fit('abc', 4), 'abc');
    assert.equal(fit('\u001b[1mab\u001b[22mcdef', 4), '\u001b[1mab\u001b[22mc\u001b[0m', 'styles take no room');
    assert.equal(fit('ü—…xyz', 4), 'ü—…\u001b[0m');
  });

  it('aligns table columns, coloured cells included, without trailing spaces', () => {
    const text = table([{ title: 'name' }, { title: 'n', align: 'right' }], [['a', '1'], ['\u001b[31mlonger\u001b[39m', '100']]);
    assert.equal(text, 'name      n\na         1\n\u001b[31mlonger\u001b[39m  100');
  });
});

describe('padlock list', () => {
  it('lists the locks in use: holder, hold count, lease, fence, waiters and the longest wait', async () => {
    const holderSide = padlockOn(server, { prefix: 'list1', leaseMs: 30_000 });
    const waiterSide = padlockOn(server, { prefix: 'list1', leaseMs: 30_000 });
    const order = await holderSide.mutex('order:42').acquire();
    const reentered = await holderSide.mutex('order:42').acquire({ owner: order.owner });
    const report = await holderSide.mutex('report:daily').acquire({ leaseMs: 600_000 });
    const freed = await holderSide.mutex('order:freed').acquire();
    await freed.release();
    const waiting = waiterSide.fairMutex('order:42').acquire({ waitMs: 30_000 });
    const admin = connect(server);
    assert.ok(await eventually(async () => (await admin.llen(lockKeys('list1', 'order:42').queue)) === 1));
    await delay(300);

    const listed = await json<ListReport>('list1', 'list');
    assert.equal(listed.prefix, 'list1');
    assert.equal(listed.pattern, '*');
    assert.deepEqual(listed.redis, { url: server.url, topology: 'server' });
    assert.deepEqual(listed.locks.map((l) => l.name), ['order:42', 'report:daily'], 'in use only, sorted');
    const [first, second] = listed.locks;
    assert.ok(first !== undefined && second !== undefined);
    assert.deepEqual(Object.keys(first).sort(), ['fence', 'held', 'holders', 'kind', 'lastFence', 'leaseMs', 'name', 'oldestWaitMs', 'waiting'].sort(), 'the documented fields');
    assert.equal(first.kind, 'mutex');
    assert.equal(first.held, true);
    assert.deepEqual(first.holders, [{ owner: order.owner, holdCount: 2, clients: [redisInternals(holderSide).clientId] }]);
    assert.equal(first.fence, order.fence);
    assert.ok(first.leaseMs !== null && first.leaseMs > 20_000 && first.leaseMs <= 30_000);
    assert.equal(first.waiting, 1);
    assert.ok(first.oldestWaitMs !== null && first.oldestWaitMs >= 250, `oldest wait ${first.oldestWaitMs}`);
    assert.ok(second.leaseMs !== null && second.leaseMs > 590_000);
    assert.equal(second.waiting, 0);
    assert.equal(second.oldestWaitMs, null);

    const text = await run('list1', 'list');
    assert.equal(text.code, 0, text.stderr);
    assert.ok(!text.stdout.includes('\u001b['), 'no escape codes in a pipe');
    const lines = text.stdout.trimEnd().split('\n');
    assert.match(lines[0] ?? '', /^lock +kind +holder +holds +lease left +fence +waiting +oldest wait$/);
    assert.match(lines[1] ?? '', new RegExp(`^order:42 +mutex \\(fair\\) +${order.owner.slice(0, 8)}… +2 +\\d+\\.\\d s +${order.fence} +1 +${DURATION}$`));
    assert.match(lines[2] ?? '', new RegExp(`^report:daily +mutex +${report.owner.slice(0, 8)}… +1 +9m \\d\\ds +${report.fence} +0 +—$`));
    assert.equal(lines.length, 3);

    assert.deepEqual((await json<ListReport>('list1', 'list', 'report:*')).locks.map((l) => l.name), ['report:daily']);
    const all = await json<ListReport>('list1', 'list', '--all', 'order:*');
    assert.deepEqual(all.locks.map((l) => [l.name, l.held]), [['order:42', true], ['order:freed', false]]);
    assert.equal(all.locks[1]?.lastFence, freed.fence);
    assert.deepEqual((await json<ListReport>('list1x', 'list')).locks, [], 'another prefix');
    const none = await run('list1', 'list', 'nothing:*');
    assert.equal(none.code, 0);
    assert.equal(none.stdout, "No locks in use under prefix 'list1' matching 'nothing:*'.\n");

    await reentered.release();
    await order.release();
    await (await waiting).release();
    await report.release();
  });

  it('takes the Redis from REDIS_URL when --url is not given', async () => {
    const padlock = padlockOn(server, { prefix: 'list2' });
    const lease = await padlock.mutex('env').acquire();
    const result = await runBin(['list', '--prefix', 'list2', '--json'], { env: cleanEnv({ REDIS_URL: server.url }) });
    assert.equal(result.code, 0, result.stderr);
    assert.deepEqual((JSON.parse(result.stdout) as ListReport).locks.map((l) => l.name), ['env']);
    await lease.release();
  });
});

describe('padlock inspect', () => {
  it('shows one lock in full: holders, queue with each waiter, keys and their TTLs', async () => {
    const holderSide = padlockOn(server, { prefix: 'insp1', leaseMs: 30_000 });
    const waiterSide = padlockOn(server, { prefix: 'insp1', leaseMs: 20_000 });
    const lease = await holderSide.mutex('job:{a}').acquire();
    const waiting = waiterSide.mutex('job:{a}').acquire({ waitMs: 30_000 });
    const admin = connect(server);
    const keys = lockKeys('insp1', 'job:{a}');
    assert.ok(await eventually(async () => (await admin.llen(keys.queue)) === 1));

    const { lock } = await json<InspectReport>('insp1', 'inspect', 'job:{a}');
    assert.equal(lock.name, 'job:{a}');
    assert.deepEqual(lock.holders, [{ owner: lease.owner, holdCount: 1, clients: [redisInternals(holderSide).clientId] }]);
    assert.equal(lock.fence, lease.fence);
    assert.equal(lock.lastFence, lease.fence);
    assert.equal(lock.waiting, 1);
    assert.equal(lock.waiters.length, 1);
    const [waiter] = lock.waiters;
    assert.ok(waiter !== undefined);
    assert.deepEqual([waiter.position, waiter.kind, waiter.clientId, waiter.alive, waiter.leaseMs], [1, 'mutex', redisInternals(waiterSide).clientId, true, 20_000]);
    assert.ok(waiter.waitedMs !== null && waiter.heartbeatMs !== null && waiter.heartbeatMs > 0);
    assert.deepEqual(lock.keys.map((k) => [k.role, k.key, k.exists]), [
      ['lock', keys.lock, true],
      ['queue', keys.queue, true],
    ]);
    assert.ok(lock.keys.every((k) => k.ttlMs !== null && k.ttlMs > 0), 'every key expires');

    const text = await run('insp1', 'inspect', 'job:{a}');
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /^lock +job:\{a\} · mutex$/m);
    assert.match(text.stdout, new RegExp(`^state +held by ${lease.owner} \\(1 hold\\), fence ${lease.fence}, \\d+\\.\\d s left$`, 'm'));
    assert.match(text.stdout, new RegExp(`^queue +1 waiting; the longest-queued for ${DURATION}$`, 'm'));
    assert.match(text.stdout, new RegExp(`^ +1 +${waiter.owner} +mutex +${redisInternals(waiterSide).clientId} +${DURATION} +live, ${DURATION} to spare$`, 'm'));
    assert.match(text.stdout, /^ +insp1:\{job:%7Ba%7D\}:lock +string +\d+\.\d s$/m);
    assert.match(text.stdout, /^ +insp1:\{job:%7Ba%7D\}:queue +list +\d+\.\d s$/m);

    await lease.release();
    const next = await waiting;
    await next.release();
    const freed = await run('insp1', 'inspect', 'job:{a}');
    assert.match(freed.stdout, /^state +free$/m);
    assert.match(freed.stdout, new RegExp(`^fence +last handed out: ${next.fence}$`, 'm'));
    assert.match(freed.stdout, /^ +insp1:\{job:%7Ba%7D\}:lock +string +59m \d\ds$/m, 'the tombstone stays an hour');
    const free = await run('insp1', 'inspect', 'never:used');
    assert.equal(free.code, 0, 'a name never used is no error');
    assert.match(free.stdout, /^Nothing is known of lock 'never:used' under prefix 'insp1': Redis has no key of it/);
    const freeJson = await json<InspectReport>('insp1', 'inspect', 'never:used');
    assert.equal(freeJson.known, false);
    assert.deepEqual([freeJson.lock.held, freeJson.lock.lastFence, freeJson.lock.keys.map((k) => [k.key, k.exists])], [false, null, [['insp1:{never:used}:lock', false], ['insp1:{never:used}:queue', false]]]);
  });
});

describe('padlock release --force', () => {
  it('frees a held lock, hands it to the waiter, and tells its holder at once (within a second)', async () => {
    const holderSide = padlockOn(server, { prefix: 'rel1', leaseMs: 30_000 });
    const waiterSide = padlockOn(server, { prefix: 'rel1', leaseMs: 30_000 });
    const stuck: Lease = await holderSide.mutex('stuck').acquire();
    const waiting = waiterSide.fairMutex('stuck').acquire({ waitMs: 30_000 });
    const admin = connect(server);
    assert.ok(await eventually(async () => (await admin.llen(lockKeys('rel1', 'stuck').queue)) === 1));

    // Renewed every 10 s: told by the force-release, not at a renewal.
    await redisInternals(holderSide).listeningForForce;
    const result = await run('rel1', 'release', 'stuck', '--force', '--yes');
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, new RegExp(`^released 'stuck' \\(was held by ${stuck.owner} \\(1 hold\\), fence ${stuck.fence}, .* left\\); the queue's first live waiter got its turn \\(1 waiting\\)\n$`));
    const next = await waiting;
    assert.ok(next.fence > stuck.fence, 'the waiter holds it now, with a greater fence');
    assert.ok(await eventually(() => stuck.signal.aborted, 1_000), 'the old holder is told at once');
    assert.equal(stuck.isHeld, false);

    const report = await json<ReleaseReport>('rel1', 'release', 'stuck', '--force', '--yes');
    assert.equal(report.released, true);
    assert.equal(report.before.fence, next.fence);
    assert.deepEqual(report.before.holders, [{ owner: next.owner, holdCount: 1, clients: [redisInternals(waiterSide).clientId] }]);
    const again = await json<ReleaseReport>('rel1', 'release', 'stuck', '--force', '--yes');
    assert.equal(again.released, false);
    assert.equal(again.before.held, false);
    const text = await run('rel1', 'release', 'stuck', '--force', '--yes');
    assert.equal(text.code, 0);
    assert.equal(text.stdout, "'stuck' is not held: nothing to release\n");
  });

  it('refuses without --force, and without --yes outside a terminal (exit 2), changing nothing', async () => {
    const padlock = padlockOn(server, { prefix: 'rel2' });
    const lease = await padlock.mutex('kept').acquire();
    assertOneLineError(await run('rel2', 'release', 'kept', '--yes'), 2, /release frees 'kept' whoever holds it: add --force/);
    assertOneLineError(await run('rel2', 'release', 'kept', '--force'), 2, /not a terminal, so no one can confirm: add --yes/);
    assert.equal(await padlock.mutex('kept').isLocked(), true);
    assert.equal(lease.isHeld, true);
    await lease.release();
  });
});

describe('the other kinds: read/write lock and semaphore', () => {
  function scenario(prefix: string): KindsScenario {
    const admin = connect(server);
    return { prefix, connection: ['--url', server.url], run: (...args) => run(prefix, ...args), padlock: () => padlockOn(server, { prefix, leaseMs: 30_000 }), llen: (key) => admin.llen(key) };
  }

  it('lists, inspects and force-releases a read/write lock held by readers, a writer queued, beside a mutex of the same name', async () => {
    await readWriteScenario(scenario('kinds1'));
  });

  it('lists, inspects and force-releases a semaphore with holders and a queued waiter (no stored limit: the waiter is woken and takes its permits)', async () => {
    await semaphoreScenario(scenario('kinds2'));
  });

  it("force-releases a semaphore without a stored limit admitting one waiter, or as many as --permits allows", async () => {
    await permitsFlagScenario(scenario('kinds3'));
  });
});

describe('the operator commands: failures are one line and an exit code', () => {
  it('report an unreachable Redis (exit 1)', async () => {
    const url = `redis://127.0.0.1:${await freePort()}`;
    const sentinel = `redis+sentinel://127.0.0.1:${await freePort()}/mymaster`;
    // Side by side: each run's start-up is most of its time.
    const commands = [['list'], ['inspect', 'x'], ['release', 'x', '--force', '--yes'], ['watch']];
    const [sentinelRun, ...runs] = await Promise.all([runBin(['list', '--url', sentinel]), ...commands.map((args) => runBin([...args, '--url', url]))]);
    for (const ran of runs) assertOneLineError(ran, 1, /^padlock: cannot reach Redis at redis:\/\/127\.0\.0\.1:\d+: connection refused/);
    assertOneLineError(sentinelRun, 1, /^padlock: cannot reach Redis at redis\+sentinel:\/\/127\.0\.0\.1:\d+\/mymaster: /);
  });

  it('reject bad URLs, flags and names (exit 2), without printing a password', async () => {
    const withPassword = runBin(['list'], { env: cleanEnv({ REDIS_URL: 'redis://:hunter2@127.0.0.1:6379/x' }) });
    const bogus = run('x', 'list', '--bogus');
    // Every run started at once (each one's start-up is most of its time), each checked in turn.
    const refusals: [ReturnType<typeof runBin>, RegExp][] = [
      [runBin(['list']), /no Redis given: pass --url redis:\/\/host:port or set REDIS_URL/],
      [runBin(['list', '--url', 'http://localhost:6379']), /invalid Redis URL 'http:\/\/localhost:6379' in --url: expected redis:\/\//],
      [withPassword, /invalid Redis URL 'redis:\/\/:\*\*\*@127\.0\.0\.1:6379\/x' in REDIS_URL/],
      [runBin(['list', '--url', 'redis+sentinel://127.0.0.1:26379']), /invalid Sentinel URL .*: expected redis\+sentinel:\/\//],
      [runBin(['list', '--url', 'redis+sentinel://a:99999/m']), /invalid Sentinel URL .*'a:99999' is not host\[:port\]/],
      [runBin(['list', '--url', 'redis+sentinel://a/m?bogus=1']), /unknown parameter 'bogus'/],
      [runBin(['list', '--cluster', '--url', 'redis+sentinel://a/m']), /--cluster does not go with a Sentinel URL/],
      [runBin(['list', '--cluster', '--url', 'redis://a:1/3']), /a Redis Cluster has only database 0/],
      [bogus, /unknown option '--bogus'/],
      [runBin(['list', '--url', server.url, '--prefix', 'a b']), /--prefix must be 1 to 64 characters from A-Z a-z 0-9 _ \. : -, got 'a b'/],
      [run('x', 'watch', '--interval', '5ms'), /--interval must be a duration from 0\.1 to 60 seconds \(seconds, or with a unit: 500ms, 2s, 1m\), got '5ms'$/],
      // It was in milliseconds once: such a value is refused, never read as seconds.
      [run('x', 'watch', '--interval', '500'), /--interval must be a duration .*got '500' \(it is in seconds, not milliseconds: 500ms or 0\.5/],
      [run('x', 'reap', '--every', '2h'), /--every must be a duration from 0\.1 to 86400 seconds/],
      [run('x', 'inspect', '--waiters', 'all', 'n'), /--waiters must be an integer/],
      [run('x', 'inspect'), /missing required argument 'name'/],
      [run('x', 'inspect', ''), /invalid lock name: .*non-empty string/],
      [run('x', 'list', 'a', 'b'), /too many arguments for 'list'/],
      [runBin(['lst']), /unknown command 'lst'/],
    ];
    for (const [ran, said] of refusals) assertOneLineError(await ran, 2, said);
    assert.doesNotMatch((await withPassword).stderr, /hunter2/);
    assert.match((await bogus).stderr, /Run 'padlock list --help' for usage/);
  });

  it('print help for each command (exit 0)', async () => {
    const commands = ['list', 'inspect', 'release', 'watch', 'demo'];
    const helps = await Promise.all(commands.map((command) => runBin([command, '--help'])));
    for (const [i, command] of commands.entries()) {
      const help = helps[i]!;
      assert.equal(help.code, 0);
      assert.match(help.stdout, new RegExp(`^Usage: padlock ${command} \\[options\\]`));
      assert.match(help.stdout, /^Exit status: /m);
      if (command !== 'demo') for (const option of ['--url', '--cluster', '--prefix', '--json']) assert.match(help.stdout, new RegExp(`^ {2}${option}`, 'm'));
    }
    const top = await runBin(['--help']);
    for (const command of ['demo', 'list', 'inspect', 'release', 'watch']) assert.match(top.stdout, new RegExp(`^ {2}${command} {2}`, 'm'));
    assert.match(top.stdout, /redis\+sentinel:\/\//);
  });
});

describe('over TLS (rediss://)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'padlock-cli-tls-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  let tls: { server: RedisServer; port: number; cert: string } | string | undefined;
  before(async () => {
    if (spawnSync('openssl', ['version']).status !== 0) return void (tls = 'the openssl command is not installed');
    const key = join(dir, 'key.pem');
    const cert = join(dir, 'cert.pem');
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=localhost', '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost'], { stdio: 'ignore' });
    const port = await freePort();
    try {
      const server = await startServer({ args: ['--port', '0', '--tls-port', String(port), '--tls-cert-file', cert, '--tls-key-file', key, '--tls-ca-cert-file', cert, '--tls-auth-clients', 'no'] });
      tls = { server, port, cert };
    } catch (error) {
      if (!(error instanceof RedisServerStartError)) throw error;
      tls = `redis-server does not support TLS here: ${error.message.split('\n', 1)[0]}`;
    }
  });

  it('lists a TLS-only server whose certificate the process trusts, and says why it cannot otherwise', async (t) => {
    if (tls === undefined || typeof tls === 'string') return t.skip(tls);
    const url = `rediss://127.0.0.1:${tls.port}`;
    const trusted = await runBin(['list', '--url', url, '--json'], { env: cleanEnv({ NODE_EXTRA_CA_CERTS: tls.cert }) });
    assert.equal(trusted.code, 0, trusted.stderr);
    assert.deepEqual((JSON.parse(trusted.stdout) as ListReport).locks, []);
    assertOneLineError(await runBin(['list', '--url', url]), 1, /^padlock: cannot reach Redis at rediss:\/\/127\.0\.0\.1:\d+: .*certificate/);
  });
});

describe('padlock watch, without a terminal', () => {
  it('prints one JSON object per interval, exits 0 on SIGINT, 143 on SIGTERM', async () => {
    const padlock = padlockOn(server, { prefix: 'watch1' });
    const lease = await padlock.mutex('w:1').acquire();
    let stopped = false;
    const result = await runBin(['watch', '--json', '--interval', '0.1', '--url', server.url, '--prefix', 'watch1'], {
      onStdout: (soFar, pid) => {
        if (!stopped && soFar.split('\n').length > 3) {
          stopped = true;
          process.kill(pid, 'SIGINT');
        }
      },
    });
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stderr, '');
    const frames = result.stdout.trimEnd().split('\n').map((line) => JSON.parse(line) as WatchFrame);
    assert.ok(frames.length >= 3);
    for (const frame of frames) {
      assert.ok(!Number.isNaN(Date.parse(frame.at)));
      assert.deepEqual(frame.locks.map((l) => [l.name, l.fence]), [['w:1', lease.fence]]);
    }
    let terminated = false;
    const term = await runBin(['watch', '--interval', '0.1', '--url', server.url, '--prefix', 'watch1'], {
      onStdout: (soFar, pid) => {
        if (!terminated && /^w:1 /m.test(soFar)) {
          terminated = true;
          process.kill(pid, 'SIGTERM');
        }
      },
    });
    assertOneLineError(term, 143, /^padlock: interrupted$/);
    await lease.release();
  });
});

describe('in a real terminal (tmux)', { skip: noTmux }, () => {
  it('watch redraws in place, follows changes, and exits 0 on Ctrl-C leaving the screen as it was', async () => {
    const padlock = padlockOn(server, { prefix: 'tty1' });
    const first = await padlock.mutex('tty:first').acquire();
    const term = await Terminal.open(['watch', '--interval', '200ms', '--url', server.url, '--prefix', 'tty1'], { columns: 120, rows: 20 });
    try {
      const screen = await term.waitFor(/tty:first/);
      assert.match(screen, /^padlock watch {2}redis:\/\/127\.0\.0\.1:\d+ \(one server, redis [\d.]+\) {2}prefix tty1, all names, every 200 ms$/m);
      assert.match(screen, /^\d\d:\d\d:\d\d {2}1 lock held, 0 waiters {2}Ctrl-C to quit$/m);
      assert.match(screen, new RegExp(`^tty:first +mutex +${first.owner.slice(0, 8)}… +1 +\\d+\\.\\d s +${first.fence} +0 +—$`, 'm'));
      const second = await padlock.mutex('tty:second').acquire();
      const later = await term.waitFor(/tty:second/);
      assert.equal(later.match(/^padlock watch /gm)?.length, 1, 'redrawn in place: one header on the screen');
      assert.match(later, /2 locks held/);
      await first.release();
      const after = await term.waitFor(/1 lock held/);
      assert.doesNotMatch(after, /tty:first/, 'a released lock leaves the view');
      await term.send('C-c');
      const end = await term.waitFor(/EXIT=\d+/);
      assert.match(end, /EXIT=0/);
      assert.doesNotMatch(end, /padlock watch|tty:second/, 'the alternate screen is gone: the terminal is as it was');
      await second.release();
    } finally {
      await term.close();
    }
  });

  it('watch fits a small terminal: lines cut to its width, rows beyond its height summed up', async () => {
    const padlock = padlockOn(server, { prefix: 'tty3' });
    const leases = await Promise.all(Array.from({ length: 12 }, (_, i) => padlock.mutex(`a-rather-long-lock-name:${i}`).acquire()));
    const term = await Terminal.open(['watch', '--interval', '200ms', '--url', server.url, '--prefix', 'tty3'], { columns: 60, rows: 10 });
    try {
      const screen = await term.waitFor(/more \(a taller terminal/);
      const lines = screen.split('\n');
      assert.ok(lines.length <= 10, `${lines.length} lines on a 10-row terminal:\n${screen}`);
      assert.ok(lines.every((line) => line.length < 60), `a line wrapped:\n${screen}`);
      assert.equal(screen.match(/^padlock watch/gm)?.length, 1);
      assert.match(screen, /^… \d+ more/m);
      await term.send('C-c');
      assert.match(await term.waitFor(/EXIT=\d+/), /EXIT=0/);
    } finally {
      await term.close();
      await Promise.all(leases.map((l) => l.release()));
    }
  });

  it('watch exits 1 with one line when the connection is lost', async () => {
    const own = await startServer();
    const term = await Terminal.open(['watch', '--interval', '200ms', '--url', own.url]);
    try {
      await term.waitFor(/No locks in use under prefix 'padlock'\./);
      await own.stop();
      const end = await term.waitFor(/EXIT=\d+/, 15_000);
      assert.match(end, /^padlock: lost the connection to Redis at redis:\/\/127\.0\.0\.1:\d+: .*$\nEXIT=1$/m);
      assert.doesNotMatch(end, /padlock watch/, 'the screen was restored before the error');
    } finally {
      await term.close();
    }
  });

  it('release asks for confirmation: no leaves the lock held (exit 1), yes frees it (exit 0)', async () => {
    const padlock = padlockOn(server, { prefix: 'tty2' });
    const lease = await padlock.mutex('ask').acquire();
    const declined = await Terminal.open(['release', 'ask', '--force', '--url', server.url, '--prefix', 'tty2']);
    try {
      const prompt = await declined.waitFor(/\? \[y\/N\]/);
      assert.match(prompt, new RegExp(`^Release 'ask', held by ${lease.owner} \\(1 hold\\), fence ${lease.fence}, .* left\\? \\[y/N\\]`, 'm'));
      await declined.send('n', 'Enter');
      assert.match(await declined.waitFor(/EXIT=\d+/), /padlock: not confirmed: 'ask' was left as it is\nEXIT=1/);
      assert.equal(await padlock.mutex('ask').isLocked(), true);
    } finally {
      await declined.close();
    }
    const confirmed = await Terminal.open(['release', 'ask', '--force', '--url', server.url, '--prefix', 'tty2']);
    try {
      await confirmed.waitFor(/\? \[y\/N\]/);
      await confirmed.send('y', 'Enter');
      assert.match(await confirmed.waitFor(/EXIT=\d+/), /released 'ask' .*\nEXIT=0/);
      assert.equal(await padlock.mutex('ask').isLocked(), false);
    } finally {
      await confirmed.close();
    }
    const again = await padlock.mutex('ask').acquire();
    const interrupted = await Terminal.open(['release', 'ask', '--force', '--url', server.url, '--prefix', 'tty2']);
    try {
      await interrupted.waitFor(/\? \[y\/N\]/);
      await interrupted.send('C-c');
      assert.match(await interrupted.waitFor(/EXIT=\d+/), /padlock: interrupted\nEXIT=130/);
      assert.equal(again.isHeld, true);
      assert.equal(await padlock.mutex('ask').isLocked(), true);
    } finally {
      await interrupted.close();
      await again.release().catch(() => undefined);
    }
  });
});
