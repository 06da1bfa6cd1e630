/**
 * Redlock under the faults it exists for, on 5 independent masters: a lost minority (killed or
 * frozen) costs a held lock nothing, and a round decides as soon as the masters that answered decide
 * it — a release does not wait for the silent ones' time-out, and close() waits for their calls.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { lockKeys } from '../src/keys.js';
import { Padlock } from '../src/index.js';
import type { PadlockOptions } from '../src/options.js';
import { monotonicNow } from '../src/clock.js';
import type { Redlock } from '../src/stores/redis/topology/redlock.js';
import { connect, delay, eventually, useMasters } from './harness/redis.js';
import { holdsOf } from './harness/lock-state.js';
import { redisInternals } from '../src/testing.js';

const { masters, admins, padlocks } = useMasters(5);

/** A Padlock over all five masters, each through a client of its own, connected (the short per-master time-out of a 1 s lease is not for connecting). */
async function redlock(options: Omit<PadlockOptions, 'redis'> = {}): Promise<Padlock> {
  const clients = masters.map((m) => connect(m));
  await Promise.all(clients.map((c) => c.ping()));
  const padlock = new Padlock({ redis: clients, ...options });
  padlocks.push(padlock);
  return padlock;
}

/** On which of the masters at `indexes` `owner` holds `name`. */
async function holdersOf(name: string, owner: string, indexes: readonly number[]): Promise<number[]> {
  const key = lockKeys('padlock', name).lock;
  const held = await Promise.all(indexes.map(async (i) => (await holdsOf(admins[i]!, key, owner)) > 0));
  return indexes.filter((_, j) => held[j]);
}

/** A renewed 1 s lease held while 2 of 5 masters are lost (`fault`), watched for 4 s. */
function minorityLost(fault: 'frozen (SIGSTOP)' | 'killed'): void {
  it(`2 of 5 masters ${fault} while a renewed 1 s lease is held: the lease lives on for 4 leases, and nobody else gets the lock`, async () => {
    const name = `rlf:minority:${fault}`;
    const padlock = await redlock({ leaseMs: 1_000 });
    const other = await redlock({ leaseMs: 1_000 });
    let lost: unknown;
    padlock.on('lost', (error) => (lost = error));
    const lease = await padlock.mutex(name).acquire();
    if (fault === 'killed') await Promise.all([3, 4].map((i) => masters[i]!.kill()));
    else for (const i of [3, 4]) masters[i]!.pause();
    try {
      const until = monotonicNow() + 4_000;
      let tries = 0;
      while (monotonicNow() < until) {
        assert.equal(await other.mutex(name).tryAcquire(), null, 'another client got the lock');
        tries++;
        await delay(100);
      }
      assert.ok(tries > 5);
      assert.equal(lost, undefined, `the lease was lost: ${String(lost)}`);
      assert.equal(lease.isHeld, true);
      assert.deepEqual(await holdersOf(name, lease.owner, [0, 1, 2]), [0, 1, 2], 'still held on the live three');
      await lease.release();
      assert.deepEqual(await holdersOf(name, lease.owner, [0, 1, 2]), []);
    } finally {
      if (fault === 'killed') await Promise.all([3, 4].map((i) => masters[i]!.restart()));
      else for (const i of [3, 4]) masters[i]!.resume();
    }
  });
}

