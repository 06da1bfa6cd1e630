import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { RedisServer } from '../src/devserver/redis-server.js';
import { monotonicNow } from '../src/clock.js';
import { connect, padlockOn, startServer } from './harness/redis.js';

const fixture = (name: string): string => fileURLToPath(new URL(`./fixtures/${name}.js`, import.meta.url));

function firstMessage<T>(child: ChildProcess): Promise<T> {
  return new Promise((resolve, reject) => {
    child.once('message', (message) => resolve(message as T));
    child.once('exit', (code) => reject(new Error(`worker exited with ${code} before reporting`)));
  });
}

let server: RedisServer;
before(async () => {
  server = await startServer();
});

describe('across OS processes', () => {
  it('two processes contending on a counter lose no update and get strictly increasing fences', async () => {
    const rounds = 150;
    const workers = [0, 1].map(() => fork(fixture('counter-worker'), [server.url, 'proc:counter', 'proc:counter:value', String(rounds)]));
    const reports = await Promise.all(workers.map((w) => firstMessage<{ fences: number[] }>(w)));
    const admin = connect(server);
    assert.equal(Number(await admin.get('proc:counter:value')), 2 * rounds, 'no lost update');
    for (const { fences } of reports) {
      for (let i = 1; i < fences.length; i++) assert.ok(fences[i]! > fences[i - 1]!, 'fences increase within a worker');
    }
    const all = reports.flatMap((r) => r.fences);
    assert.equal(new Set(all).size, all.length, 'no fence was handed out twice');
  });

  it('a holder killed with SIGKILL frees the lock after its lease, and its waiter proceeds without any message', async () => {
    const leaseMs = 600;
    const holder = fork(fixture('holder'), [server.url, 'proc:killed', String(leaseMs)]);
    const held = await firstMessage<{ fence: number }>(holder);
    const padlock = padlockOn(server);
    assert.equal(await padlock.mutex('proc:killed').tryAcquire(), null, 'the holder holds it');
    holder.kill('SIGKILL');
    const start = monotonicNow();
    const lease = await padlock.mutex('proc:killed').acquire({ waitMs: 10_000 });
    const waited = monotonicNow() - start;
    assert.ok(lease.fence > held.fence);
    assert.ok(waited < 10_000, 'the waiter was not left waiting for a release message');
    await lease.release();
  });
});
