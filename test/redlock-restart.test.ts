/**
 * Redlock's restart rule on 5 real masters: a master that lost its data sits out — its grants do not
 * count — until the longest lease it might have granted has passed (docs/protocol.md, "A master that
 * lost its data"). Every Padlock of the first suite uses a 4 s lease, so the longest lease known is
 * 4 s; the second suite's (a first use, a quiet spell) use 1–2 s leases under prefixes of their own.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { lockKeys } from '../src/keys.js';
import { Lease, Padlock, QuorumError, RedisUnavailableError } from '../src/index.js';
import { monotonicNow } from '../src/clock.js';
import { acquireScript } from '../src/stores/redis/scripts/index.js';
import { checkedScript, epochScript } from '../src/stores/redis/topology/master-epoch.js';
import { commandCalls, connect, delay, eventually, useMasters } from './harness/redis.js';
import { holdsOf } from './harness/lock-state.js';

const LEASE_MS = 4_000;
const { masters, admins, padlocks } = useMasters(5);

/** A Padlock over all five masters (4 s lease), each through a connected client of its own. */
async function redlock(): Promise<Padlock> {
  const clients = masters.map((m) => connect(m));
  await Promise.all(clients.map((c) => c.ping()));
  const padlock = new Padlock({ redis: clients, leaseMs: LEASE_MS });
  padlocks.push(padlock);
  return padlock;
}

/** Tries `name` through `other` every 100 ms until shortly before `leaseEnds`: never granted. */
async function assertNoSecondHolder(other: Padlock, name: string, leaseEnds: number): Promise<void> {
  let tries = 0;
  while (monotonicNow() < leaseEnds - 200) {
    assert.equal(await other.mutex(name).tryAcquire(), null, 'a second holder got the lock while the first lease lives');
    tries++;
    await delay(100);
  }
  assert.ok(tries >= 5, `tried ${tries} times`);
}

/** Kills the masters at `indexes` and starts them again, empty (no persistence). */
async function restartEmpty(indexes: readonly number[]): Promise<void> {
  await Promise.all(indexes.map((i) => masters[i]!.kill()));
  await Promise.all(indexes.map((i) => masters[i]!.restart()));
}

