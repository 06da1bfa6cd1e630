/**
 * The etcd lock recipe (src/stores/etcd/) on one real etcd member. Every client here has its own
 * lease, as separate processes would. The recipe under faults on a 3-member cluster is proven
 * through `Padlock` (test/etcd-faults.test.ts, with the safety checker).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Etcd3, GRPCUnavailableError } from 'etcd3';
import { Interrupt } from '../src/interrupt.js';
import { LockNotHeldError, LockTimeoutError, RedisUnavailableError } from '../src/errors.js';
import { WaitScope } from '../src/wait-scope.js';
import { newOwnerToken } from '../src/tokens.js';
import { EtcdOps } from '../src/stores/etcd/etcd-client.js';
import { EtcdLock, lockPrefix, type Request } from '../src/stores/etcd/etcd-lock.js';
import { LeaseClock, lostReason } from '../src/stores/etcd/lease-clock.js';
import { startEtcd, type Cluster, type EtcdMember } from './harness/etcd.js';
import { delay, eventually } from './harness/redis.js';

/** A client of its own, with its own lease: what one process (one future `Padlock`) would have. */
interface Participant {
  readonly ops: EtcdOps;
  readonly lease: LeaseClock;
  lock(family: string, name: string, limit?: number): EtcdLock;
}

const opened: { client: Etcd3; lease: LeaseClock }[] = [];
after(async () => {
  await Promise.all(opened.map(({ lease }) => lease.close().catch(() => undefined)));
  for (const { client } of opened) client.close();
});

/** Records which keys the recipe watches, on the real server's watch. */
class RecordingOps extends EtcdOps {
  readonly watched: string[] = [];
  override watch(key: string, fromRevision: number, onChange: () => void) {
    this.watched.push(key);
    return super.watch(key, fromRevision, onChange);
  }
}

async function participant(hosts: readonly string[], leaseMs = 5_000): Promise<Participant & { ops: RecordingOps }> {
  const client = new Etcd3({ hosts: [...hosts], dialTimeout: 2_000 });
  const ops = new RecordingOps(client);
  const lease = await LeaseClock.grant(ops, leaseMs);
  opened.push({ client, lease });
  return { ops, lease, lock: (family, name, limit = 1) => new EtcdLock(ops, lease, lockPrefix(ROOT, family, name), name, limit) };
}

const never = new Interrupt();
function scope(name: string, waitMs: number, signal?: AbortSignal): WaitScope {
  return new WaitScope(name, waitMs, signal, never, 10_000, 0, (lock, ms) => new RedisUnavailableError(lock, new Error(`no reply in ${ms} ms`)));
}

async function take(lock: EtcdLock, request: Request, waitMs = Infinity, signal?: AbortSignal) {
  const s = scope(lock.name, waitMs, signal);
  try {
    return await lock.take(request, s, waitMs > 0);
  } finally {
    s.dispose();
  }
}

/** Every key under padlock's root, as one range read sees them. */
async function keysLeft(ops: EtcdOps): Promise<string[]> {
  return ops.client.getAll().prefix(`${ROOT}/`).keys();
}

const mutexRequest = (): Request => ({ role: 'lock', owner: newOwnerToken(), permits: 1 });
const ROOT = 'padlock';

