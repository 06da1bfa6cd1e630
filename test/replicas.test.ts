/**
 * Replica acknowledgement (`replicas: { min, timeoutMs }`) on a primary with replicas under
 * Sentinel, and what a failover does to a held lock with and without it. Real processes: a primary,
 * its replicas and three redis-sentinel processes on loopback (test/harness/sentinel.ts).
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Cluster } from 'ioredis';
import { lockKeys } from '../src/keys.js';
import { LockLostError, Padlock, PadlockOptionError, ReplicaAckError, type Lease } from '../src/index.js';
import type { PadlockOptions } from '../src/options.js';
import { command, startSentinelSet, type SentinelSet } from './harness/topologies.js';
import { delay, eventually, lossOf } from './harness/redis.js';
import { parseLock } from './harness/lock-state.js';

/** How many holds `owner` has in a lock key's value, as read off a server (0 when none). */
function countOf(value: unknown, owner: string): number {
  const state = parseLock(typeof value === 'string' ? value : null);
  return state?.owner === owner ? state.count : 0;
}

const padlocks: Padlock[] = [];
after(() => Promise.all(padlocks.map((p) => p.close())));

/** A Padlock on a fresh Sentinel-mode client of `set`, closed after the file. */
function padlockOn(set: SentinelSet, options: Omit<PadlockOptions, 'redis'> = {}): Padlock {
  const padlock = new Padlock({ redis: set.client(), ...options });
  padlocks.push(padlock);
  return padlock;
}

const ACK = { min: 1, timeoutMs: 300 } as const;

describe('replicas: { min, timeoutMs } (WAIT after every grant and renewal)', () => {
  let set: SentinelSet;
  before(async () => {
    set = await startSentinelSet({ replicas: 1 });
  });

  it('a grant and a re-entry are on the replica when they return; renewals keep an acknowledged lease alive', async () => {
    const padlock = padlockOn(set, { replicas: ACK, leaseMs: 600 });
    const [replica] = await set.replicas();
    const keys = lockKeys('padlock', 'ack:up');
    const lease = await padlock.mutex('ack:up').acquire();
    assert.equal(countOf(await command(replica!, 'GET', keys.lock), lease.owner), 1, 'the replica had the grant when acquire returned');
    const inner = await padlock.mutex('ack:up').acquire({ owner: lease.owner });
    assert.equal(countOf(await command(replica!, 'GET', keys.lock), lease.owner), 2);
    await delay(900); // past the lease: only acknowledged renewals kept it
    assert.equal(lease.isHeld, true);
    await inner.release();
    await lease.release();
    assert.equal(await padlock.mutex('ack:up').isLocked(), false);
  });

  it('the fair mutex hands over with replicas too (the waiter claims its handoff by an acknowledged call)', async () => {
    const holderSide = padlockOn(set, { replicas: ACK });
    const waiterSide = padlockOn(set, { replicas: ACK });
    const [replica] = await set.replicas();
    const holder = await holderSide.fairMutex('ack:fair').acquire();
    const waiting = waiterSide.fairMutex('ack:fair').acquire({ waitMs: 10_000 });
    await delay(50);
    await holder.release();
    const lease = await waiting;
    assert.equal(countOf(await command(replica!, 'GET', lockKeys('padlock', 'ack:fair').lock), lease.owner), 1, 'the claim was acknowledged');
    await lease.release();
  });

  it('with the replica frozen, a grant fails with ReplicaAckError and leaves no hold on the primary; a held lock whose renewals go unacknowledged is lost', async () => {
    const padlock = padlockOn(set, { replicas: ACK, leaseMs: 900 });
    const primary = await set.primary();
    const keys = lockKeys('padlock', 'ack:frozen');
    const held = await padlock.mutex('ack:held').acquire();
    const replica = await set.pauseReplica();
    try {
      const refused = await padlock.mutex('ack:frozen').tryAcquire().then(
        () => assert.fail('a grant no replica acknowledged was kept'),
        (error: unknown) => error,
      );
      assert.ok(refused instanceof ReplicaAckError, `got ${String(refused)}`);
      assert.equal(refused.code, 'REPLICA_ACK');
      assert.deepEqual([refused.acknowledged, refused.required], [0, 1]);
      const left = parseLock((await command(primary, 'GET', keys.lock)) as string | null);
      assert.equal(left?.count ?? 0, 0, 'the grant was undone on the primary: no owner is left');
      // The hold taken before the freeze: its renewals are refused, so it runs out and is reported.
      const lost = await lossOf(held);
      assert.ok(lost instanceof LockLostError && lost.reason === 'expired', `got ${String(lost)}`);
    } finally {
      await set.revive(replica);
    }
    const lease = await padlock.mutex('ack:frozen').tryAcquire();
    assert.ok(lease !== null, 'acknowledged again once the replica is back');
    await lease.release();
  });
});

