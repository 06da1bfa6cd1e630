import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { fork } from 'node:child_process';
import type { RedisServer } from '../src/devserver/redis-server.js';
import { lockKeys } from '../src/keys.js';
import { MutexProtocol } from '../src/stores/redis/kinds/mutex-protocol.js';
import { probeScripts, probeWakes } from './harness/probes.js';
import { connect, delay, eventually, padlockOn, runCall, startServer } from './harness/redis.js';
import { holdsOf } from './harness/lock-state.js';
import { fixture } from './harness/children.js';


let server: RedisServer;
before(async () => {
  server = await startServer();
});

describe('fairMutex', () => {
  it('serves waiters from several processes in arrival order', async () => {
    const admin = connect(server);
    const keys = lockKeys('padlock', 'fair:fifo');
    const holder = await padlockOn(server).fairMutex('fair:fifo').acquire();
    const workers = [];
    for (let i = 0; i < 5; i++) {
      const worker = fork(fixture('fair-waiter'), [server.url, 'fair:fifo', '30000', String(i), 'fair:fifo:order']);
      workers.push(new Promise((resolve) => worker.once('exit', resolve)));
      // Let each one join the queue before the next starts, so arrival order is known.
      assert.ok(await eventually(async () => (await admin.llen(keys.queue)) === i + 1, 10_000), `worker ${i} queued`);
    }
    await holder.release();
    await Promise.all(workers);
    assert.deepEqual(await admin.lrange('fair:fifo:order', 0, -1), ['0', '1', '2', '3', '4']);
  });

  it('hands the lock over in the release itself: the waiter is told, not woken to retry', async () => {
    const admin = connect(server);
    const a = padlockOn(server);
    const b = padlockOn(server, { leaseMs: 2_000 }); // within the heartbeat allowance: the handoff grants the whole lease
    // No heartbeat either: whatever b sends after the release, it sends because of the release.
    const wakes = probeWakes(b, { messagesOnly: true });
    const scripts = probeScripts(b);
    const holder = await a.fairMutex('fair:handoff').acquire();
    const waiting = b.fairMutex('fair:handoff').acquire();
    assert.ok(await eventually(async () => (await admin.llen(lockKeys('padlock', 'fair:handoff').queue)) === 1));
    const attempts = scripts.get('acquire.lua');
    await holder.release();
    const lease = await waiting;
    assert.equal(scripts.get('acquire.lua'), attempts, 'the waiter sent no attempt after the release: the message gave it the lock');
    assert.equal(wakes.messages, 1);
    assert.ok(lease.fence > holder.fence);
    await lease.release();
  });

  it('keeps a slow but live waiter\'s place however long it waits', async () => {
    const admin = connect(server);
    // Heartbeat every 200 ms, allowance 600 ms: a live waiter is skipped only if its process stalls 400 ms.
    const padlock = padlockOn(server, { leaseMs: 600 });
    const holder = await padlock.fairMutex('fair:patient').acquire();
    const order: string[] = [];
    const first = padlock.fairMutex('fair:patient').acquire().then(async (l) => (order.push('first'), l.release()));
    assert.ok(await eventually(async () => (await admin.llen(lockKeys('padlock', 'fair:patient').queue)) === 1));
    const second = padlock.fairMutex('fair:patient').acquire().then(async (l) => (order.push('second'), l.release()));
    await delay(2_400); // four allowances
    await holder.release();
    await Promise.all([first, second]);
    assert.deepEqual(order, ['first', 'second']);
  });

  it('skips a waiter killed while queued once its heartbeat allowance runs out', async () => {
    const admin = connect(server);
    const keys = lockKeys('padlock', 'fair:dead');
    const holder = await padlockOn(server, { leaseMs: 60_000 }).fairMutex('fair:dead').acquire();
    const doomed = fork(fixture('fair-waiter'), [server.url, 'fair:dead', '300', 'doomed', 'fair:dead:order']); // allowance 300 ms
    assert.ok(await eventually(async () => (await admin.llen(keys.queue)) === 1, 10_000));
    const live = padlockOn(server).fairMutex('fair:dead').acquire({ waitMs: 20_000 });
    assert.ok(await eventually(async () => (await admin.llen(keys.queue)) === 2));
    doomed.kill('SIGKILL');
    await new Promise((resolve) => doomed.once('exit', resolve));
    await holder.release(); // may hand the lock to the dead waiter, capped at its allowance
    const lease = await live;
    assert.equal(await admin.llen('fair:dead:order'), 0, 'the dead waiter never ran');
    await lease.release();
    assert.equal(await admin.exists(keys.queue), 0, 'nothing left in the queue');
  });

  it('leaves no queue entry behind after a timeout or an abort', async () => {
    const admin = connect(server);
    const keys = lockKeys('padlock', 'fair:giveup');
    const p = padlockOn(server);
    const holder = await p.fairMutex('fair:giveup').acquire();
    await assert.rejects(p.fairMutex('fair:giveup').acquire({ waitMs: 100 }), { name: 'LockTimeoutError' });
    // The rejection comes at once and the leave runs after it: a call on the same connection waits for it.
    assert.equal(await p.fairMutex('fair:giveup').isLocked(), true);
    assert.equal(await admin.llen(keys.queue), 0);
    const controller = new AbortController();
    const waiting = p.fairMutex('fair:giveup').acquire({ signal: controller.signal });
    assert.ok(await eventually(async () => (await admin.llen(keys.queue)) === 1));
    controller.abort(new Error('stop'));
    await assert.rejects(waiting, /stop/);
    assert.equal(await p.fairMutex('fair:giveup').isLocked(), true);
    assert.equal(await admin.llen(keys.queue), 0);
    await holder.release();
    assert.equal(await p.fairMutex('fair:giveup').isLocked(), false, 'no one was handed the lock');
  });

  it('passes on a lock handed to a waiter that has just given up, instead of stranding it', async () => {
    const admin = connect(server);
    const keys = lockKeys('padlock', 'fair:passon');
    const ghostProtocol = new MutexProtocol(keys, 'fair', 'ghostclient');
    const p = padlockOn(server);
    const holder = await p.fairMutex('fair:passon').acquire();
    // A waiter from some client that will never read its message.
    const ghost = 'g'.repeat(32);
    const queued = await runCall(admin, ghostProtocol.attempt(ghost, 30_000, 'queue', 1_700)); // allowance 5.1 s
    assert.equal(queued.status, 'busy', 'queued');
    // Only a handoff message moves the live waiter: a lock stranded with the ghost (or freed
    // without a handoff) would leave it waiting out its waitMs, not found at a heartbeat.
    probeWakes(p, { messagesOnly: true });
    const live = p.fairMutex('fair:passon').acquire({ waitMs: 10_000 });
    assert.ok(await eventually(async () => (await admin.llen(keys.queue)) === 2));
    await holder.release(); // handed to the ghost
    assert.equal(await holdsOf(admin, keys.lock, ghost), 1);
    assert.equal(await runCall(admin, ghostProtocol.leave(ghost)), true, 'the ghost gives up and passes the lock on');
    const lease = await live;
    assert.ok(lease.isHeld);
    await lease.release();
  });

  it('re-enters, fences and renews like the mutex, and its lease survives a handoff\'s short first lease', async () => {
    const admin = connect(server);
    const a = padlockOn(server, { leaseMs: 60_000 });
    const b = padlockOn(server, { leaseMs: 60_000 });
    const holder = await a.fairMutex('fair:lease').acquire();
    const waiting = b.fairMutex('fair:lease').acquire();
    assert.ok(await eventually(async () => (await admin.llen(lockKeys('padlock', 'fair:lease').queue)) === 1));
    await holder.release();
    const lease = await waiting;
    // The handoff granted at most the heartbeat allowance (3 s); the new holder lengthens it at once.
    assert.ok(await eventually(async () => (await admin.pttl(lockKeys('padlock', 'fair:lease').lock)) > 10_000), 'lengthened to the asked lease');
    const inner = await b.fairMutex('fair:lease').acquire({ owner: lease.owner });
    assert.equal(inner.fence, lease.fence);
    assert.equal(inner.holdCount, 2);
    await inner.release();
    await lease.release();
  });
});