describe('the etcd recipe on one member', { timeout: 40_000 }, () => {
  let cluster: Cluster;
  let a: Participant;
  let b: Participant;
  before(async () => {
    cluster = await startEtcd(1);
    [a, b] = await Promise.all([participant(cluster.hosts), participant(cluster.hosts)]);
  });

  it('excludes across clients: 4 clients × 15 read-modify-writes of a shared counter lose none', async () => {
    const clients = [a, b, await participant(cluster.hosts), await participant(cluster.hosts)];
    let counter = 0;
    let inside = 0;
    let overlaps = 0;
    await Promise.all(
      clients.map(async (p) => {
        const lock = p.lock('mutex', 'counter');
        for (let i = 0; i < 15; i++) {
          const request = mutexRequest();
          assert.ok((await take(lock, request)) !== null);
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

  it('serves waiters in arrival order, with strictly increasing fences', async () => {
    const holder = mutexRequest();
    const first = await take(a.lock('mutex', 'fifo'), holder);
    assert.ok(first !== null);
    const order: number[] = [];
    const fences: number[] = [first.fence];
    const waiters: Promise<void>[] = [];
    for (let i = 0; i < 4; i++) {
      const lock = (i % 2 === 0 ? a : b).lock('mutex', 'fifo');
      const request = mutexRequest();
      waiters.push(
        take(lock, request).then(async (grant) => {
          assert.ok(grant !== null);
          order.push(i);
          fences.push(grant.fence);
          await delay(5);
          await lock.release(request.owner, 1);
        }),
      );
      // Each one queued before the next arrives.
      assert.ok(await eventually(async () => (await a.lock('mutex', 'fifo').inspect()).waiters.length === i + 1), `waiter ${i} queued`);
    }
    assert.deepEqual(order, [], 'all four wait while the lock is held');
    await a.lock('mutex', 'fifo').release(holder.owner, 1);
    await Promise.all(waiters);
    assert.deepEqual(order, [0, 1, 2, 3]);
    for (let i = 1; i < fences.length; i++) assert.ok((fences[i] ?? 0) > (fences[i - 1] ?? 0), `fence ${fences[i]} after ${fences[i - 1]}`);
  });

  it('no herd: 6 waiters watch 6 different keys (one watch each on the server), and a release wakes one', async () => {
    const member = cluster.members[0] as EtcdMember;
    const holder = mutexRequest();
    assert.ok((await take(a.lock('mutex', 'herd'), holder)) !== null);
    const waiters = await Promise.all([0, 1, 2, 3, 4, 5].map(() => participant(cluster.hosts)));
    const watchersBefore = (await member.metric('etcd_debugging_mvcc_watcher_total')) ?? 0;
    const served: number[] = [];
    const requests = waiters.map(() => mutexRequest());
    // Each joins once the one before is queued: served in index order below. (A 30 ms stagger was
    // not enough under load: two joins landed swapped, and the loop below released a waiter's key.)
    const waits: Promise<void>[] = [];
    for (const [i, p] of waiters.entries()) {
      waits.push(take(p.lock('mutex', 'herd'), requests[i] as Request).then(() => void served.push(i)));
      assert.ok(await eventually(async () => (await a.lock('mutex', 'herd').inspect()).waiters.length === i + 1), `waiter ${i} queued`);
    }
    assert.ok(await eventually(async () => (await member.metric('etcd_debugging_mvcc_watcher_total')) === watchersBefore + 6), 'the server has 6 watchers');
    const watched = waiters.flatMap((p) => p.ops.watched);
    assert.equal(watched.length, 6, 'each waiter watches one key');
    assert.equal(new Set(watched).size, 6, 'no two waiters watch the same key');
    const eventsBefore = (await member.metric('etcd_debugging_mvcc_events_total')) ?? 0;
    await a.lock('mutex', 'herd').release(holder.owner, 1);
    assert.ok(await eventually(() => served.length === 1));
    await delay(150);
    assert.deepEqual(served, [0], 'one release, one waiter served');
    assert.equal(((await member.metric('etcd_debugging_mvcc_events_total')) ?? 0) - eventsBefore, 1, 'the release was sent to one watcher');
    for (let i = 0; i < 6; i++) {
      await eventually(() => served.length === i + 1);
      await (waiters[i] as Participant).lock('mutex', 'herd').release((requests[i] as Request).owner, 1);
    }
    await Promise.all(waits);
    assert.deepEqual(served, [0, 1, 2, 3, 4, 5]);
    assert.ok(await eventually(async () => (await member.metric('etcd_debugging_mvcc_watcher_total')) === watchersBefore), 'every watch was cancelled');
  });

  it('leaves no key once its locks are free, none for a wait that timed out or was aborted, none of a closed client', async () => {
    const name = 'tidy/one.two';
    const holder = mutexRequest();
    assert.ok((await take(a.lock('mutex', name), holder)) !== null);
    await assert.rejects(take(b.lock('mutex', name), mutexRequest(), 100), LockTimeoutError);
    const controller = new AbortController();
    const aborted = take(b.lock('mutex', name), mutexRequest(), Infinity, controller.signal);
    await delay(50);
    controller.abort(new Error('gave up'));
    await assert.rejects(aborted, /gave up/);
    assert.equal(await take(b.lock('mutex', name), mutexRequest(), 0), null);
    assert.ok(await eventually(async () => (await a.ops.queue(lockPrefix(ROOT, 'mutex', name))).entries.length === 1), 'only the holder is left');
    assert.equal(await a.lock('mutex', name).release(holder.owner, 1), 0);
    assert.deepEqual((await a.ops.queue(lockPrefix(ROOT, 'mutex', name))).entries, []);
    // A client that closes while holding and waiting: its lease is revoked, its keys go with it.
    const leaving = await participant(cluster.hosts);
    const held = mutexRequest();
    assert.ok((await take(a.lock('mutex', 'held'), held)) !== null);
    assert.ok((await take(leaving.lock('mutex', 'closed'), mutexRequest())) !== null);
    const waiting = take(leaving.lock('mutex', 'held'), mutexRequest()).catch((error: unknown) => error);
    await eventually(async () => (await a.lock('mutex', 'held').inspect()).waiters.length === 1);
    await leaving.lease.close();
    assert.equal((await a.lock('mutex', 'held').inspect()).waiters.length, 0, "the closed client's waiter went with its lease");
    await a.lock('mutex', 'held').release(held.owner, 1);
    assert.ok((await waiting) instanceof LockNotHeldError, 'its wait, woken, finds its own key gone');
    assert.deepEqual(await keysLeft(a.ops), [], 'nothing is left under the root');
  });

  it("a count the client sent twice (its first answer lost, etcd3's retry) counts once: a re-entry and a partial release each land once", async () => {
    class CountSentTwice extends EtcdOps {
      override async replace(...args: Parameters<EtcdOps['replace']>) {
        await super.replace(...args);
        return super.replace(...args);
      }
    }
    const client = new Etcd3({ hosts: [...cluster.hosts], dialTimeout: 2_000 });
    const ops = new CountSentTwice(client);
    const lease = await LeaseClock.grant(ops, 5_000);
    opened.push({ client, lease });
    const lock = new EtcdLock(ops, lease, lockPrefix(ROOT, 'mutex', 'count-twice'), 'count-twice', 1);
    const request = mutexRequest();
    assert.ok((await take(lock, request, 2_000)) !== null);
    assert.equal((await lock.reenter(request.owner))?.holdCount, 2);
    assert.equal(await lock.release(request.owner, 1), 1, 'one of two holds released, once');
    assert.equal(await take(a.lock('mutex', 'count-twice'), mutexRequest(), 0), null, 'still held');
    assert.equal(await lock.release(request.owner, 1), 0);
  });

  it("a join the client sent twice (its first answer lost, etcd3's retry) takes the key the first one made, and leaves none behind", async () => {
    // What etcd3 does when an answer is lost: the same transaction sent again, to the real server.
    class JoinSentTwice extends EtcdOps {
      override async join(...args: Parameters<EtcdOps['join']>) {
        await super.join(...args);
        return super.join(...args);
      }
    }
    const client = new Etcd3({ hosts: [...cluster.hosts], dialTimeout: 2_000 });
    const ops = new JoinSentTwice(client);
    const lease = await LeaseClock.grant(ops, 5_000);
    opened.push({ client, lease });
    const lock = new EtcdLock(ops, lease, lockPrefix(ROOT, 'mutex', 'sent-twice'), 'sent-twice', 1);
    const request = mutexRequest();
    const grant = await take(lock, request, 2_000);
    assert.ok(grant !== null, 'the take holds the lock its own first create made');
    assert.equal(await lock.release(request.owner, 1), 0);
    const other = a.lock('mutex', 'sent-twice');
    const after = mutexRequest();
    const next = await take(other, after, 2_000);
    assert.ok(next !== null && next.fence > grant.fence, 'served after it: nothing of the first take left in the queue');
    assert.equal(await other.release(after.owner, 1), 0);
  });

  it('a waiter whose watch goes silent (created, its events never delivered) looks again after a lease TTL, and is served', async () => {
    const holder = await participant(cluster.hosts);
    const client = new Etcd3({ hosts: [...cluster.hosts], dialTimeout: 2_000 });
    // The watch is made on the real server; its events are lost on the way, as on a stream gone silent.
    class SilentWatchOps extends EtcdOps {
      override watch(key: string, fromRevision: number) {
        return super.watch(key, fromRevision, () => undefined);
      }
    }
    const ops = new SilentWatchOps(client);
    const lease = await LeaseClock.grant(ops, 2_000);
    opened.push({ client, lease });
    const prefix = lockPrefix(ROOT, 'mutex', 'silent-watch');
    const held = mutexRequest();
    assert.ok((await take(holder.lock('mutex', 'silent-watch'), held)) !== null);
    const silent = new EtcdLock(ops, lease, prefix, 'silent-watch', 1);
    const request = mutexRequest();
    const waiting = take(silent, request, 8_000);
    await eventually(async () => (await holder.ops.queue(prefix)).entries.length === 2);
    const releasedAt = Date.now();
    await holder.lock('mutex', 'silent-watch').release(held.owner, 1);
    assert.ok((await waiting) !== null, 'served');
    const after = Date.now() - releasedAt;
    assert.ok(after <= lease.ttlMs + 1_000, `served ${after} ms after the release (TTL ${lease.ttlMs} ms)`);
    assert.equal(await silent.release(request.owner, 1), 0);
  });

  it('a release whose delete landed but whose answer was lost resolves: sent again, it finds its key gone, its own delete', async () => {
    const client = new Etcd3({ hosts: [...cluster.hosts], dialTimeout: 2_000 });
    const ops = new EtcdOps(client);
    const lease = await LeaseClock.grant(ops, 5_000);
    opened.push({ client, lease });
    const lock = new EtcdLock(ops, lease, lockPrefix(ROOT, 'mutex', 'lost-delete'), 'lost-delete', 1);
    const request = mutexRequest();
    assert.ok((await take(lock, request, 2_000)) !== null);
    // The next transaction (the guarded delete) is applied, and its answer lost as a connection
    // dropped by a dying member loses it: padlock sends it again.
    const txn = client.kv.txn.bind(client.kv);
    let losing = 1;
    client.kv.txn = async (...args: Parameters<typeof txn>) => {
      const reply = await txn(...args);
      if (losing-- > 0) throw new GRPCUnavailableError('14 UNAVAILABLE: the answer was lost');
      return reply;
    };
    assert.equal(await lock.release(request.owner, 1), 0);
    assert.deepEqual((await a.ops.queue(lockPrefix(ROOT, 'mutex', 'lost-delete'))).entries, []);
  });

  it('a call sent while the member was frozen is answered once it is back: the tries padlock cut are not held against the member', async () => {
    const client = new Etcd3({ hosts: [...cluster.hosts], dialTimeout: 2_000 });
    opened.push({ client, lease: await LeaseClock.grant(new EtcdOps(client), 5_000) });
    // Tries of 300 ms within 5 s: five or six are cut while the member is frozen. etcd3 shuts a
    // member out for 5 s after three transient failures in a row; a cut try must not count as one.
    const ops = new EtcdOps(client, { replyTimeoutMs: 5_000, tryMs: 300 });
    const [member] = cluster.members;
    member!.pause();
    const startedAt = Date.now();
    const reading = ops.queue(`${ROOT}/frozen/`);
    try {
      await delay(1_700);
    } finally {
      member!.resume();
    }
    await reading;
    const took = Date.now() - startedAt;
    assert.ok(took < 1_700 + 1_000, `answered ${took} ms after it was sent, the member back after 1700 ms`);
  });

  it('a keep-alive a frozen member does not answer is given up after one try, not a whole beat, and the lease is renewed once the member is back', async () => {
    // A 5 s lease beats every 1.67 s; a try bounded by a whole beat left a renewal the member took
    // during an election unanswered for ~1 s after the new leader was elected, and a held lease ran out.
    const client = new Etcd3({ hosts: [...cluster.hosts], dialTimeout: 2_000 });
    const ops = new EtcdOps(client, { replyTimeoutMs: 5_000, tryMs: 300 });
    const lease = await LeaseClock.grant(ops, 5_000);
    opened.push({ client, lease });
    const [member] = cluster.members;
    member!.pause();
    let took: number;
    try {
      const startedAt = Date.now();
      assert.equal(await lease.beat(), false, 'unanswered');
      took = Date.now() - startedAt;
    } finally {
      member!.resume();
    }
    assert.ok(took >= 250 && took < 300 + 400, `given up after ${took} ms (one try: 300 ms; a beat: ${lease.beatMs} ms)`);
    assert.ok(await eventually(() => lease.beat(), 3_000), 'renewed once the member is back');
    assert.equal(lease.lost, undefined);
  });

  it("a waiter whose own renewals go unanswered while etcd keeps its lease (as after an election) holds on by the TTL it reads as it wakes", async () => {
    // After an election the new leader has extended every lease, while a client's renewals may stay
    // unanswered a while longer: here they are never answered, and another client renews the lease.
    class RenewalsUnanswered extends EtcdOps {
      override async keepAlive(_id: string, ms: number): Promise<number> {
        await delay(ms);
        throw new Error(`no keep-alive answer within ${ms} ms`);
      }
    }
    const client = new Etcd3({ hosts: [...cluster.hosts], dialTimeout: 2_000 });
    const ops = new RenewalsUnanswered(client);
    // 3 s: its client's deadline is ~2.97 s after the grant; a TTL read answers whole seconds, rounded down.
    const lease = await LeaseClock.grant(ops, 3_000);
    opened.push({ client, lease });
    const keeper = setInterval(() => void a.ops.keepAlive(lease.id, 1_000).catch(() => undefined), 300);
    try {
      const held = mutexRequest();
      assert.ok((await take(a.lock('mutex', 'carried'), held, 0)) !== null);
      const lock = new EtcdLock(ops, lease, lockPrefix(ROOT, 'mutex', 'carried'), 'carried', 1);
      const request = mutexRequest();
      const waiting = take(lock, request, 5_000);
      await delay(2_000);
      await a.lock('mutex', 'carried').release(held.owner, 1);
      assert.ok((await waiting) !== null, 'served');
      await delay(1_300);
      assert.ok(lease.alive, 'past the deadline its unanswered renewals left it, the lease it read as it woke still holds');
      assert.equal(await lock.release(request.owner, 1), 0);
    } finally {
      clearInterval(keeper);
    }
  });

  it('a join whose answer was lost, and whose first clean-up failed too, leaves no key: the delete is sent again', async () => {
    // The faults of an election, on the real member: the join is applied but its answer lost, and
    // the first delete that follows does not get through.
    class LostAnswerThenFailedDelete extends EtcdOps {
      deletesRefused = 1;
      override async join(...args: Parameters<EtcdOps['join']>): ReturnType<EtcdOps['join']> {
        await super.join(...args);
        throw new Error('14 UNAVAILABLE: the answer was lost');
      }
      override async remove(...keys: readonly string[]): Promise<number> {
        if (this.deletesRefused-- > 0) throw new Error('14 UNAVAILABLE: no leader');
        return super.remove(...keys);
      }
    }
    const client = new Etcd3({ hosts: [...cluster.hosts], dialTimeout: 2_000 });
    const ops = new LostAnswerThenFailedDelete(client);
    const lease = await LeaseClock.grant(ops, 5_000);
    opened.push({ client, lease });
    const prefix = lockPrefix(ROOT, 'mutex', 'lost-join');
    await assert.rejects(take(new EtcdLock(ops, lease, prefix, 'lost-join', 1), mutexRequest(), 2_000), /UNAVAILABLE/);
    assert.ok(await eventually(async () => (await a.ops.queue(prefix)).entries.length === 0, 3_000), 'the failed take left its key queued');
    const other = a.lock('mutex', 'lost-join');
    const request = mutexRequest();
    assert.ok((await take(other, request, 2_000)) !== null);
    assert.equal(await other.release(request.owner, 1), 0);
  });

  it('re-enters by owner from another client: counts in the key, same fence, released after the last', async () => {
    const holder = mutexRequest();
    const here = a.lock('mutex', 'reentry');
    const grant = await take(here, holder);
    assert.ok(grant !== null);
    const elsewhere = b.lock('mutex', 'reentry');
    const again = await elsewhere.reenter(holder.owner);
    assert.deepEqual(again && { fence: again.fence, holdCount: again.holdCount }, { fence: grant.fence, holdCount: 2 });
    assert.equal(await elsewhere.reenter(mutexRequest().owner), null, 'an owner with no hold re-enters nothing');
    assert.equal(await here.release(holder.owner, 1), 1, "the first client's release counts the re-entry made elsewhere (its own last write is stale)");
    assert.equal(await take(elsewhere, mutexRequest(), 0), null, 'still held after one of two releases');
    assert.equal(await elsewhere.release(holder.owner, 1), 0);
    await assert.rejects(elsewhere.release(holder.owner, 1), { code: 'LOCK_NOT_HELD' });
    assert.deepEqual((await a.ops.queue(lockPrefix(ROOT, 'mutex', 'reentry'))).entries, []);
  });

  it('read/write: readers share, a writer waits for them and readers behind it wait for the writer', async () => {
    const lock = (p: Participant) => p.lock('rw', 'doc');
    const reader = () => ({ role: 'read', owner: newOwnerToken(), permits: 1 }) as const;
    const r1 = reader();
    const r2 = reader();
    assert.ok((await take(lock(a), r1)) !== null);
    assert.ok((await take(lock(b), r2, 0)) !== null, 'a second reader holds at once');
    const writer = mutexRequest();
    let writerHolds = false;
    const writing = take(lock(b), writer).then((g) => (writerHolds = g !== null));
    await eventually(async () => (await lock(a).inspect()).waiters.length === 1);
    assert.equal(await take(lock(a), reader(), 0), null, 'a reader behind a queued writer waits');
    await lock(a).release(r1.owner, 1);
    await delay(100);
    assert.equal(writerHolds, false, 'the writer waits for every reader');
    await lock(b).release(r2.owner, 1);
    await writing;
    assert.equal(writerHolds, true);
    await lock(b).release(writer.owner, 1);
    assert.deepEqual((await a.ops.queue(lockPrefix(ROOT, 'rw', 'doc'))).entries, []);
  });

  it('semaphore: permits fit in the limit in FIFO order, a released permit lets the next waiters in', async () => {
    const lock = (p: Participant) => p.lock('semaphore', 'pool', 3);
    const req = (permits: number) => ({ role: 'permit', owner: newOwnerToken(), permits }) as const;
    const big = req(2);
    const one = req(1);
    assert.ok((await take(lock(a), big)) !== null);
    assert.ok((await take(lock(a), one)) !== null);
    const two = req(2);
    const three = req(1);
    const held: string[] = [];
    const waiting = [take(lock(b), two).then(() => held.push('two')), delay(50).then(() => take(lock(b), three)).then(() => held.push('three'))];
    await eventually(async () => (await lock(a).inspect()).waiters.length === 2);
    await delay(50);
    assert.deepEqual(held, [], 'the pool is full: both wait, the 1-permit request behind the 2-permit one');
    await lock(a).release(big.owner, 1);
    await waiting[0];
    await delay(100);
    assert.deepEqual(held, ['two'], 'the 2-permit request fits once 2 permits came back; the next (1 + 2 + 1 > 3) still waits');
    await lock(a).release(one.owner, 1);
    await waiting[1];
    assert.deepEqual(held, ['two', 'three']);
    assert.deepEqual((await lock(a).inspect()).holders.map((p) => p.permits), [2, 1]);
    await lock(b).release(two.owner, 1);
    await lock(b).release(three.owner, 1);
    assert.deepEqual((await a.ops.queue(lockPrefix(ROOT, 'semaphore', 'pool'))).entries, []);
  });

  it('a lease revoked elsewhere tells its holder (reason: taken) and frees its locks', async () => {
    const holder = await participant(cluster.hosts, 3_000);
    const request = mutexRequest();
    assert.ok((await take(holder.lock('mutex', 'revoked'), request)) !== null);
    let told: string | undefined;
    holder.lease.onLost((loss) => (told = lostReason(loss)));
    await a.ops.revokeLease(holder.lease.id);
    assert.ok(await eventually(() => holder.lease.lost !== undefined, 5_000), 'the next renewal finds the lease gone');
    assert.equal(holder.lease.lost, 'revoked');
    assert.equal(told, 'taken');
    const next = mutexRequest();
    assert.ok((await take(a.lock('mutex', 'revoked'), next, 0)) !== null, 'the lock is free');
    await a.lock('mutex', 'revoked').release(next.owner, 1);
  });

  it('multi: several names in one transaction, all or none, waiting for the one that is held', async () => {
    const names = ['m-one', 'm-two', 'm-three'];
    const blocker = mutexRequest();
    assert.ok((await take(b.lock('mutex', 'm-two'), blocker)) !== null);
    const wanted = names.map((name) => ({ lock: a.lock('mutex', name), request: mutexRequest() }));
    const once = scope('multi', 0);
    assert.equal(await EtcdLock.takeAll(wanted, once, false), null, 'one name held: none taken');
    once.dispose();
    assert.deepEqual(await keysLeft(a.ops), [`${lockPrefix(ROOT, 'mutex', 'm-two')}${(await b.lock('mutex', 'm-two').inspect()).holders[0]?.name}`], 'and none left queued');
    const waiting = scope('multi', Infinity);
    const taking = EtcdLock.takeAll(wanted, waiting, true);
    await eventually(async () => (await b.lock('mutex', 'm-two').inspect()).waiters.length === 1);
    assert.equal(await take(b.lock('mutex', 'm-one'), mutexRequest(), 0), null, 'the names not held are queued for at once');
    await b.lock('mutex', 'm-two').release(blocker.owner, 1);
    const grants = await taking;
    waiting.dispose();
    assert.ok(grants !== null && grants.length === 3);
    assert.equal(new Set(grants.map((g) => g.fence)).size, 1, 'one transaction: one create revision for every name');
    for (const [i, { lock, request }] of wanted.entries()) assert.equal(await lock.release(request.owner, 1), 0, names[i]);
    assert.deepEqual(await keysLeft(a.ops), []);
  });
});