describe('Redlock: masters that lost their data', () => {
  it('a first use of fresh masters is served at once (no master had an epoch: nothing to sit out)', async () => {
    const lease = await (await redlock()).mutex('rlr:first').tryAcquire();
    assert.ok(lease !== null, 'the very first attempt on new masters is granted');
    await lease.release();
  });

  it('an attempt runs one script on each master, its epoch check inside; a check that changes nothing writes nothing', async () => {
    const padlock = await redlock();
    const warm = await padlock.mutex('rlr:cost:warm').acquire();
    await warm.release();
    const writes = (): Promise<number[]> => Promise.all(admins.map(async (a) => (await commandCalls(a, 'hset')) + (await commandCalls(a, 'pexpire'))));
    const before = await writes();
    await Promise.all(admins.map(async (a) => {
      await a.config('SET', 'slowlog-log-slower-than', '0');
      await a.slowlog('RESET');
    }));
    try {
      const lease = await padlock.mutex('rlr:cost').acquire();
      type Entry = [number, number, number, string[]];
      const shas = async (): Promise<string[][]> => Promise.all(admins.map(async (a) => ((await a.slowlog('GET', 1_000)) as Entry[]).flatMap(([, , , args]) => (args[0]?.toLowerCase() === 'evalsha' ? [String(args[1])] : []))));
      const attempt = checkedScript(acquireScript).sha;
      // The acquire returns once a majority granted: the other masters' answers may still be on their way.
      assert.ok(await eventually(async () => (await shas()).every((s) => s.includes(attempt))), 'every master ran the attempt with its check');
      for (const [i, sent] of (await shas()).entries()) {
        assert.equal(sent.filter((sha) => sha === attempt).length, 1, `master ${i}: one attempt`);
        assert.equal(sent.filter((sha) => sha === epochScript.sha || sha === acquireScript.sha).length, 0, `master ${i}: no check (or attempt) of its own`);
      }
      await lease.release();
    } finally {
      await Promise.all(admins.map((a) => a.config('SET', 'slowlog-log-slower-than', '10000')));
    }
    assert.deepEqual(await writes(), before, 'no master wrote its marker (HSET, PEXPIRE): nothing had changed');
  });

  it('a check over the connection an earlier check read the run id on costs no INFO', async () => {
    const padlock = await redlock();
    const warm = await padlock.mutex('rlr:info:warm').acquire();
    await warm.release();
    // Every master answers the warm attempt's check (the round may return before the last does).
    const infos = (): Promise<number[]> => Promise.all(admins.map((a) => commandCalls(a, 'info')));
    await delay(50);
    const before = await infos();
    const lease = await padlock.mutex('rlr:info').acquire();
    await lease.release();
    await delay(50);
    // Each reading of the counts is an INFO itself, counted by the next one.
    assert.deepEqual(await infos(), before.map((n) => n + 1), 'no master ran INFO for the warm check');
  });

  it('an attempt in flight while 3 of 5 restart from a file (their old markers, not the hold) does not count there: their old run id, named over the old connection, is not taken at its word over the new one', async () => {
    const name = 'rlr:in-flight';
    const other = await redlock();
    // `other` has read every master's run id over its connections.
    const warm = await other.mutex(`${name}:warm`).acquire();
    await warm.release();
    // On file: each master's marker, and no hold of `name`.
    await Promise.all([0, 1, 2].map((i) => admins[i]!.save()));
    const holder = await (await redlock()).mutex(name).acquire({ leaseMs: LEASE_MS, autoExtend: false });
    const leaseEnds = monotonicNow() + LEASE_MS;
    [0, 1, 2].forEach((i) => masters[i]!.pause());
    // Sent over the old connections, to frozen masters: the client sends it again once it reconnects.
    const attempt = other.mutex(name).tryAcquire();
    await delay(50);
    // Killed while frozen (the harness's kill() would let them run first), then started again: each
    // loads the file, the old marker and no hold.
    for (const i of [0, 1, 2]) process.kill(masters[i]!.pid, 'SIGKILL');
    await Promise.all([0, 1, 2].map((i) => masters[i]!.restart()));
    // Loaded: the file goes, so that the tests after this one restart these masters empty.
    for (const i of [0, 1, 2]) rmSync(join(masters[i]!.dir, 'dump.rdb'), { force: true });
    // Not granted: the restarted masters' answers came over new connections, so they count as none.
    const outcome = await attempt.catch((error: unknown) => error);
    assert.ok(!(outcome instanceof Lease), 'the restarted masters granted, their grants counted, and a second holder got the lock');
    assert.ok(outcome === null || outcome instanceof QuorumError, `refused, or no majority answered: ${String(outcome)}`);
    assert.ok(holder.isHeld);
    const resent = await Promise.all([0, 1, 2].map((i) => commandCalls(admins[i]!, 'eval')));
    assert.ok(resent.some((n) => n > 0), `the attempt reached a restarted master (EVAL after its NOSCRIPT: ${resent.join(', ')})`);
    await assertNoSecondHolder(other, name, leaseEnds);
  });

  it('3 of 5 restarted empty while a lock with 4 s left is held: no second holder while that lease lives; served again afterwards', async () => {
    const name = 'rlr:classic';
    const holder = await (await redlock()).mutex(name).acquire({ leaseMs: LEASE_MS, autoExtend: false });
    const leaseEnds = monotonicNow() + LEASE_MS;
    await restartEmpty([0, 1, 2]);
    const other = await redlock();
    // A waiter too: it must not be served before the holder's lease ran out.
    const waiting = (await redlock()).mutex(name).acquire({ waitMs: 30_000 }).then((lease) => ({ lease, heldBefore: holder.isHeld }));
    await assertNoSecondHolder(other, name, leaseEnds);
    const { lease, heldBefore } = await waiting;
    assert.equal(heldBefore, false, 'the waiter was served only once the first lease had run out');
    assert.ok(lease.fence > holder.fence, 'with a greater fence');
    const key = lockKeys('padlock', name).lock;
    // Each restarted master's sit-out ends a few ms apart (each restarted at its own moment): the
    // waiter may have been served by a majority one of them was not yet in, so its grant there was
    // given back. Later attempts are served at once, and soon every restarted master counts again.
    await lease.release();
    const again = await other.mutex(name).tryAcquire();
    assert.ok(again !== null);
    await again.release();
    assert.ok(
      await eventually(async () => {
        const next = await other.mutex(name).tryAcquire();
        if (next === null) return false;
        const held = await Promise.all([0, 1, 2].map((i) => holdsOf(admins[i]!, key, next.owner)));
        await next.release();
        return held.every((n) => n > 0);
      }, 5_000),
      'the restarted masters count again',
    );
  });

  it('3 of 5 replaced by a dataset that carries their old epoch marker but not the hold (a promoted replica that missed the grant): they sit out all the same', async () => {
    const name = 'rlr:promoted';
    const marker = 'padlock:redlock-epoch';
    const holder = await (await redlock()).mutex(name).acquire({ leaseMs: LEASE_MS, autoExtend: false });
    const leaseEnds = monotonicNow() + LEASE_MS;
    // What a replica would have had: every key older than the grant, the marker among them.
    const copies = await Promise.all([0, 1, 2].map((i) => admins[i]!.hgetall(marker)));
    assert.ok(copies.every((c) => Object.keys(c).length > 0), 'every master has a marker');
    await restartEmpty([0, 1, 2]);
    await Promise.all([0, 1, 2].map((i) => admins[i]!.hset(marker, copies[i]!)));
    const other = await redlock();
    await assertNoSecondHolder(other, name, leaseEnds);
    const lease = await other.mutex(name).acquire({ waitMs: 30_000 });
    assert.equal(holder.isHeld, false);
    await lease.release();
  });
});

