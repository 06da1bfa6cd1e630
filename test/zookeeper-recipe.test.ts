/**
 * The ZooKeeper lock recipe (src/stores/zookeeper/) on real ZooKeeper servers: a standalone server
 * and a 3-server ensemble on loopback. Every client here is its own session, as separate processes
 * would be.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import zookeeper from 'node-zookeeper-client';
import type { Client } from 'node-zookeeper-client';
import { Interrupt } from '../src/interrupt.js';
import { RedisUnavailableError, LockTimeoutError } from '../src/errors.js';
import { WaitScope } from '../src/wait-scope.js';
import { ZooKeeperOps } from '../src/stores/zookeeper/zookeeper-client.js';
import { countIn, lockPath, ZooKeeperLock, type Request } from '../src/stores/zookeeper/zookeeper-lock.js';
import { stemOf } from '../src/stores/zookeeper/znode-queue.js';
import { newOwnerToken } from '../src/tokens.js';
import { SessionClock } from '../src/stores/zookeeper/session-clock.js';
import { fourLetters, startZooKeeper, type Ensemble } from './harness/zookeeper.js';
import { delay, eventually } from './harness/redis.js';
import { firstMessage, forkFixture } from './harness/children.js';

const clients: Client[] = [];
after(() => clients.forEach((c) => c.close()));

/** A connected client (its own session) to `ensemble`. */
async function session(ensemble: Ensemble, sessionTimeout = 4_000): Promise<ZooKeeperOps> {
  const client = zookeeper.createClient(ensemble.connectString, { sessionTimeout, spinDelay: 100 });
  clients.push(client);
  const connected = new Promise<void>((resolve) => client.once('connected', () => resolve()));
  client.connect();
  await connected;
  return new ZooKeeperOps(client);
}

const never = new Interrupt();
function scope(name: string, waitMs: number, signal?: AbortSignal): WaitScope {
  return new WaitScope(name, waitMs, signal, never, 10_000, 0, (lock, ms) => new RedisUnavailableError(lock, new Error(`no reply in ${ms} ms`)));
}

async function take(lock: ZooKeeperLock, request: Request, waitMs = Infinity, signal?: AbortSignal) {
  const s = scope(lock.name, waitMs, signal);
  try {
    return await lock.take(request, s, waitMs > 0);
  } finally {
    s.dispose();
  }
}

const mutexRequest = (): Request => ({ role: 'lock', owner: newOwnerToken(), permits: 1 });
const ROOT = '/padlock';

