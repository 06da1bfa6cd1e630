/**
 * padlock on ZooKeeper through its public API (`new Padlock({ zookeeper })`), on a real standalone
 * server: what is particular to this store — one watch per waiter, no znode left behind, the session
 * as liveness, re-entry by owner across Padlocks (each its own session), downgrade, the stored
 * semaphore limit and a fixed lease's end. The store-neutral behaviour is test/stores.test.ts's.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import zookeeper from 'node-zookeeper-client';
import type { Client } from 'node-zookeeper-client';
import { freePort } from '../src/devserver/redis-server.js';
import { LockLostError, LockTimeoutError, LockUpgradeError, Padlock, PadlockOptionError, ZooKeeperSessionExpiredError, ZooKeeperUnavailableError, type Lease } from '../src/index.js';
import { delay, eventually, lossOf } from './harness/redis.js';
import { fourLetters, startZooKeeper, type Ensemble } from './harness/zookeeper.js';
import { closeClient, connected, TEST_SESSION_TIMEOUT_MS, zooKeeperClient, zooKeeperLeftovers } from './harness/zookeeper-store-target.js';

const clients: Client[] = [];
const padlocks: Padlock[] = [];
/** Closes the Padlocks and clients a suite made, before its servers stop (a client closed after would keep reconnecting). */
async function closeAll(): Promise<void> {
  await Promise.all(padlocks.splice(0).map((p) => p.close({ drainMs: 0 })));
  for (const client of clients.splice(0)) closeClient(client);
}

/** A Padlock with a client (a session) of its own, not yet connected. */
function padlockOn(ensemble: Ensemble, options: { prefix?: string; leaseMs?: number; sessionTimeout?: number } = {}): Padlock {
  const client = zooKeeperClient(ensemble, options.sessionTimeout);
  clients.push(client);
  const padlock = new Padlock({ zookeeper: client, prefix: options.prefix, leaseMs: options.leaseMs });
  padlocks.push(padlock);
  return padlock;
}

/** The number of watchers on each watched znode whose path contains `part` (`wchp`). */
async function watchersOn(ensemble: Ensemble, part: string): Promise<number[]> {
  const byPath = (await fourLetters(ensemble.servers[0]?.port ?? 0, 'wchp')) ?? '';
  return byPath
    .split('\n/')
    .filter((block) => block.split('\n')[0]?.includes(part))
    .map((block) => block.split('\n').filter((line) => /^\s*0x/.test(line)).length);
}

