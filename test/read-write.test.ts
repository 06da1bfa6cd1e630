import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import type { RedisServer } from '../src/devserver/redis-server.js';
import { LockUpgradeError, PadlockOptionError, type Lease } from '../src/index.js';
import { ReadWriteProtocol, holdMember, readWriteKeys } from '../src/stores/redis/kinds/read-write-protocol.js';
import { probeWakes } from './harness/probes.js';
import { commandCalls, connect, eventually, padlockOn, runCall, startServer } from './harness/redis.js';
import { internals, redisInternals } from '../src/testing.js';

let server: RedisServer;
before(async () => {
  server = await startServer();
});

const keysOf = (name: string) => readWriteKeys('write')('padlock', name);

describe('readWrite: sharing and exclusion', () => {
  it('readers share the lock; a writer waits for every reader, and readers wait for a writer', async () => {
    const padlock = padlockOn(server);
    const { read, write } = padlock.readWrite('rw:share');
    const r1 = await read.acquire();
    const r2 = await read.tryAcquire();
    assert.ok(r2 !== null, 'a second reader shares the lock');
    assert.equal(await write.tryAcquire(), null, 'a writer is refused while readers hold');
    assert.equal(await read.isLocked(), true);
    assert.equal(await write.isLocked(), false);
    const writing = write.acquire({ waitMs: 10_000 });
    await r1.release();
    await r2.release();
    const w = await writing;
    assert.equal(await read.tryAcquire(), null, 'a reader is refused while the writer holds');
    assert.equal(await write.tryAcquire(), null, 'so is another writer');
    assert.equal(await write.isLocked(), true);
    assert.equal(await read.isLocked(), false);
    await w.release();
    const r3 = await read.tryAcquire();
    assert.ok(r3 !== null);
    await r3.release();
  });

  it('every write gets a fresh, greater fence; a read gets the fence of the last write before it', async () => {
    const padlock = padlockOn(server);
    const { read, write } = padlock.readWrite('rw:fences');
    const r0 = await read.acquire();
    assert.ok(r0.fence > 1e15, 'with nothing known, the first fence is the server clock in µs');
    await r0.release();
    const w1 = await write.acquire();
    assert.ok(w1.fence > r0.fence);
    await w1.release();
    const r1 = await read.acquire();
    const r2 = await read.acquire();
    assert.equal(r1.fence, w1.fence);
    assert.equal(r2.fence, w1.fence);
    await Promise.all([r1.release(), r2.release()]);
    const w2 = await write.acquire();
    assert.equal(w2.fence, w1.fence + 1);
    await w2.release();
  });
});

describe('readWrite: writer preference and admission', () => {
  it('once a writer waits, new readers queue behind it, and are admitted together when it leaves', async () => {
    const admin = connect(server);
    const keys = keysOf('rw:prefer');
    const a = padlockOn(server);
    const b = padlockOn(server);
    const wakes = probeWakes(b, { messagesOnly: true });
    const first = await a.readWrite('rw:prefer').read.acquire();
    const writing = a.readWrite('rw:prefer').write.acquire();
    assert.ok(await eventually(async () => (await admin.llen(keys.queue)) === 1), 'the writer queued');
    assert.equal(await b.readWrite('rw:prefer').read.tryAcquire(), null, 'a new reader may not pass a waiting writer');
    const readers = [0, 1, 2].map(() => b.readWrite('rw:prefer').read.acquire());
    assert.ok(await eventually(async () => (await admin.llen(keys.queue)) === 4), 'the readers queued behind it');
    await first.release();
    const w = await writing;
    const publishes = await commandCalls(admin, 'publish');
    await w.release();
    const leases = await Promise.all(readers);
    assert.equal((await commandCalls(admin, 'publish')) - publishes, 3, 'one release handed all three readers their holds');
    assert.equal(wakes.messages, 3, 'each reader was told by a message, not a retry');
    for (const lease of leases) assert.equal(lease.fence, w.fence, 'admitted after the writer: its fence');
    await Promise.all(leases.map((l) => l.release()));
  });

  it('a writer gets the lock within a bounded wait under a continuous stream of overlapping readers', async () => {
    const padlock = padlockOn(server);
    const name = 'rw:stream';
    const { read, write } = padlock.readWrite(name);
    let streaming = true;
    let writerFence = 0;
    const afterWriter: number[] = [];
    // Readers overlap without a gap: each starts the next one before releasing its own hold.
    const reader = async (): Promise<void> => {
      while (streaming) {
        const lease = await read.acquire();
        if (writerFence > 0) afterWriter.push(lease.fence);
        const next = streaming ? reader() : Promise.resolve();
        await new Promise((resolve) => setTimeout(resolve, 5));
        await lease.release();
        await next;
        return;
      }
    };
    const streams = [reader(), reader(), reader()];
    await new Promise((resolve) => setTimeout(resolve, 100));
    // Bounded: with the stream still running, the writer must get the lock within waitMs.
    const w = await write.acquire({ waitMs: 20_000 });
    writerFence = w.fence;
    assert.equal(await read.tryAcquire(), null);
    await w.release();
    streaming = false;
    await Promise.all(streams);
    assert.ok(afterWriter.length > 0 && afterWriter.every((fence) => fence === writerFence), 'readers after it saw its fence');
  });

  it('a waiter that gives up leaves the queue, and the readers behind it are admitted', async () => {
    const admin = connect(server);
    const keys = keysOf('rw:leave');
    const padlock = padlockOn(server);
    const { read, write } = padlock.readWrite('rw:leave');
    const holder = await read.acquire();
    const controller = new AbortController();
    const writing = write.acquire({ signal: controller.signal });
    assert.ok(await eventually(async () => (await admin.llen(keys.queue)) === 1));
    const reading = read.acquire({ waitMs: 10_000 });
    assert.ok(await eventually(async () => (await admin.llen(keys.queue)) === 2));
    controller.abort(new Error('gave up'));
    await assert.rejects(writing, /gave up/);
    const r = await reading;
    assert.equal(await admin.llen(keys.queue), 0);
    await Promise.all([r.release(), holder.release()]);
  });
});

