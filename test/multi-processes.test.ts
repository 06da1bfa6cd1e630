/**
 * The multi-lock across OS processes: callers asking for overlapping sets of names in opposite
 * orders never deadlock (every acquisition succeeds within its wait) and never hold one name at
 * once (no one finds another inside, no lost update on any name's counter).
 */
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { RedisServer } from '../src/devserver/redis-server.js';
import { connect, startServer } from './harness/redis.js';

const fixture = fileURLToPath(new URL('./fixtures/multi-worker.js', import.meta.url));

/** A deadlock between two workers would show as a time-out of this many ms (each worker retries). */
const WAIT_MS = 10_000;

function report(child: ChildProcess): Promise<{ overlaps: number; timeouts: number }> {
  return new Promise((resolve, reject) => {
    child.once('message', (message) => resolve(message as { overlaps: number; timeouts: number }));
    child.once('exit', (code) => reject(new Error(`worker exited with ${code} before reporting`)));
  });
}

let server: RedisServer;
before(async () => {
  server = await startServer();
});

describe('multi-lock across OS processes', () => {
  it('callers asking for overlapping sets in reversed orders never deadlock and never share a name', async () => {
    const rounds = 40;
    const orders = [
      ['x:a', 'x:b', 'x:c'],
      ['x:c', 'x:b', 'x:a'],
      ['x:b', 'x:a'],
      ['x:c', 'x:a'],
    ];
    const workers = orders.map((names) => fork(fixture, [server.url, JSON.stringify(names), String(rounds), String(WAIT_MS)]));
    const reports = await Promise.all(workers.map((worker) => report(worker)));
    assert.deepEqual(reports.map((r) => r.timeouts), [0, 0, 0, 0], 'no acquisition timed out: no deadlock');
    assert.deepEqual(reports.map((r) => r.overlaps), [0, 0, 0, 0], 'no one found another inside a name');
    const admin = connect(server);
    for (const name of ['x:a', 'x:b', 'x:c']) {
      const expected = orders.filter((names) => names.includes(name)).length * rounds;
      assert.equal(Number(await admin.get(`counter:${name}`)), expected, `no lost update on ${name}`);
    }
  });
});
