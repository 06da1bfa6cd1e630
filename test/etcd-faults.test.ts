/**
 * padlock on a 3-member etcd cluster under faults, through its public API: a member killed (the
 * leader, while a lock is held or as it is released; a follower), the majority lost, the holder's process killed or frozen past its lease.
 * Where locks change hands during a fault, workers (each a Padlock with an etcd client of its own)
 * run read-modify-write sections on the fenced store (test/safety/fenced-store.ts), and the safety
 * checker (test/safety/checker.ts) judges the records: no overlapping valid holds, no lost update,
 * no stale write accepted, fences growing.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Etcd3 } from 'etcd3';
import type { Redis } from 'ioredis';
import { EtcdUnavailableError, LockLostError, Padlock } from '../src/index.js';
import { REPLY_GRACE_MS } from '../src/wait-scope.js';
import { startEtcd, type Cluster, type EtcdMember } from './harness/etcd.js';
import { connect, delay, eventually, startServer } from './harness/redis.js';
import { firstMessage, forkFixture } from './harness/children.js';
import { describeReport, isLive, isSafe, type SafetyReport } from './safety/checker.js';
import { FencedStore } from './safety/fenced-store.js';
import { runInProcess } from './safety/in-process-run.js';

/** A lease of 2 s: etcd's TTL is whole seconds, at least 1.5 election time-outs (1.8 s here). */
const LEASE_MS = 2_000;