describe('Redlock: a lost minority changes nothing', () => {
  minorityLost('frozen (SIGSTOP)');

  it('2 of 5 frozen: a release returns without waiting for the frozen masters\' time-out, 20 times; close() waits for their calls', async () => {
    const name = 'rlf:release';
    const padlock = await redlock();
    const topology = redisInternals(padlock).topology as Redlock;
    // The per-master time-out of a release (no lease of its own: the Padlock's 30 s one, so 1 s).
    const nodeTimeoutMs = topology.nodeTimeoutMs();
    const leases = [];
    for (let i = 0; i < 20; i++) {
      const lease = await padlock.mutex(`${name}:${i}`).acquire();
      leases.push(lease);
    }
    assert.deepEqual(await holdersOf(`${name}:0`, leases[0]!.owner, [0, 1, 2, 3, 4]), [0, 1, 2, 3, 4], 'held on every master');
    for (const i of [3, 4]) masters[i]!.pause();
    let closed = false;
    try {
      for (const lease of leases) {
        const startedAt = monotonicNow();
        await lease.release();
        const took = monotonicNow() - startedAt;
        // Decided by the three live masters: it never waits for the frozen two to time out.
        assert.ok(took < nodeTimeoutMs, `a release took ${Math.round(took)} ms, the per-master time-out is ${nodeTimeoutMs} ms`);
      }
      // The frozen masters' release calls run on in the background: close() waits for them.
      const closing = padlock.close().then(() => (closed = true));
      await delay(nodeTimeoutMs / 4);
      assert.equal(closed, false, 'close() returned while release calls were still on their way to the frozen masters');
      for (const i of [3, 4]) masters[i]!.resume();
      await closing;
      assert.deepEqual(await holdersOf(`${name}:0`, leases[0]!.owner, [3, 4]), [], 'the frozen masters released it once they came back');
    } finally {
      for (const i of [3, 4]) masters[i]!.resume();
    }
  });

  it('an acquisition refused by a majority does not wait for the frozen masters', async () => {
    const name = 'rlf:refused';
    const holder = await (await redlock()).mutex(name).acquire();
    const other = await redlock();
    const nodeTimeoutMs = (redisInternals(other).topology as Redlock).nodeTimeoutMs();
    for (const i of [3, 4]) masters[i]!.pause();
    try {
      const startedAt = monotonicNow();
      assert.equal(await other.mutex(name).tryAcquire(), null);
      const took = monotonicNow() - startedAt;
      assert.ok(took < nodeTimeoutMs, `a refused attempt took ${Math.round(took)} ms, the per-master time-out is ${nodeTimeoutMs} ms`);
    } finally {
      for (const i of [3, 4]) masters[i]!.resume();
    }
    assert.ok(await eventually(async () => (await holdersOf(name, holder.owner, [0, 1, 2, 3, 4])).length === 5), 'the holder still holds, on every master');
    assert.equal(holder.isHeld, true);
    await holder.release();
  });

  it('a renewal falling due while the holder\'s own release waits on silent masters does not tell it the lock was taken', async () => {
    const name = 'rlf:release-meets-renewal';
    // A 3 s lease: renewed at 1 s; a release's per-master time-out is then 750 ms.
    const padlock = await redlock({ leaseMs: 3_000 });
    const nodeTimeoutMs = (redisInternals(padlock).topology as Redlock).nodeTimeoutMs();
    let lost: unknown;
    padlock.on('lost', (error) => (lost = error));
    const acquiredAt = monotonicNow();
    const lease = await padlock.mutex(name).acquire();
    // Two masters frozen and a third that lost its copy: the release frees the lock on two, hears
    // "not held" from one, and so waits for the frozen two until their time-out, across the renewal.
    await admins[2]!.del(lockKeys('padlock', name).lock);
    for (const i of [3, 4]) masters[i]!.pause();
    try {
      await delay(Math.max(0, acquiredAt + 1_000 - nodeTimeoutMs / 2 - monotonicNow()));
      const releasedAt = monotonicNow();
      await lease.release();
      assert.ok(monotonicNow() - releasedAt >= nodeTimeoutMs * 0.9, 'the release waited for the frozen masters (else this row tests nothing)');
      assert.ok(monotonicNow() - acquiredAt > 1_000, 'the renewal fell due while the release was on its way');
      assert.equal(lost, undefined, `the holder was told its lock was lost while releasing it: ${String(lost)}`);
      assert.equal(lease.signal.aborted, false);
      assert.deepEqual(await holdersOf(name, lease.owner, [0, 1, 2]), []);
    } finally {
      for (const i of [3, 4]) masters[i]!.resume();
    }
    assert.ok(await eventually(async () => (await holdersOf(name, lease.owner, [3, 4])).length === 0), 'the frozen masters released it once they came back');
  });

  // Last: the killed masters come back empty, and sit out (the restart rule) for the rest of the file.
  minorityLost('killed');
});