describe('readWrite: re-entry, downgrade, upgrade', () => {
  it('both sides re-enter by async context and by owner token, with the same fence', async () => {
    const padlock = padlockOn(server);
    const other = padlockOn(server);
    const { read, write } = padlock.readWrite('rw:reenter');
    await read.withLock(async (outer) => {
      const inner = await read.acquire();
      assert.equal(inner.holdCount, 2);
      assert.equal(inner.fence, outer.fence);
      const remote = await other.readWrite('rw:reenter').read.acquire({ owner: outer.owner });
      assert.equal(remote.holdCount, 3);
      await Promise.all([inner.release(), remote.release()]);
    });
    await write.withLock(async (outer) => {
      const inner = await write.acquire();
      assert.equal(inner.holdCount, 2);
      assert.equal(inner.fence, outer.fence);
      const remote = await other.readWrite('rw:reenter').write.acquire({ owner: outer.owner });
      assert.equal(remote.holdCount, 3);
      await Promise.all([inner.release(), remote.release()]);
    });
    assert.equal(await write.isLocked(), false);
    assert.equal(await read.isLocked(), false);
  });

  it('a writer downgrades in its context: it takes the read lock past queued writers, releases the write lock, and reads on', async () => {
    const admin = connect(server);
    const keys = keysOf('rw:down');
    const padlock = padlockOn(server);
    const { read, write } = padlock.readWrite('rw:down');
    const w = await write.acquire();
    const otherWriter = padlockOn(server).readWrite('rw:down').write.acquire({ waitMs: 20_000 });
    assert.ok(await eventually(async () => (await admin.llen(keys.queue)) === 1));
    const r = await internals(padlock).runtime.runScoped([w.hold], () => read.acquire({ waitMs: 0 }));
    assert.equal(r.fence, w.fence);
    assert.notEqual(r.owner, w.owner);
    await w.release();
    assert.equal(await read.isLocked(), true, 'still reading');
    assert.equal(await write.isLocked(), false);
    assert.ok(await eventually(async () => (await admin.llen(keys.queue)) === 1), 'the other writer still waits');
    await r.release();
    const other = await otherWriter;
    assert.ok(other.fence > w.fence);
    await other.release();
  });

  it('a writer downgrades by owner token, from another Padlock', async () => {
    const padlock = padlockOn(server);
    const w = await padlock.readWrite('rw:down-owner').write.acquire();
    const r = await padlockOn(server).readWrite('rw:down-owner').read.acquire({ owner: w.owner, waitMs: 0 });
    assert.equal(r.owner, w.owner);
    assert.equal(r.fence, w.fence);
    await w.release();
    assert.equal(await padlock.readWrite('rw:down-owner').read.isLocked(), true);
    assert.equal(await padlock.readWrite('rw:down-owner').write.tryAcquire(), null);
    await r.release();
    assert.equal(await padlock.readWrite('rw:down-owner').read.isLocked(), false);
  });

  it('an upgrade is refused at once with LockUpgradeError, by context and by owner, and changes nothing', async () => {
    const padlock = padlockOn(server);
    const { read, write } = padlock.readWrite('rw:up');
    const r = await read.acquire();
    // No waitMs: an upgrade that waited would wait forever (its own read hold), so rejecting proves it did not.
    const byContext = internals(padlock).runtime.runScoped([r.hold], () => write.acquire());
    await assert.rejects(byContext, (e: unknown) => e instanceof LockUpgradeError && e.code === 'LOCK_UPGRADE' && e.lock === 'rw:up');
    const byOwner = padlockOn(server).readWrite('rw:up').write.acquire({ owner: r.owner });
    await assert.rejects(byOwner, (e: unknown) => e instanceof LockUpgradeError && e.owner === r.owner);
    assert.equal(await write.isLocked(), false);
    assert.equal(await read.isLocked(), true, 'the read hold stands');
    await r.release();
    assert.equal(await read.isLocked(), false);
  });
});

