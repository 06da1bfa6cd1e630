/**
 * The `padlock` command on each Redis client a project may have installed, and on none: the built
 * CLI is copied into fresh project folders whose node_modules hold the CLI's own dependencies and
 * one client (node-redis alone, iovalkey alone) or no client at all, so that module resolution
 * finds only what such a project has (the repository's ioredis is out of its reach). Also the
 * connection's refusals every client shares: a database the server lacks, a server that is not
 * Redis.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { RedisServer } from '../src/devserver/redis-server.js';
import type { InspectReport } from '../src/cli/inspect.js';
import type { ListReport } from '../src/cli/list.js';
import { padlockOn, startServer } from './harness/redis.js';
import { assertOneLineError, cleanEnv, runBin, type Run } from './harness/cli.js';

/** The compiled sources (this file runs as build/test/cli-clients.test.js) and the repository's node_modules. */
const built = fileURLToPath(new URL('../src/', import.meta.url));
const modules = fileURLToPath(new URL('../../node_modules/', import.meta.url));

/** What the CLI itself needs at run time (package.json "dependencies"). */
const CLI_DEPENDENCIES = ['commander', 'cli-table3', 'picocolors'];

/** A project folder with the built CLI and `clients` (package folders of the repository's node_modules) installed. */
function project(root: string, name: string, clients: readonly string[]): string {
  const dir = join(root, name);
  mkdirSync(join(dir, 'node_modules', '@redis'), { recursive: true });
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ private: true, type: 'module' }));
  cpSync(built, join(dir, 'padlock'), { recursive: true });
  for (const dependency of [...CLI_DEPENDENCIES, ...clients]) symlinkSync(join(modules, dependency), join(dir, 'node_modules', dependency), 'dir');
  return join(dir, 'padlock', 'cli', 'main.js');
}

function runIn(bin: string, args: readonly string[]): Promise<Run> {
  const child = spawn(process.execPath, [bin, ...args], { env: cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

let server: RedisServer;
let root: string;
let bins: { none: string; nodeRedis: string; iovalkey: string };
before(async () => {
  server = await startServer();
  root = mkdtempSync(join(tmpdir(), 'padlock-cli-clients-'));
  bins = {
    none: project(root, 'none', []),
    // node-redis is `redis` and its @redis/* packages.
    nodeRedis: project(root, 'node-redis', ['redis', '@redis/client', '@redis/bloom', '@redis/json', '@redis/search', '@redis/time-series']),
    iovalkey: project(root, 'iovalkey', ['iovalkey']),
  };
});
after(() => rmSync(root, { recursive: true, force: true }));

describe('the padlock command in a project without ioredis', () => {
  it('prints its help with no Redis client installed, and says what to install to talk to Redis', async () => {
    for (const args of [['--help'], ['list', '--help'], ['--version']]) {
      const run = await runIn(bins.none, args);
      assert.equal(run.code, 0, `${args.join(' ')}: ${run.stderr}`);
      assert.equal(run.stderr, '');
    }
    assert.match((await runIn(bins.none, ['--help'])).stdout, /^Usage: padlock <command> \[options\]/);
    assertOneLineError(await runIn(bins.none, ['list', '--url', server.url]), 1, /none padlock supports is installed: npm install ioredis \(or iovalkey, or redis\)/);
  });

  for (const client of ['nodeRedis', 'iovalkey'] as const) {
    it(`lists, inspects and force-releases a lock on ${client === 'nodeRedis' ? 'node-redis' : 'iovalkey'} alone`, async () => {
      const prefix = `clients-${client}`;
      const padlock = padlockOn(server, { prefix });
      try {
        const lease = await padlock.mutex('order:1').acquire();
        const listed = await runIn(bins[client], ['list', '--url', server.url, '--prefix', prefix, '--json']);
        assert.equal(listed.code, 0, listed.stderr);
        const list = JSON.parse(listed.stdout) as ListReport;
        assert.deepEqual(list.locks.map((l) => [l.name, l.kind, l.fence]), [['order:1', 'mutex', lease.fence]]);

        const inspected = await runIn(bins[client], ['inspect', 'order:1', '--url', server.url, '--prefix', prefix, '--json']);
        assert.equal(inspected.code, 0, inspected.stderr);
        assert.equal((JSON.parse(inspected.stdout) as InspectReport).lock?.holders[0]?.owner, lease.owner);

        const released = await runIn(bins[client], ['release', 'order:1', '--force', '--yes', '--url', server.url, '--prefix', prefix]);
        assert.equal(released.code, 0, released.stderr);
        assert.equal(await padlock.mutex('order:1').isLocked(), false);
      } finally {
        await padlock.close();
      }
    });
  }

  it('runs the demo on node-redis alone', { timeout: 120_000 }, async () => {
    const demo = await runIn(bins.nodeRedis, ['demo', '--url', server.url, '--sellers', '2', '--tickets', '3']);
    assert.equal(demo.code, 0, demo.stderr);
    assert.match(demo.stdout, /With mutex and with fairMutex, exactly 3\./);
  });
});

describe('the connection refuses what is not the Redis asked for, on every client', () => {
  let http: Server;
  let httpUrl: string;
  before(async () => {
    // A server of another protocol on the port: it answers a Redis command with an HTTP error.
    http = createServer((socket) => socket.once('data', () => socket.end('HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n')));
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    const address = http.address();
    assert.ok(address !== null && typeof address === 'object');
    httpUrl = `redis://127.0.0.1:${address.port}`;
  });
  after(() => http.close());

  for (const client of ['ioredis', 'iovalkey', 'redis']) {
    it(`${client}: a database the server lacks (/99) and a server that is not Redis are one-line errors`, async () => {
      const env = cleanEnv({ PADLOCK_CLIENT: client });
      assertOneLineError(await runBin(['list', '--url', `${server.url}/99`], { env }), 1, /redis:\/\/127\.0\.0\.1:\d+\/99 has no database 99|the server has not the database the URL names/);
      assertOneLineError(await runBin(['inspect', 'x', '--url', httpUrl], { env }), 1, /cannot reach Redis at redis:\/\/127\.0\.0\.1:\d+: the server there is not a Redis server/);
      const db3 = await runBin(['list', '--url', `${server.url}/3`], { env });
      assert.equal(db3.code, 0, db3.stderr);
    });
  }
});