describe('padlock on ZooKeeper (standalone)', { timeout: 60_000 }, () => {
  after(closeAll);
  let ensemble: Ensemble;
  let reader: Client;
  let a: Padlock;
  let b: Padlock;
  before(async () => {
    ensemble = await startZooKeeper(1);
    reader = zooKeeperClient(ensemble);
    clients.push(reader);
    await connected(reader);
    a = padlockOn(ensemble);
    b = padlockOn(ensemble);
  });

  it('takes a client not yet connected; refuses a client of another shape, naming the option', async () => {
    const lease = await padlockOn(ensemble).mutex('zs:fresh').acquire();
    assert.ok(lease.fence > 0);
    await lease.release();
    assert.throws(() => new Padlock({ zookeeper: {} as Client }), (error: unknown) => error instanceof PadlockOptionError && error.option === 'zookeeper');
    const refused = (options: object): boolean => {
      try {
        new Padlock(options);
        return false;
      } catch (error) {
        return error instanceof PadlockOptionError && error.option === 'zookeeperFactory';
      }
    };
    assert.ok(refused({ zookeeper: reader, zookeeperFactory: 'host:2181' }), 'not a function');
    assert.ok(refused({ redis: {}, zookeeperFactory: () => reader }), 'without zookeeper');
  });

  it('connects a client its owner never connected (no client.connect()); an address nothing listens on fails naming it, in whole ms; the client\'s own close() after either does not crash', async () => {
    // As a new user writes it: createClient, new Padlock, and close both in `finally`.
    const client = zookeeper.createClient(ensemble.connectString, { sessionTimeout: TEST_SESSION_TIMEOUT_MS, spinDelay: 100 });
    const padlock = new Padlock({ zookeeper: client });
    try {
      const lease = await padlock.mutex('zs:never-connected').acquire({ waitMs: 5_000 });
      assert.ok(lease.fence > 0);
      await lease.release();
    } finally {
      await padlock.close();
      client.close();
    }
    const port = await freePort();
    const nowhere = zookeeper.createClient(`127.0.0.1:${port}`, { sessionTimeout: TEST_SESSION_TIMEOUT_MS, spinDelay: 100 });
    const lost = new Padlock({ zookeeper: nowhere, replyTimeoutMs: 1_000 });
    try {
      await assert.rejects(lost.mutex('zs:nowhere').acquire({ waitMs: 200 }), (error: unknown) => {
        assert.ok(error instanceof ZooKeeperUnavailableError, String(error));
        assert.match(error.message, new RegExp(`no session with ZooKeeper at 127\\.0\\.0\\.1:${port} within \\d+ ms: the client never connected`));
        return true;
      });
    } finally {
      await lost.close();
      nowhere.close();
    }
    await delay(300); // the client's close request is written on a later tick: a crash would come then
  });

  it('excludes across Padlocks, serves waiters in arrival order with strictly increasing fences; tryAcquire → null, waitMs → LockTimeoutError', async () => {
    const first = await a.mutex('zs:fifo').acquire();
    assert.equal(await b.mutex('zs:fifo').tryAcquire(), null);
    await assert.rejects(b.mutex('zs:fifo').acquire({ waitMs: 100 }), LockTimeoutError);
    const order: number[] = [];
    const fences: number[] = [first.fence];
    const waits = [0, 1, 2, 3].map(async (i) => {
      await delay(60 * i);
      await (i % 2 === 0 ? a : b).fairMutex('zs:fifo').withLock(async (lease) => {
        order.push(i);
        fences.push(lease.fence);
        await delay(5);
      });
    });
    await delay(400);
    await first.release();
    await Promise.all(waits);
    assert.deepEqual(order, [0, 1, 2, 3]);
    for (let i = 1; i < fences.length; i++) assert.ok((fences[i] ?? 0) > (fences[i - 1] ?? 0), `fence ${fences[i]} after ${fences[i - 1]}`);
  });

  it('no herd: with 6 waiting Padlocks each child is watched by one waiter (beside its owner), and a release serves one', async () => {
    const holder = await a.mutex('zs:herd').acquire();
    const waiters = [0, 1, 2, 3, 4, 5].map(() => padlockOn(ensemble));
    const served: number[] = [];
    const leases: Lease[] = [];
    const waits = waiters.map(async (padlock, i) => {
      await delay(80 * i);
      leases[i] = await padlock.mutex('zs:herd').acquire();
      served.push(i);
    });
    // Each child is also watched by its own session (a force-release is heard at once): seven
    // children, each watched by its owner and by at most the one waiter behind it.
    // The last watches are set a moment after the last create: wait for the counts to settle (a herd never would).
    const settled = async (): Promise<boolean> => (await watchersOn(ensemble, 'zs%3Aherd/')).sort().join() === '1,2,2,2,2,2,2';
    await eventually(settled, 10_000);
    assert.deepEqual((await watchersOn(ensemble, 'zs%3Aherd/')).sort(), [1, 2, 2, 2, 2, 2, 2], 'one waiter watching each child beside its owner');
    await holder.release();
    assert.ok(await eventually(() => served.length === 1));
    await delay(200);
    // Which waiter is first depends on which client connected first, not on the stagger alone.
    assert.equal(served.length, 1, 'one release, one waiter served');
    for (let i = 0; i < 6; i++) {
      assert.ok(await eventually(() => served.length === i + 1));
      await leases[served[i] as number]?.release();
    }
    await Promise.all(waits);
    assert.deepEqual([...served].sort(), [0, 1, 2, 3, 4, 5]);
  });

  it('leaves no znode behind: after a release, a wait timed out, a wait aborted, and close() of a Padlock holding and waiting', async () => {
    const prefix = 'tidy';
    const c = padlockOn(ensemble, { prefix });
    const d = padlockOn(ensemble, { prefix });
    const lease = await c.mutex('zs:tidy/one.two').acquire();
    await assert.rejects(d.mutex('zs:tidy/one.two').acquire({ waitMs: 100 }), LockTimeoutError);
    const controller = new AbortController();
    const aborted = d.mutex('zs:tidy/one.two').acquire({ signal: controller.signal });
    await delay(100);
    controller.abort(new Error('stop'));
    await assert.rejects(aborted, /stop/);
    const read = await c.readWrite('zs:tidy-rw').read.acquire();
    const permits = await c.semaphore('zs:tidy-sem', 2).acquire({ permits: 2 });
    assert.ok(await eventually(async () => (await zooKeeperLeftovers(reader, prefix)).length === 6), 'three locks, each a znode and its holder');
    await lease.release();
    await read.release();
    await permits.release();
    assert.ok(await eventually(async () => (await zooKeeperLeftovers(reader, prefix)).length === 0), `left: ${(await zooKeeperLeftovers(reader, prefix)).join(', ')}`);
    // close(): what it holds and what it waits for goes.
    await c.mutex('zs:tidy-close').acquire();
    const waiting = d.mutex('zs:tidy-close').acquire();
    await c.semaphore('zs:tidy-sem', 1).acquire();
    const waitingToo = c.semaphore('zs:tidy-sem', 1).acquire().then(() => 'granted', (error: unknown) => error);
    await delay(100);
    await c.close();
    await (await waiting).release();
    assert.ok((await waitingToo) instanceof Error, 'the wait is rejected by close()');
    assert.ok(await eventually(async () => (await zooKeeperLeftovers(reader, prefix)).length === 0), `left: ${(await zooKeeperLeftovers(reader, prefix)).join(', ')}`);
  });

  it('a lock whose last holder died (its session ended, nothing released) loses its znode to the next Padlock that connects', async () => {
    const prefix = 'abandoned';
    const dying = zooKeeperClient(ensemble);
    const holder = new Padlock({ zookeeper: dying, prefix });
    await holder.mutex('zs:abandoned').acquire();
    await holder.readWrite('zs:abandoned-rw').read.acquire();
    // The process dies: its session ends and its children go with it; nobody deletes the locks' znodes.
    dying.close();
    const left = ['/abandoned/mutex/zs%3Aabandoned', '/abandoned/readWrite/zs%3Aabandoned-rw'];
    assert.ok(await eventually(async () => (await zooKeeperLeftovers(reader, prefix)).join() === left.join()), `left: ${(await zooKeeperLeftovers(reader, prefix)).join(', ')}`);
    await delay(200);
    assert.deepEqual(await zooKeeperLeftovers(reader, prefix), left, 'nothing else removes them');
    const next = padlockOn(ensemble, { prefix });
    await (await next.mutex('zs:in-use').acquire()).release(); // connected
    assert.ok(await eventually(async () => (await zooKeeperLeftovers(reader, prefix)).length === 0), `left: ${(await zooKeeperLeftovers(reader, prefix)).join(', ')}`);
    await holder.close({ drainMs: 0 });
  });

  it('re-enters by owner from another Padlock (another session): same fence, one count more, free after the last release', async () => {
    const lease = await a.mutex('zs:owner').acquire();
    const again = await b.mutex('zs:owner').acquire({ owner: lease.owner });
    assert.equal(again.fence, lease.fence);
    assert.equal(again.holdCount, 2);
    await assert.rejects(b.mutex('zs:owner').acquire({ owner: 'x'.repeat(32) }), { code: 'LOCK_NOT_HELD' });
    await lease.release();
    assert.equal(await b.mutex('zs:owner').tryAcquire(), null, 'still held after one of two releases');
    await again.release();
    const next = await b.mutex('zs:owner').tryAcquire();
    assert.ok(next !== null && next.fence > lease.fence);
    await next.release();
  });

  it('read/write: a writer downgrades (its read is granted beside it, ahead of a queued writer), an upgrade is refused', async () => {
    const { read, write } = a.readWrite('zs:rw');
    const other = b.readWrite('zs:rw');
    let queuedWriterIn = false;
    const { queued } = await write.withLock(async () => {
      const queued = other.write.acquire().then((lease) => {
        queuedWriterIn = true;
        return lease;
      });
      await delay(100);
      const down = await read.acquire({ waitMs: 2_000 });
      await assert.rejects(write.acquire({ owner: down.owner }), LockUpgradeError);
      // The write lock goes at the end of withLock; the read lasts, keeping the queued writer out.
      setTimeout(() => void down.release(), 400);
      return { queued };
    });
    await delay(200);
    assert.equal(queuedWriterIn, false, 'the downgraded read keeps the queued writer out');
    await (await queued).release();
    await read.withLock(() => assert.rejects(write.acquire(), LockUpgradeError));
  });

  it('semaphore: setPermits raises the limit for the waiters (the first is woken), available() counts permits held', async () => {
    const sem = a.semaphore('zs:sem', 2);
    const one = await sem.acquire({ permits: 2 });
    assert.equal(await sem.available(), 0);
    let waiterIn = false;
    const waiting = b.semaphore('zs:sem', 2).acquire({ permits: 1 }).then((lease) => {
      waiterIn = true;
      return lease;
    });
    await delay(200);
    assert.equal(waiterIn, false);
    await sem.setPermits(3);
    assert.equal(await sem.limit(), 3);
    assert.ok(await eventually(() => waiterIn), 'the raise let the waiter in');
    await one.release();
    await (await waiting).release();
    assert.equal(await sem.limit(), 2, 'the limit lived in the znode, gone with the last one out');
  });

  it('a hold force-released is told taken, in ZooKeeper\'s words (its znode, not a key)', async () => {
    const lease = await a.mutex('zs:forced').acquire();
    assert.equal(await b.mutex('zs:forced').forceRelease(), true);
    const lost = await lossOf(lease);
    assert.ok(lost instanceof LockLostError && lost.reason === 'taken', String(lost));
    assert.match(lost.message, /its znode deleted/);
  });

  it('a fixed lease ends at leaseMs: the holder is told, its znode goes, and a waiter is served then', async () => {
    const lease = await a.mutex('zs:fixed').acquire({ leaseMs: 600 });
    const waited = b.mutex('zs:fixed').acquire();
    const lost = await lossOf(lease);
    assert.ok(lost instanceof LockLostError);
    const next = await waited;
    assert.ok(next.fence > lease.fence);
    await next.release();
  });
});