describe('Redlock: a first use, and a quiet spell, with a minority of masters down or slow', () => {
  /** A Padlock over all five masters, connected, under its own key prefix (so no earlier test's markers). */
  async function onPrefix(prefix: string, leaseMs: number): Promise<Padlock> {
    const clients = masters.map((m) => connect(m));
    await Promise.all(clients.map((c) => c.ping()));
    const padlock = new Padlock({ redis: clients, leaseMs, prefix });
    padlocks.push(padlock);
    return padlock;
  }

  /** `acquire({ waitMs: 10 s })` of `name`, released at once; how long the grant took (ms). */
  async function timedGrant(padlock: Padlock, name: string): Promise<number> {
    const started = monotonicNow();
    const lease = await padlock.mutex(name).acquire({ waitMs: 10_000 });
    const took = monotonicNow() - started;
    await lease.release();
    return took;
  }

  it('a first use with 1 of 5 masters down is served within 1 s (the four that answer have no marker: nothing they granted lives)', async () => {
    // A 2 s lease: the down master's calls time out after 500 ms.
    const padlock = await onPrefix('rla-down', 2_000);
    await masters[4]!.kill();
    try {
      const took = await timedGrant(padlock, 'rla:down');
      assert.ok(took < 1_000, `granted after ${Math.round(took)} ms`);
    } finally {
      await masters[4]!.restart();
    }
  });

  it('a first use where 1 of 5 masters answers 300 ms late (SIGSTOP) is served within 1 s; the late grant is given back', async () => {
    // A 1 s lease: the frozen master's calls time out after 250 ms, before it answers.
    const padlock = await onPrefix('rla-late', 1_000);
    masters[4]!.pause();
    const thawed = delay(300).then(() => masters[4]!.resume());
    try {
      const started = monotonicNow();
      const lease = await padlock.mutex('rla:late').acquire({ waitMs: 10_000 });
      const took = monotonicNow() - started;
      assert.ok(took < 1_000, `granted after ${Math.round(took)} ms`);
      await thawed;
      const key = lockKeys('rla-late', 'rla:late').lock;
      assert.ok(await eventually(async () => (await holdsOf(admins[4]!, key, lease.owner)) === 0), 'the late master\'s grant was given back');
      await lease.release();
    } finally {
      await thawed;
    }
  });

  it('after the markers ran out idle, with 1 of 5 masters down, the next grant comes within 1 s, from the same Padlock and from a new one', { timeout: 30_000 }, async () => {
    // A 2 s lease: markers live max(10 s, 2 × 2 s) after the last round.
    const prefix = 'rla-quiet';
    const padlock = await onPrefix(prefix, 2_000);
    const fresh = await onPrefix(prefix, 2_000);
    for (const name of ['rla:quiet:1', 'rla:quiet:2', 'rla:quiet:3']) await timedGrant(padlock, name);
    await delay(10_500);
    const marker = `${prefix}:redlock-epoch`;
    assert.deepEqual(await Promise.all(admins.map((a) => a.pttl(marker))), [-2, -2, -2, -2, -2], 'every marker ran out');
    await masters[4]!.kill();
    try {
      const [same, other] = await Promise.all([timedGrant(padlock, 'rla:quiet:1'), timedGrant(fresh, 'rla:quiet:4')]);
      assert.ok(same < 1_000, `the same Padlock was granted after ${Math.round(same)} ms`);
      assert.ok(other < 1_000, `a new Padlock was granted after ${Math.round(other)} ms`);
    } finally {
      await masters[4]!.restart();
    }
  });

  it('3 of 5 restarted empty while a lock is held, a 4th down, the 5th answering 200 ms late: that one marker, awaited within the time-out, rules the first use out (no second holder while the lease lives)', async () => {
    const prefix = 'rla-majority';
    const name = 'rla:majority';
    // A 4 s hold (the restarts and the first attempt take about a second); the other Padlock's 2 s
    // lease gives each master 500 ms to answer.
    await (await onPrefix(prefix, LEASE_MS)).mutex(name).acquire({ autoExtend: false });
    const leaseEnds = monotonicNow() + LEASE_MS;
    const other = await onPrefix(prefix, 2_000);
    await restartEmpty([0, 1, 2]);
    await masters[3]!.kill();
    try {
      // The three restarted (bare) masters answer first: a majority, but not every master that answers in time.
      masters[4]!.pause();
      const thawed = delay(200).then(() => masters[4]!.resume());
      const first = await other.mutex(name).tryAcquire().catch((error: unknown) => error).finally(() => thawed);
      assert.ok(!(first instanceof Lease), 'a first use was decided before the master with a marker answered: a second holder');
      // On a loaded machine the restarted masters may answer past their time-out: no majority, typed.
      assert.ok(first === null || first instanceof QuorumError || first instanceof RedisUnavailableError, `refused, or no majority answered: ${String(first)}`);
      await assertNoSecondHolder(other, name, leaseEnds);
    } finally {
      await masters[3]!.restart();
    }
  });
});
