/**
 * The semaphore across OS processes: it never admits more permits than its limit (the workers count
 * the permits inside their sections themselves), and the permits of a SIGKILLed holder come back
 * after its lease, to a waiter that is sent no message.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { fork, type ChildProcess } from 'node:child_process';
import type { RedisServer } from '../src/devserver/redis-server.js';
import { semaphoreKeys, semaphoreScriptKeys } from '../src/stores/redis/kinds/semaphore-protocol.js';
import { probeWakes } from './harness/probes.js';
import { fixture, firstMessage } from './harness/children.js';
import { connect, padlockOn, startServer } from './harness/redis.js';

let server: RedisServer;
before(async () => {
  server = await startServer();
});

/** Every worker forked here, killed after the file's tests whatever happened (a failed assertion must not leave one holding the run open). */
const children: ChildProcess[] = [];
function worker(args: readonly string[]): ChildProcess {
  const child = fork(fixture('semaphore-worker'), args);
  children.push(child);
  return child;
}
after(() => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

describe('semaphore across OS processes', () => {
  it('never admits more permits than the limit: 5 processes asking 1 or 2 of 3 permits, 60 times each', async () => {
    const limit = 3;
    const workers = [1, 1, 1, 1, 2].map((permits) =>
      worker([server.url, 'semproc:count', String(limit), String(permits), '5000', 'count', '60', '1', 'semproc:count:inside']),
    );
    const reports = await Promise.all(workers.map((w) => firstMessage<{ max: number; fences: number[] }>(w)));
    const max = Math.max(...reports.map((r) => r.max));
    assert.ok(max <= limit, `the workers saw ${max} permits held at once (limit ${limit})`);
    assert.ok(max >= 2, `the sections did overlap (max ${max}): the test exercised the semaphore, not a mutex`);
    const fences = reports.flatMap((r) => r.fences);
    assert.equal(fences.length, 5 * 60);
    assert.equal(new Set(fences).size, fences.length, 'no fence was handed out twice');
    const admin = connect(server);
    assert.equal(Number(await admin.get('semproc:count:inside')), 0);
  });

  it('the permits of a holder killed with SIGKILL come back after its lease; the waiter gets them without a message', async () => {
    const name = 'semproc:killed';
    const holder = worker([server.url, name, '2', '2', '600', 'hold']);
    const held = await firstMessage<{ fence: number }>(holder);
    const padlock = padlockOn(server);
    const wakes = probeWakes(padlock);
    const sem = padlock.semaphore(name, 2);
    assert.equal(await sem.tryAcquire(), null, 'the holder holds both permits');
    holder.kill('SIGKILL');
    await new Promise((resolve) => holder.once('exit', resolve));
    const admin = connect(server);
    const leases = semaphoreScriptKeys(semaphoreKeys('padlock', name))[2]!;
    assert.equal(await admin.zcard(leases), 1, 'the dead holder\'s lease is still there');
    const lease = await sem.acquire({ permits: 2, waitMs: 10_000 });
    assert.ok(lease.fence > held.fence);
    assert.equal(wakes.messages, 0, 'nothing told the waiter: it retried when the lease was due to end');
    assert.deepEqual(await admin.zrange(leases, 0, -1), [lease.owner], 'the dead lease was pruned');
    await lease.release();
  });
});
