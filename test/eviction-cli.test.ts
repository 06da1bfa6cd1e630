/**
 * `padlock list` and `padlock inspect` say when a server's maxmemory-policy evicts keys (a lock's
 * key evicted is a lock taken from its holder): a warning line under the output, and a `servers`
 * field in `--json`; nothing in the text under `noeviction`.
 */
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import type { RedisServer } from '../src/devserver/redis-server.js';
import type { InspectReport } from '../src/cli/inspect.js';
import type { ListReport } from '../src/cli/list.js';
import { cleanEnv, runBin } from './harness/cli.js';
import { padlockOn, startServer } from './harness/redis.js';

let evicting: RedisServer;
let safe: RedisServer;
before(async () => {
  [evicting, safe] = await Promise.all([startServer({ args: ['--maxmemory', '64mb', '--maxmemory-policy', 'volatile-lru'] }), startServer()]);
  for (const server of [evicting, safe]) await padlockOn(server, { prefix: 'evcli' }).mutex('order:1').acquire();
});

async function bin(server: RedisServer, ...args: string[]): Promise<string> {
  const run = await runBin([...args, '--url', server.url, '--prefix', 'evcli'], { env: cleanEnv({ NO_COLOR: '1' }) });
  assert.equal(run.code, 0, run.stderr);
  return run.stdout;
}

const WARNING = (server: RedisServer): RegExp =>
  new RegExp(`^warning: Redis 127\\.0\\.0\\.1:${server.port} has maxmemory-policy volatile-lru: when full, padlock's keys all carry a TTL.*Only noeviction is safe for locks \\(docs/safety\\.md\\)\\.$`, 'm');

describe('padlock list and inspect on an evicting server', () => {
  it('list: a warning line under the table naming the server and its maxmemory-policy; --json: servers', async () => {
    const text = await bin(evicting, 'list');
    assert.match(text, /order:1/);
    assert.match(text, WARNING(evicting));
    const report = JSON.parse(await bin(evicting, 'list', '--json')) as ListReport;
    assert.deepEqual(report.servers, [{ address: `127.0.0.1:${evicting.port}`, maxmemoryPolicy: 'volatile-lru', evicts: true }]);
  });

  it('inspect: the same warning under the lock; --json: servers', async () => {
    const text = await bin(evicting, 'inspect', 'order:1');
    assert.match(text, /held by/);
    assert.match(text, WARNING(evicting));
    const report = JSON.parse(await bin(evicting, 'inspect', 'order:1', '--json')) as InspectReport;
    assert.deepEqual(report.servers, [{ address: `127.0.0.1:${evicting.port}`, maxmemoryPolicy: 'volatile-lru', evicts: true }]);
  });

  it('says nothing under noeviction; --json reports the policy', async () => {
    for (const command of [['list'], ['inspect', 'order:1']]) {
      assert.doesNotMatch(await bin(safe, ...command), /warning|maxmemory/);
      const report = JSON.parse(await bin(safe, ...command, '--json')) as ListReport | InspectReport;
      assert.deepEqual(report.servers, [{ address: `127.0.0.1:${safe.port}`, maxmemoryPolicy: 'noeviction', evicts: false }]);
    }
  });
});