describe('padlock on a 3-member etcd cluster under faults', { timeout: 150_000 }, () => {
  let cluster: Cluster;
  let admin: Redis;
  let redisPort: number;
  const clients: Etcd3[] = [];
  const padlocks: Padlock[] = [];

  const padlock = (options: { leaseMs?: number; replyTimeoutMs?: number; hosts?: string[] } = {}): Padlock => {
    const client = new Etcd3({ hosts: options.hosts ?? cluster.hosts, dialTimeout: 1_000 });
    clients.push(client);
    const made = new Padlock({ etcd: client, leaseMs: options.leaseMs ?? LEASE_MS, replyTimeoutMs: options.replyTimeoutMs ?? 3_000 });
    // Renewals that fail while members are down are reported as events; the holds' fate is what is tested.
    made.on('error', () => undefined);
    padlocks.push(made);
    return made;
  };
  const followers = async (): Promise<EtcdMember[]> => {
    const leader = await cluster.leader();
    return cluster.members.filter((m) => m !== leader);
  };

  before(async () => {
    const server = await startServer();
    redisPort = server.port;
    admin = connect(server);
    cluster = await startEtcd(3);
  });
  after(async () => {
    await Promise.all(padlocks.map((p) => p.close({ drainMs: 0 }).catch(() => undefined)));
    for (const client of clients) client.close();
  });

  /** `workers` Padlocks each run `sections` read-modify-write sections of lock `name` while `during` runs; the checker's report. */
  const runChecked = (name: string, workers: number, sections: number, during: (holding: () => Promise<void>) => Promise<void>): Promise<SafetyReport> =>
    runInProcess({ admin, name, workers, sections, padlock: () => padlock(), giveUpMs: 40_000, during });

  it('the leader killed while a lock is held: the holder keeps it past its TTL (the new leader renews its lease), and workers stay safe across the election', async () => {
    // A TTL longer than an election (1.2–2.4 s here) and a renewal's retries: 5 s, held for 6 s after the kill.
    const holder = padlock({ leaseMs: 5_000 });
    const held = await holder.mutex('leader:held').acquire();
    const other = padlock();
    const report = await runChecked('leader', 3, 8, async (holding) => {
      await holding();
      const leader = await cluster.leader();
      await leader.kill();
      await delay(3 * LEASE_MS);
      await leader.start();
    });
    assert.ok(isSafe(report), describeReport(report));
    assert.ok(isLive(report), describeReport(report));
    assert.equal(held.signal.aborted, false, `the holder was told ${String(held.signal.reason)}`);
    assert.equal(held.isHeld, true);
    assert.equal(await other.mutex('leader:held').tryAcquire(), null, 'nobody else got it');
    await held.release();
  });

  it('the leader killed as the holder releases: the release moves to a live member, and the next waiter is served within 3 s', async (t) => {
    // The default reply time-out: a release that waited on the dead leader for it served the waiter 5 s after the kill.
    // The holder's lease outlasts the outage (pause, kill, election: up to ~3 s), so that only the
    // release decides. The waiter's 2 s lease does not: it is carried across by the TTL read the
    // waiter makes as it wakes (LeaseClock.confirm); without it, the waiter's hold was lost a moment
    // after it was served, and its release below rejected LockNotHeldError (2 runs in 12).
    const holder = padlock({ replyTimeoutMs: 5_000, leaseMs: 6_000 });
    const waiter = padlock({ replyTimeoutMs: 5_000 });
    // Every member back and following one leader (the row before restarted the one it killed).
    assert.ok(await eventually(async () => (await Promise.all(cluster.members.map((m) => m.status()))).every((s) => s !== undefined && s.leader !== '0'), 10_000));
    const held = await holder.mutex('leader:release').acquire();
    const waiting = waiter.mutex('leader:release').acquire({ waitMs: 15_000 });
    await delay(300);
    const leader = await cluster.leader();
    try {
      // Frozen first, so that the release is still in flight when the leader dies, whichever member
      // it was sent to (a follower forwards it to the leader): on loopback, a release sent as the
      // kill is may land before it.
      leader.pause();
      const releasing = held.release();
      // A fresh take sent at the same moment (a join, then reads) moves on as the release does.
      const taking = padlock({ replyTimeoutMs: 5_000, leaseMs: 6_000 }).mutex('leader:take').acquire({ waitMs: 15_000 });
      await delay(20);
      const killedAt = Date.now();
      await leader.kill();
      const elected = cluster.leader().then(() => Date.now() - killedAt);
      const [next, taken] = await Promise.all([waiting.then((lease) => ({ lease, after: Date.now() - killedAt })), taking.then((lease) => ({ lease, after: Date.now() - killedAt }))]);
      await releasing;
      const electedAfter = await elected;
      const timings = `waiter served ${next.after} ms after the kill, the fresh take ${taken.after} ms; a new leader seen after ${electedAfter} ms`;
      t.diagnostic(timings);
      // etcd elects a new leader 1.2–2.4 s after the last heartbeat here (a 1.2 s election time-out,
      // randomised up to twice that), rarely later (a split vote: 3.1 s seen once in 6 runs); then a
      // release waits one try's bound (500 ms) at most. So: 3 s, or 1 s after an election that took
      // longer. A fresh take makes three calls in turn (its lease, the watch of its told key, the
      // join), each of which may wait one try's bound after the election: 1.5 s after it (3.4 s seen
      // once in 31 runs, after a 1.8 s election).
      assert.ok(next.after < Math.max(3_000, electedAfter + 1_000), timings);
      assert.ok(taken.after < Math.max(3_000, electedAfter + 1_500), timings);
      await taken.lease.release();
      assert.ok(next.lease.fence > held.fence);
      await next.lease.release();
      // The same Padlocks go on.
      const again = await holder.mutex('leader:release').acquire({ waitMs: 5_000 });
      await again.release();
    } finally {
      leader.resume();
      await leader.start();
    }
  });

  it('a follower killed: workers are served on, safely', async () => {
    const report = await runChecked('follower', 3, 8, async (holding) => {
      await holding();
      const [follower] = await followers();
      await follower!.kill();
      await delay(2 * LEASE_MS);
      await follower!.start();
    });
    assert.ok(isSafe(report), describeReport(report));
    assert.ok(isLive(report), describeReport(report));
  });

  it('the majority lost: an acquisition fails with EtcdUnavailableError within its bound, the holder is told (LockLostError); back to a majority, the lock is taken again with a higher fence', async () => {
    const replyTimeoutMs = 2_000;
    const holder = padlock();
    const held = await holder.mutex('majority').acquire();
    const other = padlock({ replyTimeoutMs });
    const [kept, ...lost] = await followers();
    const downed = [...lost, ...cluster.members.filter((m) => m !== kept && !lost.includes(m))];
    await Promise.all(downed.map((m) => m.kill()));
    try {
      const startedAt = Date.now();
      await assert.rejects(other.mutex('majority').acquire({ waitMs: 1_000 }), (error) => error instanceof EtcdUnavailableError);
      const took = Date.now() - startedAt;
      // The wait's bound: its waitMs, and every call gets at least the reply grace, never more than the reply time-out.
      assert.ok(took < 1_000 + Math.max(REPLY_GRACE_MS, replyTimeoutMs) + 1_500, `failed after ${took} ms`);
      assert.ok(await eventually(() => held.signal.aborted, LEASE_MS + 3_000), 'the holder was told');
      assert.ok(held.signal.reason instanceof LockLostError, String(held.signal.reason));
    } finally {
      await Promise.all(downed.map((m) => m.start()));
    }
    const next = await other.mutex('majority').acquire({ waitMs: 30_000 });
    assert.ok(next.fence > held.fence);
    await next.release();
    await held.release().catch(() => undefined);
  });

  it('the holder\'s process killed: a waiter is served once its lease\'s TTL ran out, with a higher fence', async () => {
    const child = forkFixture('etcd-padlock-holder', [cluster.hosts.join(','), 'killed', String(LEASE_MS), String(redisPort), 'killed']);
    const { fence } = await firstMessage<{ fence: number }>(child);
    const waiter = padlock();
    const waiting = waiter.mutex('killed').acquire({ waitMs: 30_000 });
    await delay(200);
    const killedAt = Date.now();
    child.kill('SIGKILL');
    const lease = await waiting;
    const servedAfter = Date.now() - killedAt;
    assert.ok(lease.fence > fence);
    // etcd expires a lease its TTL after the last renewal (a new leader would add an election time-out).
    assert.ok(servedAfter < LEASE_MS + 4_000, `served ${servedAfter} ms after the kill`);
    await lease.release();
  });

  it('the holder frozen past its lease: another takes the lock; resumed, the holder has been told, and its late fenced write is refused', async () => {
    const store = new FencedStore(admin, 'frozen');
    await store.reset('checked');
    const child = forkFixture('etcd-padlock-holder', [cluster.hosts.join(','), 'frozen', String(LEASE_MS), String(redisPort), 'frozen']);
    const first = await firstMessage<{ fence: number; owner: string }>(child);
    child.kill('SIGSTOP');
    let report: { told: boolean; reason: string; read: boolean; write: boolean } | undefined;
    try {
      const next = await padlock().mutex('frozen').acquire({ waitMs: 30_000 });
      assert.ok(next.fence > first.fence);
      const read = await store.read(next.fence, next.owner);
      assert.ok((await store.write(next.fence, next.owner, read.value)).accepted);
      const reported = new Promise<typeof report>((resolve) => child.once('message', (m) => resolve(m as typeof report)));
      child.kill('SIGCONT');
      await delay(500);
      child.send('write');
      report = await reported;
      await next.release();
    } finally {
      child.kill('SIGCONT');
      child.kill('SIGKILL');
    }
    assert.equal(report?.told, true, 'told before it wrote');
    assert.ok(report.reason === 'expired' || report.reason === 'taken', report.reason);
    assert.equal(report.write, false, 'its late write refused');
    const log = await store.log();
    assert.equal(log.filter((e) => e.owner === first.owner && e.accepted).length, 0, 'nothing of the old holder accepted');
    assert.equal(await store.value(), 1);
  });
});