describe('readWrite: leases', () => {
  it("each read hold has its own lease on the server clock: renewing or extending one leaves the others' alone", async () => {
    const admin = connect(server);
    const keys = keysOf('rw:leases');
    const padlock = padlockOn(server, { leaseMs: 900 });
    const { read } = padlock.readWrite('rw:leases');
    const a = await read.acquire(); // renewed by the watchdog every 300 ms
    const b = await read.acquire({ leaseMs: 60_000 }); // a fixed lease: never renewed
    const before = await admin.zscore(keys.leases, holdMember('read', b.owner));
    const first = Number(await admin.zscore(keys.leases, holdMember('read', a.owner)));
    assert.ok(await eventually(async () => Number(await admin.zscore(keys.leases, holdMember('read', a.owner))) > first, 10_000), 'the watchdog renews it');
    await a.extend(5_000);
    assert.equal(await admin.zscore(keys.leases, holdMember('read', b.owner)), before, "renewing and extending one lease leave the other's alone");
    await Promise.all([a.release(), b.release()]);
  });

  it("the watchdog renews read and write holds of many locks in one rw-renew.lua call", async () => {
    const padlock = padlockOn(server, { leaseMs: 600 });
    const batches: number[] = [];
    const topology = redisInternals(padlock).topology;
    const runMany = topology.runMany.bind(topology);
    topology.runMany = (calls) => {
      for (const call of calls) if (call.script.name === 'rw-renew.lua') batches.push(call.keys.length / 2);
      return runMany(calls);
    };
    const leases: Lease[] = [];
    for (let i = 0; i < 4; i++) {
      const { read } = padlock.readWrite(`rw:batch:${i}`);
      leases.push(await read.acquire(), await read.acquire());
    }
    for (let i = 4; i < 7; i++) leases.push(await padlock.readWrite(`rw:batch:${i}`).write.acquire());
    assert.ok(await eventually(() => batches.some((holds) => holds === leases.length), 5_000), `renewal calls renewed ${batches.join(', ')} holds`);
    assert.ok(leases.every((l) => l.isHeld));
    await Promise.all(leases.map((l) => l.release()));
  });

  it('keys expire once unused: the leases with the last hold, the state an hour after, the queue after its last waiter', async () => {
    const admin = connect(server);
    const keys = keysOf('rw:expiry');
    const padlock = padlockOn(server);
    const { read, write } = padlock.readWrite('rw:expiry');
    const holder = await write.acquire({ leaseMs: 5_000 });
    const waiting = read.acquire({ waitMs: 10_000 });
    assert.ok(await eventually(async () => (await admin.llen(keys.queue)) === 1));
    assert.ok((await admin.pttl(keys.queue)) > 0);
    assert.ok((await admin.pttl(keys.leases)) > 0 && (await admin.pttl(keys.leases)) <= 5_000);
    await holder.release();
    const r = await waiting;
    await r.release();
    assert.equal(await admin.exists(keys.leases, keys.queue), 0);
    const ttl = await admin.pttl(keys.state);
    assert.ok(ttl > 3_500_000 && ttl <= 3_600_000, `state kept ${ttl} ms for its fence`);
  });
  it('many names read and written leave no key without an expiry, none longer than an hour', async () => {
    const admin = connect(server);
    const padlock = padlockOn(server);
    await Promise.all(
      Array.from({ length: 200 }, async (_, i) => {
        const { read, write } = padlock.readWrite(`rw-footprint:${i}`);
        await (await read.acquire()).release();
        await (await write.acquire()).release();
      }),
    );
    const keys = await admin.keys('padlock:{rw-footprint:*');
    assert.equal(keys.length, 200, 'one key per name: the state hash, keeping the fence');
    for (const key of keys) {
      const pttl = await admin.pttl(key);
      assert.ok(pttl > 0 && pttl <= 3_600_000, `${key} expires in ${pttl} ms`);
    }
  });
});

