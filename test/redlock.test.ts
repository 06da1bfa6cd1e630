/**
 * Redlock: `new Padlock({ redis: [m1, …, m5] })` over five independent redis-server masters on
 * loopback. A lock needs a majority; it survives the loss of a minority, fails typed without a
 * majority (leaving nothing behind), and its fences increase across overlapping majorities.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { lockKeys } from '../src/keys.js';
import { LockLostError, Padlock, PadlockOptionError, QuorumError, type Lease } from '../src/index.js';
import type { PadlockOptions } from '../src/options.js';
import { MutexProtocol } from '../src/stores/redis/kinds/mutex-protocol.js';
import { SemaphoreProtocol, semaphoreKeys } from '../src/stores/redis/kinds/semaphore-protocol.js';
import { enqueueScript, inspectScript, type AcquireReply } from '../src/stores/redis/scripts/index.js';
import { checkedScript } from '../src/stores/redis/topology/master-epoch.js';
import { releaseQuorum } from '../src/stores/redis/topology/quorum.js';
import { connect, delay, eventually, lossOf, runCall, useMasters } from './harness/redis.js';
import { holdsOf, isHeld, queuedOwners, readLock } from './harness/lock-state.js';
import { redisInternals } from '../src/testing.js';

const { masters, admins, padlocks } = useMasters(5);

/** A Padlock over all five masters, each through a client of its own. */
function redlock(options: Omit<PadlockOptions, 'redis'> = {}): Padlock {
  const padlock = new Padlock({ redis: masters.map((m) => connect(m)), ...options });
  padlocks.push(padlock);
  return padlock;
}

/** Freezes the masters at `indexes` (SIGSTOP) while `work` runs. */
async function frozen<T>(indexes: readonly number[], work: () => Promise<T>): Promise<T> {
  for (const i of indexes) masters[i]!.pause();
  try {
    return await work();
  } finally {
    for (const i of indexes) masters[i]!.resume();
  }
}

/** On which masters `owner` holds `name`. */
async function holdersOf(name: string, owner: string, indexes = [0, 1, 2, 3, 4]): Promise<number[]> {
  const key = lockKeys('padlock', name).lock;
  const held = await Promise.all(indexes.map(async (i) => (await holdsOf(admins[i]!, key, owner)) > 0));
  return indexes.filter((_, j) => held[j]);
}