describe('Sentinel failover under a held lock', () => {
  it('with replicas.min 1, a lock acquired before the failover is still held after it', async () => {
    const set = await startSentinelSet({ replicas: 2 });
    const holderSide = padlockOn(set, { replicas: ACK, leaseMs: 10_000 });
    const lease = await holderSide.mutex('failover:acked').acquire();
    const failover = await set.failover('kill');
    assert.notEqual(failover.promoted, failover.previous);
    const other = padlockOn(set);
    assert.equal(await other.mutex('failover:acked').tryAcquire(), null, 'the promoted replica has the lock: nobody else gets it');
    await lease.extend(); // the holder renews it on the new primary
    assert.equal(lease.isHeld, true);
    assert.equal(countOf(await command(failover.promoted, 'GET', lockKeys('padlock', 'failover:acked').lock), lease.owner), 1);
    await lease.release();
    await set.stop();
  });

  it('without acknowledgement, a failover can lose a lock: a second holder gets it, with a greater fence, so a fenced store refuses the first', async () => {
    const set = await startSentinelSet({ replicas: 1 });
    const first = await set.primary();
    const [replica] = await set.replicas();
    const holderSide = padlockOn(set, { leaseMs: 3_000 });
    // Cut replication before the grant: the replica is frozen and its link dropped, so the write
    // that grants the lock reaches the primary only (asynchronous replication's window, made wide).
    replica!.pause();
    await command(first, 'CLIENT', 'KILL', 'TYPE', 'replica');
    const stale: Lease = await holderSide.mutex('failover:lost').acquire();
    const failing = set.failover('kill');
    await delay(300); // the primary is dead before the replica can reconnect to it
    replica!.resume();
    const failover = await failing;
    assert.equal(failover.promoted, replica, 'the replica that never got the grant was promoted');

    const newcomer = padlockOn(set);
    const second = await newcomer.mutex('failover:lost').tryAcquire();
    assert.ok(second !== null, 'the lock was lost in the failover: a second holder got it');
    assert.ok(second.fence > stale.fence, `fence ${second.fence} after ${stale.fence}: fences rest on the server's clock, not on the lost key`);
    // A fenced store keeps the highest fence it has seen and refuses anything lower.
    let highest = 0;
    const write = (fence: number): boolean => (fence >= highest ? ((highest = fence), true) : false);
    assert.equal(write(second.fence), true, 'the new holder writes');
    assert.equal(write(stale.fence), false, 'the stale holder is refused');
    // The stale holder learns at its next renewal, which finds the lock owned by another.
    assert.ok(await eventually(() => !stale.isHeld, 5_000), 'the stale holder was told');
    assert.ok(stale.signal.reason instanceof LockLostError);
    await second.release();
    await set.stop();
  });
});

describe('replicas: options', () => {
  it('refuses bad values, and a Cluster client, naming what to change', () => {
    const cluster = new Cluster([{ host: '127.0.0.1', port: 1 }], { lazyConnect: true });
    try {
      const refused = (options: unknown): string => {
        try {
          new Padlock({ redis: cluster, ...(options as object) });
        } catch (error) {
          assert.ok(error instanceof PadlockOptionError);
          return error.option;
        }
        return 'accepted';
      };
      assert.equal(refused({ replicas: { min: 1, timeoutMs: 100 } }), 'replicas', 'not with a Cluster client');
      assert.equal(refused({ replicas: { min: 0, timeoutMs: 100 } }), 'replicas.min');
      assert.equal(refused({ replicas: { min: 1.5, timeoutMs: 100 } }), 'replicas.min');
      assert.equal(refused({ replicas: { min: 1, timeoutMs: 5_000 } }), 'replicas.timeoutMs', 'WAIT must fit within replyTimeoutMs');
      assert.equal(refused({ replicas: { min: 1, timeoutMs: 100, extra: 1 } }), 'replicas.extra');
      assert.equal(refused({ replicas: 1 }), 'replicas');
    } finally {
      cluster.disconnect();
    }
  });
});