describe('readWrite: resends and input', () => {
  it('a resent acquire, re-entry or release changes no count twice', async () => {
    const admin = connect(server);
    const keys = readWriteKeys('read')('padlock', 'rw:resend');
    const protocol = new ReadWriteProtocol(keys, 'client', false);
    const owner = 'resend-owner-0123456789';
    const acquire = protocol.attempt(owner, 10_000, 'try', 1_000);
    const first = await runCall(admin, acquire);
    const second = await runCall(admin, acquire);
    assert.ok(first.status === 'acquired' && second.status === 'acquired');
    assert.equal(second.fence, first.fence);
    assert.equal(second.holdCount, 1, 'the resent acquire took nothing more');
    const reenter = protocol.reenter(owner, 10_000);
    assert.equal((await runCall(admin, reenter)).status, 'acquired');
    const again = await runCall(admin, reenter);
    assert.ok(again.status === 'acquired' && again.holdCount === 2, 'the resent re-entry counted once');
    const release = protocol.release(owner, 1);
    assert.deepEqual(await runCall(admin, release), { status: 'released', remaining: 1 });
    // Other readers' calls go through the same request log: 40 of them before the resend arrives.
    for (let i = 0; i < 20; i++) {
      const other = `resend-other-${String(i).padStart(10, '0')}`;
      await runCall(admin, protocol.attempt(other, 10_000, 'try', 1_000));
      await runCall(admin, protocol.reenter(other, 10_000));
      await runCall(admin, protocol.release(other, 2));
    }
    assert.deepEqual(await runCall(admin, release), { status: 'released', remaining: 1 }, 'the resent release counted once');
    assert.deepEqual(await runCall(admin, protocol.release(owner, 1)), { status: 'released', remaining: 0 });
    assert.equal(await admin.exists(keys.leases), 0);
  });

  it('leaving the queue frees a hold handed over meanwhile and admits the next waiters; run again, it changes nothing', async () => {
    const admin = connect(server);
    const write = new ReadWriteProtocol(readWriteKeys('write')('padlock', 'rw:leave-handed'), 'client', false);
    const read = new ReadWriteProtocol(readWriteKeys('read')('padlock', 'rw:leave-handed'), 'client', false);
    const [holder, gone, next] = ['leave-holder-0123456789', 'leave-gone-01234567890', 'leave-next-01234567890'];
    assert.equal((await runCall(admin, write.attempt(holder, 10_000, 'try', 1_000))).status, 'acquired');
    assert.equal((await runCall(admin, write.attempt(gone, 10_000, 'queue', 1_000))).status, 'busy');
    assert.equal((await runCall(admin, read.attempt(next, 10_000, 'queue', 1_000))).status, 'busy');
    assert.deepEqual(await runCall(admin, write.release(holder, 1)), { status: 'released', remaining: 0 });
    assert.deepEqual(await runCall(admin, write.inspect()), { writer: true, readers: 0, fence: (await runCall(admin, write.inspect())).fence }, 'the queued writer was handed the lock');
    assert.equal(await runCall(admin, write.leave(gone)), true, 'it held the lock: freed');
    const after = await runCall(admin, write.inspect());
    assert.equal(after.writer, false);
    assert.equal(after.readers, 1, 'the reader behind it was admitted');
    assert.equal(await runCall(admin, write.leave(gone)), false);
    assert.deepEqual(await runCall(admin, write.inspect()), after, 'leaving again changed nothing');
    assert.deepEqual(await runCall(admin, read.release(next, 1)), { status: 'released', remaining: 0 });
  });

  it('bad input is refused with PadlockOptionError before anything is sent', async () => {
    const admin = connect(server);
    const padlock = padlockOn(server);
    const calls = await commandCalls(admin, 'evalsha');
    assert.throws(() => padlock.readWrite(''), PadlockOptionError);
    assert.throws(() => padlock.readWrite(42 as unknown as string), PadlockOptionError);
    const { read, write } = padlock.readWrite('rw:input');
    await assert.rejects(read.acquire({ waitMs: -1 }), PadlockOptionError);
    await assert.rejects(write.acquire({ leaseMs: 1 }), PadlockOptionError);
    await assert.rejects(read.acquire({ owner: 'not a token' }), PadlockOptionError);
    await assert.rejects(write.withLock('no' as unknown as (lease: Lease) => void), PadlockOptionError);
    assert.equal(await commandCalls(admin, 'evalsha'), calls);
  });

  it('forceRelease takes away one side whoever holds it, and admits the waiters', async () => {
    const padlock = padlockOn(server);
    const { read, write } = padlock.readWrite('rw:force');
    const lost: unknown[] = [];
    padlock.on('lost', (e) => lost.push(e));
    await read.acquire({ leaseMs: 600, autoExtend: true });
    const writing = write.acquire({ waitMs: 10_000 });
    assert.equal(await write.forceRelease(), false, 'no writer held');
    assert.equal(await read.forceRelease(), true);
    const w = await writing;
    assert.ok(await eventually(() => lost.length === 1, 5_000), 'the reader is told (the force-release names the lock; the admitted writer, checked too, keeps its hold)');
    assert.equal(w.isHeld, true);
    await w.release();
  });
});
