/**
 * The debug log: with NODE_DEBUG=padlock, one stderr line per script command (script, lock, node,
 * duration, reply status or error), never an owner token; without it, nothing.
 */
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { RedisServer } from '../src/devserver/redis-server.js';
import { describeReply } from '../src/observability/debug-log.js';
import { inspectScript } from '../src/stores/redis/scripts/index.js';
import { startServer } from './harness/redis.js';

const fixture = fileURLToPath(new URL('./fixtures/debug-child.js', import.meta.url));

let server: RedisServer;
before(async () => {
  server = await startServer();
});

async function runChild(lock: string, env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [fixture, server.url, lock], { env: { ...process.env, NODE_DEBUG: '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  return { code, stdout, stderr };
}

describe('debug log (NODE_DEBUG=padlock)', () => {
  it('shows every script call with its lock, node, duration and outcome, and never an owner token', async () => {
    const { code, stdout, stderr } = await runChild('dbg:{a b}', { NODE_DEBUG: 'padlock' });
    assert.equal(code, 0, stderr);
    const owner = stdout.trim();
    assert.match(owner, /^[0-9a-f]{32}$/);
    assert.ok(!stderr.includes(owner), 'the owner token is not logged');
    const lines = stderr.trim().split('\n');
    const node = `127.0.0.1:${server.port}`;
    const call = (script: string, via: string, outcome: string): RegExp =>
      new RegExp(`^PADLOCK \\d+: script ${script.replace('.', '\\.')} lock="dbg:\\{a b\\}" node=${node} ${via} \\d+\\.\\d\\d ms → ${outcome}$`);
    const expected = [
      // A fresh server has no script cached: NOSCRIPT, then the EVAL fallback.
      call('acquire.lua', 'evalsha', 'error ReplyError: NOSCRIPT .*'),
      call('acquire.lua', 'eval', 'acquired fence=\\d+ holdCount=1 pttl=600'),
      call('acquire.lua', 'evalsha', 'busy pttl=\\d+'),
      call('renew.lua', '(evalsha|eval)', '\\[\\d+\\]'),
      call('release.lua', '(evalsha|eval)', 'released remaining=0'),
    ];
    for (const pattern of expected) assert.ok(lines.some((line) => pattern.test(line)), `a line like ${pattern}:\n${stderr}`);
    assert.ok(lines.every((line) => /^PADLOCK \d+: script /.test(line)), `only script lines:\n${stderr}`);
  });

  it('writes nothing without NODE_DEBUG', async () => {
    const { code, stderr } = await runChild('dbg:quiet', {});
    assert.equal(code, 0, stderr);
    assert.equal(stderr, '');
  });

  it("shows an inspect reply's holders as a count, not their tokens", () => {
    const owner = 'f'.repeat(32);
    const text = describeReply(inspectScript, [7, 1200, [owner, 2, 'c0ffee0123456789']]);
    assert.equal(text, 'fence=7 pttl=1200 holders=1');
  });
});
