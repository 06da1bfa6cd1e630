/**
 * padlock on etcd through its public API (`new Padlock({ etcd })`), on one real member: what is
 * particular to the etcd store. The store-neutral behaviour of every kind is the behaviour suite's
 * (test/stores.test.ts); the faults of a 3-member cluster are test/etcd-faults.test.ts's.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Etcd3 } from 'etcd3';
import { LockLostError, Padlock, type Lease } from '../src/index.js';
import { startEtcd, type Cluster, type EtcdMember } from './harness/etcd.js';
import { delay, eventually } from './harness/redis.js';

const PREFIX = 'padlock';

describe('padlock on etcd (one member)', { timeout: 60_000 }, () => {
  let cluster: Cluster;
  let member: EtcdMember;
  const clients: Etcd3[] = [];
  const padlocks: Padlock[] = [];
  let reader: Etcd3;

  const client = (): Etcd3 => {
    const made = new Etcd3({ hosts: cluster.hosts, dialTimeout: 2_000 });
    clients.push(made);
    return made;
  };
  const padlock = (leaseMs = 6_000): Padlock => {
    const made = new Padlock({ etcd: client(), leaseMs });
    padlocks.push(made);
    return made;
  };
  /** Every key padlock has in etcd now. */
  const keysLeft = (): Promise<string[]> => reader.getAll().prefix(`${PREFIX}/`).keys();
  /** The lease the keys of lock `name` (its holders and waiters) are attached to, by key. */
  const leasesUnder = async (family: string, name: string): Promise<Map<string, string>> => {
    const reply = await reader.kv.range({ key: Buffer.from(`${PREFIX}/${family}/${name}/`), range_end: Buffer.from(`${PREFIX}/${family}/${name}0`) });
    return new Map(reply.kvs.map((kv) => [kv.key.toString(), kv.lease]));
  };
  const revoke = (lease: string): Promise<unknown> => reader.leaseClient.leaseRevoke({ ID: lease });

  before(async () => {
    cluster = await startEtcd(1);
    member = cluster.members[0] as EtcdMember;
    reader = client();
  });
  after(async () => {
    await Promise.all(padlocks.map((p) => p.close().catch(() => undefined)));
    for (const made of clients) made.close();
  });

  it('no herd: each waiter watches one key (the server counts one watcher each), and a release sends one event, serving one waiter', async () => {
    const holder = padlock();
    const [b, c] = [padlock(), padlock()];
    const lease = await holder.mutex('herd').acquire();
    const watchersBefore = (await member.metric('etcd_debugging_mvcc_watcher_total')) ?? 0;
    const served: Lease[] = [];
    const waits = [b, c, b, c, b, c].map(async (p) => {
      const got = await p.mutex('herd').acquire();
      served.push(got);
      return got;
    });
    // Beside them, b and c each watch their lease's told key (a force-release's notice): one watch per Padlock lease.
    assert.ok(await eventually(async () => (await member.metric('etcd_debugging_mvcc_watcher_total')) === watchersBefore + 6 + 2, 10_000), 'six watchers, one per waiter');
    const eventsBefore = (await member.metric('etcd_debugging_mvcc_events_total')) ?? 0;
    await lease.release();
    assert.ok(await eventually(() => served.length === 1, 10_000), 'one waiter served');
    await delay(300);
    assert.equal(served.length, 1, 'only one');
    // The release's delete reached one watcher; the served waiter's watch was cancelled and the next one set.
    assert.equal((await member.metric('etcd_debugging_mvcc_events_total')) ?? 0, eventsBefore + 1, 'one event sent for the release');
    for (let i = 0; i < 6; i++) {
      await eventually(() => served.length > i, 10_000);
      await served[i]?.release();
    }
    await Promise.all(waits);
    assert.ok(await eventually(async () => (await member.metric('etcd_debugging_mvcc_watcher_total')) === watchersBefore + 2, 5_000), "every waiter's watch cancelled (the told keys' stay while their leases live)");
    assert.deepEqual(await keysLeft(), []);
  });

  it('leaves nothing behind: after a release, a timed-out wait, an aborted wait, a failed try, and a close() with holds and waits', async () => {
    const [a, b] = [padlock(), padlock()];
    const held = await a.mutex('left').acquire();
    await assert.rejects(b.mutex('left').acquire({ waitMs: 300 }), { name: 'LockTimeoutError' });
    const abort = new AbortController();
    const aborted = b.mutex('left').acquire({ signal: abort.signal });
    await eventually(async () => (await leasesUnder('mutex', 'left')).size === 2);
    abort.abort(new Error('gave up'));
    await assert.rejects(aborted, /gave up/);
    assert.equal(await b.mutex('left').tryAcquire(), null);
    await eventually(async () => (await leasesUnder('mutex', 'left')).size === 1);
    assert.equal((await leasesUnder('mutex', 'left')).size, 1, 'only the holder');
    await held.release();
    assert.deepEqual(await keysLeft(), [], 'nothing after the release');
    // A Padlock closed while it holds a read lock and a permit and waits for a mutex: its lease is revoked.
    const c = padlock();
    const blocker = await a.mutex('left2').acquire();
    await c.readWrite('left3').read.acquire();
    await c.semaphore('left4', 2).acquire();
    const waiting = c.mutex('left2').acquire().catch((error: unknown) => error);
    await eventually(async () => (await leasesUnder('mutex', 'left2')).size === 2);
    await c.close();
    assert.equal(((await waiting) as Error).name, 'PadlockClosedError');
    await blocker.release();
    assert.deepEqual(await keysLeft(), [], 'nothing after close()');
  });

  it('a lease revoked elsewhere: every hold of that Padlock is told (LockLostError on each lease.signal) at its next renewal, not at the TTL, and its locks are free', async () => {
    // TTL 9 s, renewed every 3 s: told within 6 s is told by a renewal, not by the lease running out unseen.
    const a = padlock(9_000);
    const b = padlock();
    const leases = [await a.mutex('gone1').acquire(), await a.readWrite('gone2').read.acquire(), await a.semaphore('gone3', 3).acquire({ permits: 2 })];
    const [leaseId] = [...(await leasesUnder('mutex', 'gone1')).values()];
    assert.ok(leaseId !== undefined);
    await revoke(leaseId);
    const revokedAt = Date.now();
    for (const lease of leases) {
      assert.ok(await eventually(() => lease.signal.aborted, Math.max(0, revokedAt + 6_000 - Date.now())), 'told before the TTL');
      assert.ok(lease.signal.reason instanceof LockLostError, String(lease.signal.reason));
    }
    const again = await b.mutex('gone1').tryAcquire();
    assert.ok(again !== null, 'free');
    await again.release();
    // The Padlock goes on under a new lease.
    const next = await a.mutex('gone1').acquire({ waitMs: 5_000 });
    assert.ok(next.fence > leases[0]!.fence);
    await next.release();
    for (const lease of leases) await lease.release().catch(() => undefined);
    assert.deepEqual(await keysLeft(), []);
  });

  it('multi takes every name in one transaction: one create revision for all (equal fences), none while one name is held, and waits as one', async () => {
    const [a, b] = [padlock(), padlock()];
    const revisionBefore = Number((await reader.maintenance.status()).header.revision);
    const all = await a.multi(['m:a', 'm:b', 'm:c']).acquire();
    const fences = [...all.fences.values()];
    assert.equal(new Set(fences).size, 1, `one transaction, one revision for every name: ${fences.join(', ')}`);
    assert.ok((fences[0] ?? 0) > revisionBefore);
    // While one name is held elsewhere, a try takes none of them.
    await all.release();
    const one = await b.mutex('m:b').acquire();
    assert.equal(await a.multi(['m:a', 'm:b', 'm:c']).tryAcquire(), null);
    assert.deepEqual((await keysLeft()).filter((key) => !key.includes('/m%3Ab/')), [], 'no key of the other names was kept');
    // A wait is one wait: served once the held name is released, all names together.
    const waiting = a.multi(['m:c', 'm:a', 'm:b']).acquire({ waitMs: 10_000 });
    await delay(100);
    await one.release();
    const later = await waiting;
    assert.equal(new Set(later.fences.values()).size, 1);
    await later.release();
    assert.deepEqual(await keysLeft(), []);
  });

  it('re-enters by owner across two Padlocks: one key, its count 2, the same fence; it is free only once both released', async () => {
    const [a, b, c] = [padlock(), padlock(), padlock()];
    const first = await a.mutex('owned').acquire();
    const second = await b.mutex('owned').acquire({ owner: first.owner });
    assert.equal(second.fence, first.fence);
    assert.equal(second.holdCount, 2);
    assert.equal((await leasesUnder('mutex', 'owned')).size, 1, 'one key');
    await first.release();
    assert.equal(await c.mutex('owned').tryAcquire(), null, 'still held by the owner');
    await second.release();
    const free = await c.mutex('owned').tryAcquire();
    assert.ok(free !== null);
    assert.ok(free.fence > first.fence);
    await free.release();
    assert.deepEqual(await keysLeft(), []);
  });

  it('after a wait, its own key is read again before the lock is reported held: a waiter whose lease was revoked while it waited is not granted beside the next holder', async () => {
    const [a, b, c] = [padlock(), padlock(30_000), padlock()];
    const held = await a.mutex('reread').acquire();
    const [holderLease] = [...(await leasesUnder('mutex', 'reread')).values()];
    let inside = 0;
    let most = 0;
    const fences: number[] = [];
    const use = async (lease: Lease): Promise<void> => {
      most = Math.max(most, ++inside);
      fences.push(lease.fence);
      await delay(500);
      inside--;
      await lease.release();
    };
    const waiting = b.mutex('reread').acquire({ waitMs: 20_000 }).then(use);
    await eventually(async () => (await leasesUnder('mutex', 'reread')).size === 2);
    const waiterLease = [...(await leasesUnder('mutex', 'reread')).values()].find((id) => id !== holderLease);
    assert.ok(waiterLease !== undefined);
    // The waiter's key goes with its lease; its own clock learns of it only at its next renewal (10 s away).
    await revoke(waiterLease);
    await held.release();
    const other = c.mutex('reread').acquire({ waitMs: 20_000 }).then(use);
    // Woken, the waiter finds its key gone and queues again under a fresh lease: never two holders.
    await Promise.all([waiting, other]);
    assert.equal(most, 1, 'one holder at a time');
    assert.equal(fences.length, 2);
    assert.deepEqual(await keysLeft(), []);
  });
});