describe('the ZooKeeper recipe on a standalone server', { timeout: 30_000 }, () => {
  let ensemble: Ensemble;
  let a: ZooKeeperOps;
  let b: ZooKeeperOps;
  before(async () => {
    ensemble = await startZooKeeper(1);
    [a, b] = await Promise.all([session(ensemble), session(ensemble)]);
  });

  it('excludes across sessions: 4 sessions × 15 read-modify-writes of a shared counter lose none', async () => {
    const sessions = [a, b, await session(ensemble), await session(ensemble)];
    let counter = 0;
    let inside = 0;
    let overlaps = 0;
    await Promise.all(
      sessions.map(async (ops) => {
        const lock = new ZooKeeperLock(ops, lockPath(ROOT, 'mutex', 'counter'), 'counter', 1);
        for (let i = 0; i < 15; i++) {
          const request = mutexRequest();
          const grant = await take(lock, request);
          assert.ok(grant !== null);
          if (++inside > 1) overlaps++;
          const read = counter;
          await delay(1);
          counter = read + 1;
          inside--;
          assert.equal(await lock.release(request.owner, 1), 0);
        }
      }),
    );
    assert.equal(overlaps, 0);
    assert.equal(counter, 60);
  });

  it('serves waiters in arrival order, each woken by its own predecessor, with strictly increasing fences', async () => {
    const path = lockPath(ROOT, 'mutex', 'fifo');
    const holder = mutexRequest();
    const first = await take(new ZooKeeperLock(a, path, 'fifo', 1), holder);
    assert.ok(first !== null);
    const order: number[] = [];
    const fences: number[] = [first.fence];
    const waiters = [0, 1, 2, 3].map(async (i) => {
      await delay(30 * i); // arrive in order
      const ops = i % 2 === 0 ? a : b;
      const lock = new ZooKeeperLock(ops, path, 'fifo', 1);
      const request = mutexRequest();
      const grant = await take(lock, request);
      assert.ok(grant !== null);
      order.push(i);
      fences.push(grant.fence);
      await delay(5);
      await lock.release(request.owner, 1);
    });
    await delay(200);
    await new ZooKeeperLock(a, path, 'fifo', 1).release(holder.owner, 1);
    await Promise.all(waiters);
    assert.deepEqual(order, [0, 1, 2, 3]);
    for (let i = 1; i < fences.length; i++) assert.ok((fences[i] ?? 0) > (fences[i - 1] ?? 0), `fence ${fences[i]} after ${fences[i - 1]}`);
  });

  it('no herd: with 6 waiters, each child is watched by one waiter only (beside its owner), and a release wakes one', async () => {
    const path = lockPath(ROOT, 'mutex', 'herd');
    const holder = mutexRequest();
    assert.ok((await take(new ZooKeeperLock(a, path, 'herd', 1), holder)) !== null);
    const sessions = await Promise.all([0, 1, 2, 3, 4, 5].map(() => session(ensemble)));
    const served: number[] = [];
    const requests = sessions.map(() => mutexRequest());
    // Ends the waits still pending if an assertion fails, so that the file does not wait on them.
    const stop = new AbortController();
    const waits = sessions.map(async (ops, i) => {
      await delay(20 * i);
      const lock = new ZooKeeperLock(ops, path, 'herd', 1);
      await take(lock, requests[i] as Request, Infinity, stop.signal);
      served.push(i);
    });
    try {
      const watches = async () => {
        const byPath = (await fourLetters(ensemble.servers[0]?.port ?? 0, 'wchp')) ?? '';
        return byPath.split('\n/').filter((block) => block.includes('/herd/')).map((block) => block.split('\n').filter((line) => /^\s*0x/.test(line)).length);
      };
      // Each child is also watched by its own session (so a force-release is heard at once): the
      // holder's and the six waiters' seven children, each watched by its owner and by at most the
      // one waiter behind it. A waiter sets its watch just after it creates its child: the counts
      // are read once all 13 watches are set.
      const sum = (counts: number[]): number => counts.reduce((total, n) => total + n, 0);
      assert.ok(await eventually(async () => sum(await watches()) === 13), 'every child watched by its owner, every waiter watching');
      assert.deepEqual((await watches()).sort(), [1, 2, 2, 2, 2, 2, 2], 'one waiter watching each child beside its owner');
      await new ZooKeeperLock(a, path, 'herd', 1).release(holder.owner, 1);
      assert.ok(await eventually(() => served.length === 1));
      await delay(100);
      assert.deepEqual(served, [0], 'one release, one waiter served');
      for (let i = 0; i < 6; i++) {
        await eventually(() => served.length === i + 1);
        await new ZooKeeperLock(sessions[i] as ZooKeeperOps, path, 'herd', 1).release((requests[i] as Request).owner, 1);
      }
      await Promise.all(waits);
      assert.deepEqual(served, [0, 1, 2, 3, 4, 5]);
    } finally {
      stop.abort(new Error('the test ended'));
      await Promise.allSettled(waits);
    }
  });

  it('leaves no znode once its locks are free, and none for a wait that timed out or was aborted', async () => {
    const path = lockPath(ROOT, 'mutex', 'tidy/one.two');
    const lock = new ZooKeeperLock(a, path, 'tidy/one.two', 1);
    const holder = mutexRequest();
    assert.ok((await take(lock, holder)) !== null);
    await assert.rejects(take(new ZooKeeperLock(b, path, 'tidy/one.two', 1), mutexRequest(), 100), LockTimeoutError);
    const controller = new AbortController();
    const aborted = take(new ZooKeeperLock(b, path, 'tidy/one.two', 1), mutexRequest(), Infinity, controller.signal);
    await delay(50);
    controller.abort(new Error('gave up'));
    await assert.rejects(aborted, /gave up/);
    assert.equal(await take(new ZooKeeperLock(b, path, 'tidy/one.two', 1), mutexRequest(), 0), null);
    await eventually(async () => ((await a.children(path)) ?? []).length === 1);
    assert.deepEqual(((await a.children(path)) ?? []).length, 1, 'only the holder is left');
    assert.equal(await lock.release(holder.owner, 1), 0);
    assert.equal(await a.exists(path), undefined, 'the lock znode is gone');
  });

  it('a wait given up whose delete was lost with the connection sends it again: no child is left ahead of the next waiter', async () => {
    // What a server killed under a delete leaves: the delete failed with the connection (here it
    // never left the client, as when it died before the server applied it), and the child stayed.
    class LosesFirstDelete extends ZooKeeperOps {
      lost = 0;
      override removeWithParent(child: string, parent: string, version?: number): Promise<boolean> {
        if (this.lost++ === 0) return Promise.reject(new zookeeper.Exception(zookeeper.Exception.CONNECTION_LOSS, 'CONNECTION_LOSS', LosesFirstDelete));
        return super.removeWithParent(child, parent, version);
      }
    }
    const path = lockPath(ROOT, 'mutex', 'lost-leave');
    const holder = mutexRequest();
    const lock = new ZooKeeperLock(a, path, 'lost-leave', 1);
    assert.ok((await take(lock, holder)) !== null);
    const lossy = new LosesFirstDelete(b.client);
    await assert.rejects(take(new ZooKeeperLock(lossy, path, 'lost-leave', 1), mutexRequest(), 100), LockTimeoutError);
    assert.ok(await eventually(async () => ((await a.children(path)) ?? []).length === 1, 3_000), `left: ${((await a.children(path)) ?? []).join(', ')}`);
    assert.equal(lossy.lost, 2, 'the delete was sent again');
    assert.equal(await lock.release(holder.owner, 1), 0);
    assert.equal(await a.exists(path), undefined);
  });

  it('a count written but answered by a lost connection counts once: a re-entry and a partial release each land once, and the lock stays held', async () => {
    // The write reached the server and was applied; its answer died with the connection.
    class LosesAnswers extends ZooKeeperOps {
      lose = 0;
      override async setData(path: string, data: Buffer, version: number) {
        const stat = await super.setData(path, data, version);
        if (this.lose > 0) {
          this.lose--;
          return Promise.reject(new zookeeper.Exception(zookeeper.Exception.CONNECTION_LOSS, 'CONNECTION_LOSS', LosesAnswers));
        }
        return stat;
      }
    }
    const path = lockPath(ROOT, 'mutex', 'lost-answer');
    const lossy = new LosesAnswers(a.client);
    const lock = new ZooKeeperLock(lossy, path, 'lost-answer', 1);
    const holder = mutexRequest();
    assert.ok((await take(lock, holder)) !== null);
    lossy.lose = 1;
    assert.equal((await lock.reenter(holder.owner, ['lock']))?.holdCount, 2);
    lossy.lose = 1;
    assert.equal(await lock.release(holder.owner, 1), 1, 'one of two holds released, once');
    const [child] = (await a.children(path)) ?? [];
    assert.equal(countIn((await a.data(`${path}/${child ?? ''}`))?.data ?? Buffer.alloc(0)), 1);
    assert.equal(await take(new ZooKeeperLock(b, path, 'lost-answer', 1), mutexRequest(), 0), null, 'still held');
    assert.equal(await lock.release(holder.owner, 1), 0);
    assert.equal(await a.exists(path), undefined);
  });

  it('a create of its own whose answer was lost (found ahead of it in the queue) is removed, not waited for', async () => {
    // What a server killed mid-create leaves: the create was applied, its answer lost, and the server
    // the client reconnected to had not applied it yet when the client swept for it.
    const path = lockPath(ROOT, 'mutex', 'orphan');
    const request = mutexRequest();
    await a.createWithParent(path, stemOf('lock', request.owner, 1), Buffer.from('1'));
    const other = mutexRequest();
    const otherLock = new ZooKeeperLock(b, path, 'orphan', 1);
    const queued = take(otherLock, other, 5_000);
    await eventually(async () => ((await a.children(path)) ?? []).length === 2);
    const lock = new ZooKeeperLock(a, path, 'orphan', 1);
    const mine = take(lock, request, 5_000);
    const first = await queued;
    assert.ok(first !== null, 'the waiter behind the lost create is served');
    assert.equal(await otherLock.release(other.owner, 1), 0);
    const grant = await mine;
    assert.ok(grant !== null && grant.fence > first.fence);
    assert.equal(((await a.children(path)) ?? []).length, 1, 'only the holder is left: the lost create is gone');
    assert.equal(await lock.release(request.owner, 1), 0);
    assert.equal(await a.exists(path), undefined);
  });

  it('re-enters by owner from another session: counts in the znode, same fence, released after the last', async () => {
    const path = lockPath(ROOT, 'mutex', 'reentry');
    const holder = mutexRequest();
    const grant = await take(new ZooKeeperLock(a, path, 'reentry', 1), holder);
    assert.ok(grant !== null);
    const elsewhere = new ZooKeeperLock(b, path, 'reentry', 1);
    const again = await elsewhere.reenter(holder.owner, ['lock']);
    assert.deepEqual(again && { fence: again.fence, holdCount: again.holdCount }, { fence: grant.fence, holdCount: 2 });
    assert.equal(await elsewhere.reenter(mutexRequest().owner, ['lock']), null, 'an owner with no hold re-enters nothing');
    assert.equal(await elsewhere.release(holder.owner, 1), 1);
    assert.equal(await take(elsewhere, mutexRequest(), 0), null, 'still held after one of two releases');
    assert.equal(await elsewhere.release(holder.owner, 1), 0);
    await assert.rejects(elsewhere.release(holder.owner, 1), { code: 'LOCK_NOT_HELD' });
  });

  it('read/write: readers share, a writer waits for them and readers behind it wait for the writer', async () => {
    const path = lockPath(ROOT, 'rw', 'doc');
    const lock = (ops: ZooKeeperOps) => new ZooKeeperLock(ops, path, 'doc', 1);
    const r1 = { role: 'read', owner: newOwnerToken(), permits: 1 } as const;
    const r2 = { role: 'read', owner: newOwnerToken(), permits: 1 } as const;
    assert.ok((await take(lock(a), r1)) !== null);
    assert.ok((await take(lock(b), r2, 0)) !== null, 'a second reader holds at once');
    const writer = mutexRequest();
    let writerHolds = false;
    const writing = take(lock(b), writer).then((g) => (writerHolds = g !== null));
    await delay(100);
    const r3 = { role: 'read', owner: newOwnerToken(), permits: 1 } as const;
    assert.equal(await take(lock(a), r3, 0), null, 'a reader behind a queued writer waits');
    await lock(a).release(r1.owner, 1);
    await delay(50);
    assert.equal(writerHolds, false, 'the writer waits for every reader');
    await lock(b).release(r2.owner, 1);
    await writing;
    assert.equal(writerHolds, true);
    await lock(b).release(writer.owner, 1);
    assert.equal(await a.exists(path), undefined);
  });

  it('semaphore: permits fit in the limit in FIFO order, a released permit lets the next waiters in', async () => {
    const path = lockPath(ROOT, 'semaphore', 'pool');
    const lock = (ops: ZooKeeperOps) => new ZooKeeperLock(ops, path, 'pool', 3);
    const req = (permits: number) => ({ role: 'permit', owner: newOwnerToken(), permits }) as const;
    const big = req(2);
    const one = req(1);
    assert.ok((await take(lock(a), big)) !== null);
    assert.ok((await take(lock(a), one)) !== null);
    const two = req(2);
    const three = req(1);
    const held: string[] = [];
    const waiting = [take(lock(b), two).then(() => held.push('two')), delay(50).then(() => take(lock(b), three)).then(() => held.push('three'))];
    await delay(150);
    assert.deepEqual(held, [], 'the pool is full: both wait, the 1-permit request behind the 2-permit one');
    await lock(a).release(big.owner, 1);
    await waiting[0];
    await delay(100);
    assert.deepEqual(held, ['two'], 'the 2-permit request fits once 2 permits came back; the next (1 + 2 + 1 > 3) still waits');
    await lock(a).release(one.owner, 1);
    await waiting[1];
    assert.deepEqual(held, ['two', 'three']);
    const state = await lock(a).inspect();
    assert.deepEqual(state.holders.map((p) => p.permits), [2, 1]);
    await lock(b).release(two.owner, 1);
    await lock(b).release(three.owner, 1);
    assert.equal(await a.exists(path), undefined);
  });
});

