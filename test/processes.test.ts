import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { fork } from 'node:child_process';
import type { RedisServer } from '../src/devserver/redis-server.js';
import { monotonicNow } from '../src/clock.js';
import { lockKeys } from '../src/keys.js';
import { probeWakes } from './harness/probes.js';
import { commandCalls, connect, padlockOn, startServer } from './harness/redis.js';
import { fixture, firstMessage } from './harness/children.js';


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
    const admin = connect(server);
    const holder = fork(fixture('holder'), [server.url, 'proc:killed', String(leaseMs)]);
    const held = await firstMessage<{ fence: number }>(holder);
    const padlock = padlockOn(server);
    const wakes = probeWakes(padlock);
    assert.equal(await padlock.mutex('proc:killed').tryAcquire(), null, 'the holder holds it');
    holder.kill('SIGKILL');
    await new Promise((resolve) => holder.once('exit', resolve));
    const start = monotonicNow();
    // What is left of the dead holder's lease (it renewed it every leaseMs / 3 while alive).
    const left = await admin.pttl(lockKeys('padlock', 'proc:killed').lock);
    const publishes = await commandCalls(admin, 'publish');
    const calls = await commandCalls(admin, 'evalsha');
    const lease = await padlock.mutex('proc:killed').acquire({ waitMs: 10_000 });
    const waited = monotonicNow() - start;
    assert.ok(lease.fence > held.fence);
    assert.ok(waited >= left - 2, `granted after ${waited.toFixed(0)} ms, while the dead holder's lease had ${left} ms left`);
    assert.equal((await commandCalls(admin, 'publish')) - publishes, 0, 'nothing was published: no release, no wake-up');
    assert.equal(wakes.messages, 0, 'the waiter was sent nothing');
    // It slept until the lease would end (bounded by what Redis said was left, not by its 1 s
    // heartbeat), and so tried a handful of times (try, queue, the retry then): it did not poll.
    assert.ok(wakes.sleeps.length > 0 && wakes.sleeps.every((ms) => ms <= leaseMs + 1), `slept ${wakes.sleeps.join(', ')} ms`);
    const attempts = (await commandCalls(admin, 'evalsha')) - calls;
    assert.ok(attempts <= 6, `${attempts} attempts while ${left} ms of lease ran out`);
    await lease.release();
  });
});