describe('padlock on ZooKeeper: the session is the liveness', { timeout: 60_000 }, () => {
  after(closeAll);
  it('a session lost (its server silent past the time-out) tells every hold with LockLostError; the ensemble then frees the locks, and the expired client is refused typed', async () => {
    const ensemble = await startZooKeeper(1);
    const padlock = padlockOn(ensemble, { sessionTimeout: 2_000 });
    const leases = await Promise.all([padlock.mutex('zs:s1').acquire(), padlock.readWrite('zs:s2').read.acquire(), padlock.semaphore('zs:s3', 2).acquire()]);
    const server = ensemble.servers[0];
    assert.ok(server !== undefined);
    server.pause();
    try {
      const reasons = await Promise.all(leases.map((lease) => lossOf(lease)));
      for (const reason of reasons) assert.ok(reason instanceof LockLostError, String(reason));
      // Silent past the session's time-out: the server expires it when it runs again.
      await delay(2_500);
    } finally {
      server.resume();
    }
    const other = padlockOn(ensemble);
    const next = await other.mutex('zs:s1').acquire({ waitMs: 10_000 });
    await next.release();
    // Its session expired (the server ran again past its time-out: refused, typed), or lived through
    // the silence (the children of the holds it told lost were removed: it serves again).
    const later: Lease | Error = await padlock
      .mutex('zs:s1')
      .acquire({ waitMs: 5_000 })
      .catch((error: unknown) => (error instanceof Error ? error : new Error(String(error))));
    // Without zookeeperFactory an expired session is for good, said with its own code (not a passing unavailability).
    if (later instanceof Error) assert.ok(later instanceof ZooKeeperSessionExpiredError && later.code === 'ZOOKEEPER_SESSION_EXPIRED' && !later.renewing, String(later));
    else await later.release();
  });
});