describe('the ZooKeeper recipe on a 3-server ensemble', { timeout: 60_000 }, () => {
  let ensemble: Ensemble;
  before(async () => {
    ensemble = await startZooKeeper(3);
  });

  it('fences keep growing across a leader change, and a holder keeps its lock through it', async () => {
    const a = await session(ensemble, 6_000);
    const path = lockPath(ROOT, 'mutex', 'leader');
    const lock = new ZooKeeperLock(a, path, 'leader', 1);
    const first = mutexRequest();
    const grant = await take(lock, first);
    assert.ok(grant !== null);
    const leader = await ensemble.leader();
    await leader.kill();
    const b = await session(ensemble, 6_000);
    const other = new ZooKeeperLock(b, path, 'leader', 1);
    assert.equal(await take(other, mutexRequest(), 0), null, 'still held after the leader died');
    await lock.release(first.owner, 1);
    const next = mutexRequest();
    const later = await take(other, next);
    assert.ok(later !== null && later.fence > grant.fence, `fence ${later?.fence} after ${grant.fence}`);
    await other.release(next.owner, 1);
    await leader.start();
  });

  it('a holder process killed frees its lock once its session expires: the waiter is served then, not before', async () => {
    const b = await session(ensemble, 6_000);
    const path = lockPath(ROOT, 'mutex', 'crash');
    const holder = forkFixture('zookeeper-holder', [ensemble.connectString, path, '1500']);
    await firstMessage<{ fence: number }>(holder);
    const waiting = take(new ZooKeeperLock(b, path, 'crash', 1), mutexRequest());
    await delay(100);
    const killedAt = Date.now();
    holder.kill('SIGKILL');
    assert.ok((await waiting) !== null);
    const servedAfter = Date.now() - killedAt;
    assert.ok(servedAfter >= 1_000 && servedAfter < 10_000, `served ${servedAfter} ms after the kill (session time-out 1.5 s)`);
  });

  it('a holder whose server froze learns its session is lost before any other client can be served', async () => {
    const follower = await (async () => {
      for (const server of ensemble.servers) if ((await server.mode()) === 'follower') return server;
      throw new Error('no follower');
    })();
    const others = ensemble.servers.filter((s) => s !== follower).map((s) => s.address).join(',');
    const onlyFollower = zookeeper.createClient(follower.address, { sessionTimeout: 2_000 });
    clients.push(onlyFollower);
    const connected = new Promise<void>((resolve) => onlyFollower.once('connected', () => resolve()));
    onlyFollower.connect();
    await connected;
    const a = new ZooKeeperOps(onlyFollower);
    const clock = new SessionClock(onlyFollower);
    const b = await session({ ...ensemble, connectString: others }, 6_000);
    const path = lockPath(ROOT, 'mutex', 'frozen');
    assert.ok((await take(new ZooKeeperLock(a, path, 'frozen', 1), mutexRequest())) !== null);
    await delay(3_000);
    assert.equal(clock.lost, undefined, 'a live session is not reported lost: its beats keep its deadline ahead');
    let lostAt: number | undefined;
    clock.onLost(() => (lostAt = Date.now()));
    const waiting = take(new ZooKeeperLock(b, path, 'frozen', 1), mutexRequest());
    follower.pause();
    try {
      assert.ok((await waiting) !== null);
      const servedAt = Date.now();
      assert.equal(clock.lost, 'silent');
      assert.ok(lostAt !== undefined && lostAt <= servedAt, `the holder knew (${lostAt}) before the waiter was served (${servedAt})`);
    } finally {
      follower.resume();
      clock.close();
    }
  });
});