describe('Redlock over 5 masters', () => {
  it('takes the lock on the masters, excludes others, re-enters (by context and by owner) with the same fence, releases everywhere', async () => {
    const padlock = redlock();
    const other = redlock();
    const lease = await padlock.mutex('rl:basic').acquire();
    assert.ok(await eventually(async () => (await holdersOf('rl:basic', lease.owner)).length === 5), 'held on every master');
    const key = lockKeys('padlock', 'rl:basic').lock;
    const fences = async (): Promise<number[]> => Promise.all(admins.map(async (a) => (await readLock(a, key))?.fence ?? 0));
    assert.ok(await eventually(async () => (await fences()).every((f) => f === lease.fence)), 'every master shows the hold\'s fence, a late granter\'s raised too');
    assert.equal(await other.mutex('rl:basic').tryAcquire(), null, 'held by another');
    const inner = await padlock.mutex('rl:basic').acquire({ owner: lease.owner });
    assert.equal(inner.fence, lease.fence);
    assert.equal(inner.holdCount, 2);
    await inner.release();
    await lease.release();
    // A release returns once a majority released; the rest finish in the background, soon.
    assert.ok(await eventually(async () => (await holdersOf('rl:basic', lease.owner)).length === 0), 'released on every master');
    assert.equal(await other.mutex('rl:basic').isLocked(), false);
    await padlock.mutex('rl:ctx').withLock(async (outer) => {
      const nested = await padlock.mutex('rl:ctx').acquire();
      assert.equal(nested.fence, outer.fence);
      await nested.release();
    });
  });

  it('two masters frozen: a lock is still taken, renewed and released by the other three', async () => {
    const padlock = redlock({ leaseMs: 6_000 });
    await frozen([3, 4], async () => {
      const lease = await padlock.mutex('rl:minority').acquire();
      assert.deepEqual(await holdersOf('rl:minority', lease.owner, [0, 1, 2]), [0, 1, 2]);
      await lease.extend();
      assert.equal(lease.isHeld, true);
      await lease.release();
      assert.deepEqual(await holdersOf('rl:minority', lease.owner, [0, 1, 2]), []);
    });
  });

  it('three masters frozen: QuorumError saying which master said what, and no hold left on the live two', async () => {
    const padlock = redlock();
    let owner = '';
    padlock.on('acquired', (event) => (owner = event.owner));
    const error = await frozen([0, 1, 2], () => padlock.mutex('rl:majority').tryAcquire().then(() => assert.fail('granted without a majority'), (e: unknown) => e));
    assert.ok(error instanceof QuorumError, `got ${String(error)}`);
    assert.equal(error.code, 'QUORUM');
    assert.equal(error.nodes.length, 5);
    assert.equal(error.nodes.filter((n) => n.outcome === 'error').length, 3);
    assert.equal(owner, '', 'nothing was acquired');
    const key = lockKeys('padlock', 'rl:majority').lock;
    assert.ok(await eventually(async () => !(await isHeld(admins[3]!, key)) && !(await isHeld(admins[4]!, key))), 'the live masters\' grants were undone');
  });

  it('fences increase across overlapping majorities: {1,2,3} five times, then {3,4,5}, then {1,2,4}', async () => {
    const padlock = redlock();
    const fences: number[] = [];
    const once = async (): Promise<void> => {
      const lease = await padlock.mutex('rl:fence').acquire();
      fences.push(lease.fence);
      await lease.release();
    };
    await frozen([3, 4], async () => {
      for (let i = 0; i < 5; i++) await once();
    });
    await frozen([0, 1], once);
    await frozen([2, 4], once);
    for (let i = 1; i < fences.length; i++) assert.ok(fences[i]! > fences[i - 1]!, `fences ${fences.join(', ')}`);
  });

  it('a master whose fence is ahead of the proposal: its fence is written back, and a majority sharing one master with it gives more', async () => {
    const padlock = redlock();
    const name = 'rl:fence-ahead';
    // As left on this master by a hold (its tombstone) whose fence came from a client whose clock ran ahead.
    const ahead = Math.floor(Date.now() * 1000) + 1e12;
    await admins[0]!.set(lockKeys('padlock', name).lock, `${ahead}||0|| `, 'PX', 60_000);
    const first = await frozen([3, 4], () => padlock.mutex(name).acquire());
    assert.equal(first.fence, ahead + 1, 'the greatest fence of the majority {1,2,3}');
    await first.release();
    // {3,4,5} shares only master 3 with {1,2,3}: it knows the fence only if it was written back there.
    const second = await frozen([0, 1], () => redlock().mutex(name).acquire());
    assert.ok(second.fence > first.fence, `${second.fence} > ${first.fence}`);
    await second.release();
  });

  it('a late grant from an earlier attempt is not given back over a later attempt of the same owner that counted it', async () => {
    const padlock = redlock();
    const name = 'rl:late-undo';
    const keys = lockKeys('padlock', name);
    const holder = await padlock.mutex(name).acquire();
    const owner = 'o'.repeat(32);
    const protocol = new MutexProtocol(keys, 'mutex', redisInternals(padlock).clientId);
    const attempt = (): Promise<AcquireReply> => redisInternals(padlock).topology.send(protocol.attempt(owner, 30_000, 'try', 1_000));
    // The holder keeps 2, 3 and 4 only.
    for (const i of [0, 1]) await runCall(admins[i]!, protocol.release(holder.owner, 1));
    for (const i of [0, 1]) masters[i]!.pause();
    try {
      // Refused on 2, 3 and 4, the first attempt waits for 0 and 1 until their time-out.
      assert.equal((await attempt()).status, 'busy');
      // The holder lets go of master 4 only: a later attempt can win 0, 1 and 4.
      await runCall(admins[4]!, protocol.release(holder.owner, 1));
      const second = attempt();
      await delay(100);
      for (const i of [0, 1]) masters[i]!.resume();
      // 0 and 1 now run the first attempt (a grant that comes too late: given back) and the second (counted).
      const reply = await second;
      assert.equal(reply.status, 'acquired', `the second attempt won 0, 1 and 4: ${JSON.stringify(reply)}, held on ${JSON.stringify(await holdersOf(name, owner))}`);
      await delay(300);
      assert.deepEqual(await holdersOf(name, owner), [0, 1, 4], 'the late grant was not given back over the counted one');
    } finally {
      for (const i of [0, 1]) masters[i]!.resume();
    }
  });

  it('masters order their waiters by ticket, whatever order the calls came in, so their releases wake the same waiter', async () => {
    const name = 'rl:tickets';
    const keys = lockKeys('padlock', name);
    const protocol = new MutexProtocol(keys, 'mutex', 'ticketclient');
    const [holder, early, late, tied] = ['h', 'e', 'l', 'f'].map((c) => c.repeat(32)) as [string, string, string, string];
    const queue = (owner: string, ticket: number) => {
      const call = protocol.attempt(owner, 30_000, 'queue', 1_000, ticket).proposing?.(Date.now() * 1000);
      assert.ok(call !== undefined);
      return call;
    };
    // Master 0 hears early, then late; master 1 hears them the other way round; 'tied' has late's ticket.
    for (const [i, order] of [[0, [early, late, tied]], [1, [tied, late, early]]] as const) {
      await runCall(admins[i]!, protocol.attempt(holder, 30_000, 'try', 1_000));
      for (const owner of order) await runCall(admins[i]!, queue(owner, owner === early ? 1_000 : 2_000));
    }
    const orders = await Promise.all([0, 1].map((i) => queuedOwners(admins[i]!, keys.queue)));
    assert.deepEqual(orders[0], [early, tied, late], 'by ticket, ties by owner');
    assert.deepEqual(orders[1], orders[0], 'both masters alike');
    // Without a ticket (one server), arrival order stands.
    const plain = lockKeys('padlock', 'rl:no-tickets');
    const one = new MutexProtocol(plain, 'mutex', 'ticketclient');
    await runCall(admins[2]!, one.attempt(holder, 30_000, 'try', 1_000));
    for (const owner of [late, early]) await runCall(admins[2]!, one.attempt(owner, 30_000, 'queue', 1_000, 5));
    assert.deepEqual(await queuedOwners(admins[2]!, plain.queue), [late, early]);
    for (const i of [0, 1, 2]) await admins[i]!.del(keys.lock, keys.queue, plain.lock, plain.queue);
  });

  it("with tickets, a newcomer does not take a free lock ahead of another client's live waiter (no split vote with it); a woken waiter and its own client's newcomers do", async () => {
    const keys = lockKeys('padlock', 'rl:polite');
    const [a, b] = ['clientA', 'clientB'].map((client) => new MutexProtocol(keys, 'mutex', client)) as [MutexProtocol, MutexProtocol];
    const [holder, w1, w2, n, m, p, q] = ['h', '1', '2', 'n', 'm', 'p', 'q'].map((c) => c.repeat(32)) as [string, string, string, string, string, string, string];
    let ticket = 1_000;
    const attempt = (protocol: MutexProtocol, owner: string, mode: 'queue' | 'requeue'): Promise<AcquireReply> => {
      const call = protocol.attempt(owner, 30_000, mode, 1_000, ticket++).proposing?.(Date.now() * 1000);
      assert.ok(call !== undefined);
      return runCall(admins[0]!, call);
    };
    await runCall(admins[0]!, a.attempt(holder, 30_000, 'try', 1_000));
    for (const owner of [w1, w2]) assert.equal((await attempt(b, owner, 'queue')).status, 'busy');
    await runCall(admins[0]!, a.release(holder, 1)); // wakes w1 (out of the queue); w2 is the head now
    assert.equal((await attempt(a, n, 'queue')).status, 'busy', "client A's newcomer queues behind client B's live w2");
    assert.equal(await isHeld(admins[0]!, keys.lock), false, 'the lock stays free for the woken waiter');
    assert.equal((await attempt(b, w1, 'requeue')).status, 'acquired', 'the woken waiter takes it');
    await runCall(admins[0]!, b.release(w1, 1)); // wakes w2; n (client A) is the head now
    assert.equal((await attempt(b, m, 'queue')).status, 'busy', "client B's newcomer queues behind client A's live n");
    assert.equal((await attempt(a, p, 'queue')).status, 'acquired', "client A's newcomer passes its own client's n");
    await runCall(admins[0]!, a.release(p, 1));
    // Without a ticket (one server: no votes to split), a newcomer takes a free lock whoever waits.
    assert.equal((await runCall(admins[0]!, b.attempt(q, 30_000, 'queue', 1_000))).status, 'acquired');
    await admins[0]!.del(keys.lock, keys.queue);
  });

  it('an owner granted by a majority is taken out of the queues of the masters that queued it', async () => {
    const padlock = redlock();
    const name = 'rl:unqueue';
    const keys = lockKeys('padlock', name);
    const protocol = new MutexProtocol(keys, 'mutex', redisInternals(padlock).clientId);
    // A contender's partial grant on masters 3 and 4 only.
    const contender = 'c'.repeat(32);
    for (const i of [3, 4]) await runCall(admins[i]!, protocol.attempt(contender, 30_000, 'try', 1_000));
    const owner = 'q'.repeat(32);
    const reply = await redisInternals(padlock).topology.send(protocol.attempt(owner, 30_000, 'queue', 1_000, Date.now()));
    assert.equal(reply.status, 'acquired', 'granted by 0, 1 and 2');
    const queued = async (): Promise<string[][]> => Promise.all([3, 4].map((i) => queuedOwners(admins[i]!, keys.queue)));
    assert.ok(await eventually(async () => (await queued()).every((q) => q.length === 0)), `no entry left where it was queued: ${JSON.stringify(await queued())}`);
    await redisInternals(padlock).topology.run(protocol.release(owner, 1));
    for (const i of [3, 4]) await runCall(admins[i]!, protocol.release(contender, 1));
  });

  it('a woken waiter waits for a majority of the masters to run the release before it tries again (one attempt, not a wasted one)', async () => {
    const name = 'rl:wake-majority';
    const keys = lockKeys('padlock', name);
    const holder = await redlock().mutex(name).acquire();
    const protocol = new MutexProtocol(keys, 'mutex', 'unused');
    const waiting = redlock().mutex(name).acquire({ waitMs: 10_000 });
    assert.ok(await eventually(async () => (await Promise.all(admins.map((a) => queuedOwners(a, keys.queue)))).every((q) => q.length === 1)), 'the waiter is queued on every master');
    // Count the waiter's attempts on master 4 from here on (the test's own calls are EVALs, not EVALSHAs).
    await admins[4]!.config('SET', 'slowlog-log-slower-than', '0');
    await admins[4]!.slowlog('RESET');
    try {
      // The release runs on master 0 first; the other four run it a moment later (well inside WAKE_GATHER_MS).
      await runCall(admins[0]!, protocol.release(holder.owner, 1));
      await delay(2);
      await Promise.all([1, 2, 3, 4].map((i) => runCall(admins[i]!, protocol.release(holder.owner, 1))));
      const lease = await waiting;
      const log = (await admins[4]!.slowlog('GET', 1_000)) as [number, number, number, string[]][];
      // A master runs an attempt as enqueue.lua followed by the epoch check, one script.
      const attempts = log.filter(([, , , args]) => args[0]?.toLowerCase() === 'evalsha' && args[1] === checkedScript(enqueueScript).sha);
      assert.equal(attempts.length, 1, 'an attempt sent on master 0\'s wake-up alone would have found the lock still held on master 4, and been sent again');
      await lease.release();
    } finally {
      await admins[4]!.config('SET', 'slowlog-log-slower-than', '10000');
    }
    await holder.release().catch(() => undefined);
  });

  it('a hold whose renewals lose the majority is lost, and its holder is told', async () => {
    const padlock = redlock({ leaseMs: 3_000 });
    const lease: Lease = await padlock.mutex('rl:renew').acquire();
    await frozen([0, 1, 2], async () => {
      const reason = await lossOf(lease);
      assert.ok(reason instanceof LockLostError, `got ${String(reason)}`);
      assert.equal(lease.isHeld, false);
    });
    await lease.release().catch(() => undefined);
  });

  it('combines each call by the rule the call states: a call only one server can decide is refused before any master runs it', async () => {
    const padlock = redlock();
    const { topology } = redisInternals(padlock);
    const keys = semaphoreKeys('rlq', 'rl:one-server');
    // A write (a semaphore's limit stored): refused, on no master.
    const setPermits = new SemaphoreProtocol(keys, 2, redisInternals(padlock).clientId, false).setPermits(3);
    assert.equal(setPermits.quorum.name, 'one-server');
    await assert.rejects(topology.run(setPermits), (e: unknown) => e instanceof TypeError && /no rule for semaphore-set-permits\.lua/.test(e.message));
    // A reap waits for every master's answer, and each master answers its connection in order: a call
    // sent before it has run by the time it returns.
    assert.equal(await topology.run(MutexProtocol.reap(lockKeys('rlprobe', 'none'), { owner: 'x', clients: '*' }, [], false)), 'changed');
    assert.deepEqual(await Promise.all(admins.map((a) => a.keys('rlq:*'))), [[], [], [], [], []], 'no master ran it');
    // What the types refuse (checked by the compiler, never run): a call without a rule, a rule for another reply.
    const typeChecks = (): void => {
      // @ts-expect-error a call states its rule
      void topology.run({ script: inspectScript, keys: [lockKeys('rlq', 'x').lock], args: [], lock: 'x' });
      const inspect = new MutexProtocol(lockKeys('rlq', 'x'), 'mutex', 'client').inspect();
      // @ts-expect-error a release's rule combines release replies, not a read's
      void topology.run({ ...inspect, quorum: releaseQuorum });
    };
    void typeChecks;
  });

  it('refuses the fair mutex at creation, naming it and the topology; and bad master lists', () => {
    const padlock = redlock();
    assert.throws(() => padlock.fairMutex('rl:fair'), (e: unknown) => e instanceof PadlockOptionError && e.option === 'fairMutex' && /Redlock/.test(e.message));
    const one = connect(masters[0]!);
    const refused = (redis: unknown): string => {
      try {
        new Padlock({ redis } as PadlockOptions);
        return 'accepted';
      } catch (error) {
        assert.ok(error instanceof PadlockOptionError);
        return error.option;
      }
    };
    assert.equal(refused([one, connect(masters[1]!)]), 'redis', 'two masters are not enough');
    assert.equal(refused([one, one, connect(masters[1]!)]), 'redis', 'the same client twice');
    assert.equal(refused([one, connect(masters[1]!), {}]), 'redis[2]');
  });
});
