/**
 * Bad input and odd input against a real redis-server, property-based: refused calls leave Redis's
 * command counters untouched, odd names round-trip and keep one lock in one Cluster slot, random
 * call sequences agree with a small model, a foreign owner token changes nothing, and keys of the
 * wrong type give typed errors instead of hangs or TypeErrors.
 */
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { Redis } from 'ioredis';
import type { RedisServer } from '../../src/devserver/redis-server.js';
import {
  Lease,
  LockNotHeldError,
  LockTimeoutError,
  Padlock,
  PadlockError,
  PadlockOptionError,
  RedisCommandError,
  type AcquireOptions,
} from '../../src/index.js';
import { lockKeys, type LockKeys } from '../../src/keys.js';
import { MutexProtocol } from '../../src/stores/redis/kinds/mutex-protocol.js';
import { connect, padlockOn, startServer } from '../harness/redis.js';
import {
  MAX_MS,
  anyValue,
  commandStats,
  describeOutcome,
  invalidNameString,
  isValidMs,
  keySlot,
  nearMs,
  nearOwner,
  outcomeOf,
  runs,
  validName,
  validOwner,
} from './support.js';
import { readLock } from '../harness/lock-state.js';
import { internals, redisInternals } from '../../src/testing.js';

let server: RedisServer;
let admin: Redis;
before(async () => {
  server = await startServer();
  admin = connect(server);
});

/** Every key and channel of a lock. */
function keysOf(keys: LockKeys): string[] {
  return Object.entries(keys).flatMap(([field, value]) => (field !== 'name' && typeof value === 'string' ? [value] : []));
}

/** The hold as Redis keeps it (owner, count, fence; none when free), without the request log (which records applied requests). */
async function lockState(keys: LockKeys): Promise<{ hold: { owner: string; count: number; fence: number } | null; ttlSet: boolean }> {
  const state = await readLock(admin, keys.lock);
  const hold = state === undefined || state.count === 0 ? null : { owner: state.owner, count: state.count, fence: state.fence };
  return { hold, ttlSet: (await admin.pttl(keys.lock)) !== -1 };
}

let lockCounter = 0;
/** A lock name no other case uses. */
function freshName(label: string): string {
  return `${label}:${process.pid}:${lockCounter++}`;
}

describe('properties against Redis: refused input sends no command', () => {
  it('refused names, options and extend durations leave INFO commandstats unchanged', { timeout: 60_000 }, async () => {
    // A server of its own, so that nothing else moves its counters.
    const quiet = await startServer();
    const quietAdmin = connect(quiet);
    // A liveness key of an hour: refreshed every 12 minutes, so never while the property runs.
    const padlock = padlockOn(quiet, { livenessMs: 3_600_000 });
    const lock = padlock.mutex('held');
    // A fixed lease of 10 minutes: the watchdog sends nothing while the property runs.
    const lease = await lock.acquire({ leaseMs: 600_000 });
    // The Padlock's first hold subscribes it to force-release notices: done before counting.
    await redisInternals(padlock).listeningForForce;
    const badOptions = fc.oneof(
      fc.record({ waitMs: nearMs(0).filter((v) => !isValidMs(v, 0, true)) }),
      fc.record({ leaseMs: nearMs(10).filter((v) => !isValidMs(v, 10, false)) }),
      fc.record({ owner: nearOwner() }),
      fc.record({ autoExtend: fc.constantFrom(0, 'yes', {}) }),
      fc.record({ signal: fc.constantFrom({}, 'abort') }),
      fc.record({ timeout: anyValue() }),
    );
    const badCall = fc.oneof(
      invalidNameString().map((name) => () => padlock.mutex(name).acquire()),
      badOptions.map((options) => () => padlock.mutex('other').acquire(options as AcquireOptions)),
      badOptions.map((options) => () => lock.tryAcquire(options as AcquireOptions)),
      badOptions.map((options) => () => padlock.withLock('other', () => 1, options as AcquireOptions)),
      nearMs(10)
        .filter((ms) => !isValidMs(ms, 10, false))
        .map((ms) => () => lease.extend(ms)),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(badCall, { minLength: 1, maxLength: 5 }), async (calls) => {
        const before = await commandStats(quietAdmin);
        for (const call of calls) {
          const outcome = await outcomeOf(call, 1_000);
          assert.ok(outcome.kind === 'error' && outcome.error instanceof PadlockOptionError, describeOutcome(outcome));
        }
        assert.deepEqual(await commandStats(quietAdmin), before, 'no command reached Redis');
      }),
      { numRuns: runs(150) },
    );
    assert.equal(lease.isHeld, true);
    await lease.release();
  });
});

describe('properties against Redis: names', () => {
  it('the CRC16 slot computed by the tests agrees with CLUSTER KEYSLOT', { timeout: 60_000 }, async () => {
    const cluster = await startServer({ args: ['--cluster-enabled', 'yes'] });
    const client = connect(cluster);
    const key = fc.oneof(validName(), fc.string({ unit: fc.constantFrom('{', '}', 'a', 'é', '🔒'), maxLength: 12 }));
    await fc.assert(
      fc.asyncProperty(key, fc.constantFrom('padlock', 'a:b'), async (name, prefix) => {
        for (const k of [name, ...keysOf(lockKeys(prefix, name))]) {
          assert.equal(keySlot(k), Number(await client.cluster('KEYSLOT', k)), JSON.stringify(k));
        }
      }),
      { numRuns: runs(200) },
    );
  });

  it('names with braces, spaces, unicode and at the length limit round-trip, one lock in one slot', { timeout: 60_000 }, async () => {
    const a = padlockOn(server);
    const b = padlockOn(server);
    await fc.assert(
      fc.asyncProperty(validName(), fc.constantFrom<'mutex' | 'fairMutex'>('mutex', 'fairMutex'), async (name, kind) => {
        const keys = lockKeys('padlock', name);
        const slot = keySlot(keys.lock);
        for (const key of keysOf(keys)) assert.equal(keySlot(key), slot, `${key} is in the lock's slot`);
        await a[kind](name).forceRelease();
        const lease = await a[kind](name).acquire({ waitMs: 0 });
        assert.equal(lease.name, name);
        const stored = await readLock(admin, keys.lock);
        assert.deepEqual(stored && { fence: stored.fence, owner: stored.owner, count: stored.count }, { fence: lease.fence, owner: lease.owner, count: 1 }, 'the hold and its fence are stored under the documented key');
        assert.equal(await b[kind](name).isLocked(), true);
        assert.equal(await b[kind](name).tryAcquire(), null, 'another owner is excluded');
        await lease.release();
        assert.equal(await b[kind](name).isLocked(), false);
        const next = await b[kind](name).tryAcquire();
        assert.ok(next !== null && next.fence > lease.fence);
        await next.release();
      }),
      { numRuns: runs(150) },
    );
  });
});

// ---------------------------------------------------------------------------------------------
// Call sequences against a model.

/** What the model knows of one lock. */
interface Model {
  /** The owner holding the lock and its hold count in Redis, or null when free. */
  holder: { owner: string; fence: number; count: number } | null;
  /** Highest fence handed out so far. */
  lastFence: number;
  /** Leases handed out, in order; `released` once release() was called on it (successfully or not). */
  leases: { owner: string; fence: number; release: 'ok' | 'not-held' | undefined; lease: Lease }[];
}

/** The system under test: two Padlocks (two processes, in effect) on one lock. */
interface Real {
  readonly kind: 'mutex' | 'fairMutex';
  readonly name: string;
  readonly keys: LockKeys;
  readonly padlocks: readonly [Padlock, Padlock];
}

type Cmd = fc.AsyncCommand<Model, Real>;

/** Commands run by the model test (to report, and to show that the sequences are not trivial). */
let commandsRun = 0;

async function checkRedis(m: Model, r: Real): Promise<void> {
  commandsRun++;
  const { hold } = await lockState(r.keys);
  if (m.holder === null) {
    assert.equal(hold, null, 'the lock is free in Redis');
  } else {
    assert.deepEqual(hold, m.holder, 'Redis holds what the model holds');
    assert.ok((await admin.pttl(r.keys.lock)) > 0, 'a held lock always has a lease');
  }
  for (const entry of m.leases) if (entry.release !== undefined) assert.equal(entry.lease.isHeld, false, 'a released lease is not held');
}

/** A fresh acquisition by `tryAcquire` or `acquire({ waitMs })`. */
class AcquireCmd implements Cmd {
  constructor(readonly actor: 0 | 1, readonly method: 'tryAcquire' | 'acquire', readonly waitMs: number) {}
  check = (): boolean => true;
  async run(m: Model, r: Real): Promise<void> {
    const lock = r.padlocks[this.actor][r.kind](r.name);
    const outcome = await outcomeOf(() => lock[this.method]({ waitMs: this.waitMs }), 2_000);
    if (m.holder === null) {
      assert.ok(outcome.kind === 'value' && outcome.value instanceof Lease, `a free lock is granted: ${describeOutcome(outcome)}`);
      const lease = outcome.value;
      assert.ok(lease.fence > m.lastFence, `fences increase: ${lease.fence} after ${m.lastFence}`);
      assert.equal(lease.holdCount, 1);
      assert.match(lease.owner, /^[0-9a-f]{32}$/);
      assert.ok(m.leases.every((l) => l.owner !== lease.owner), 'a fresh acquisition has a new owner');
      m.holder = { owner: lease.owner, fence: lease.fence, count: 1 };
      m.lastFence = lease.fence;
      m.leases.push({ owner: lease.owner, fence: lease.fence, release: undefined, lease });
    } else if (this.method === 'tryAcquire') {
      assert.ok(outcome.kind === 'value' && outcome.value === null, `a held lock is refused: ${describeOutcome(outcome)}`);
    } else {
      assert.ok(outcome.kind === 'error' && outcome.error instanceof LockTimeoutError, `a held lock times out: ${describeOutcome(outcome)}`);
    }
    await checkRedis(m, r);
  }
  toString = (): string => `${this.method}(p${this.actor}, waitMs ${this.waitMs})`;
}

/** Re-entry by owner token (of a lease handed out earlier, or a token nobody holds). */
class ReenterCmd implements Cmd {
  constructor(readonly actor: 0 | 1, readonly leaseIndex: number, readonly foreignOwner: string | undefined) {}
  check = (m: Readonly<Model>): boolean => this.foreignOwner !== undefined || m.leases.length > 0;
  async run(m: Model, r: Real): Promise<void> {
    const owner = this.foreignOwner ?? m.leases[this.leaseIndex % m.leases.length]?.owner ?? '';
    const before = await admin.get(r.keys.lock);
    const outcome = await outcomeOf(() => r.padlocks[this.actor][r.kind](r.name).acquire({ owner, waitMs: 0 }), 2_000);
    if (m.holder !== null && m.holder.owner === owner) {
      assert.ok(outcome.kind === 'value' && outcome.value instanceof Lease, `the holder re-enters: ${describeOutcome(outcome)}`);
      const lease = outcome.value;
      m.holder.count++;
      assert.equal(lease.owner, owner);
      assert.equal(lease.fence, m.holder.fence, 'a re-entry keeps the fence');
      assert.equal(lease.holdCount, m.holder.count);
      m.leases.push({ owner, fence: lease.fence, release: undefined, lease });
    } else {
      assert.ok(outcome.kind === 'error' && outcome.error instanceof LockNotHeldError, `a non-holder cannot re-enter: ${describeOutcome(outcome)}`);
      assert.equal(await admin.get(r.keys.lock), before, 'a refused re-entry changes nothing, not even the request log');
    }
    await checkRedis(m, r);
  }
  toString = (): string => `reenter(p${this.actor}, ${this.foreignOwner === undefined ? `lease ${this.leaseIndex}` : 'foreign owner'})`;
}

class ReleaseCmd implements Cmd {
  constructor(readonly leaseIndex: number) {}
  check = (m: Readonly<Model>): boolean => m.leases.length > 0;
  async run(m: Model, r: Real): Promise<void> {
    const entry = m.leases[this.leaseIndex % m.leases.length];
    assert.ok(entry !== undefined);
    const outcome = await outcomeOf(() => entry.lease.release(), 2_000);
    const got = outcome.kind === 'value' ? 'ok' : outcome.kind === 'error' && outcome.error instanceof LockNotHeldError ? 'not-held' : describeOutcome(outcome);
    if (entry.release !== undefined) {
      assert.equal(got, entry.release, 'a second release gives the first one\'s answer and does nothing');
    } else if (m.holder !== null && m.holder.owner === entry.owner) {
      assert.equal(got, 'ok');
      m.holder.count--;
      if (m.holder.count === 0) m.holder = null;
      entry.release = 'ok';
    } else {
      assert.equal(got, 'not-held', 'releasing a lock the owner no longer holds is refused');
      entry.release = 'not-held';
    }
    await checkRedis(m, r);
  }
  toString = (): string => `release(lease ${this.leaseIndex})`;
}

class ExtendCmd implements Cmd {
  constructor(readonly leaseIndex: number, readonly ms: number) {}
  check = (m: Readonly<Model>): boolean => m.leases.length > 0;
  async run(m: Model, r: Real): Promise<void> {
    const entry = m.leases[this.leaseIndex % m.leases.length];
    assert.ok(entry !== undefined);
    const pttlBefore = await admin.pttl(r.keys.lock);
    const outcome = await outcomeOf(() => entry.lease.extend(this.ms), 2_000);
    if (entry.release === undefined && m.holder !== null && m.holder.owner === entry.owner) {
      assert.equal(outcome.kind, 'value', describeOutcome(outcome));
      const pttl = await admin.pttl(r.keys.lock);
      assert.ok(pttl >= Math.min(this.ms, pttlBefore) - 100, `extend never shortens: ${pttl} ms after ${pttlBefore} ms, asked ${this.ms}`);
      assert.ok(pttl >= this.ms - 100, `extend(${this.ms}) left ${pttl} ms`);
    } else {
      assert.ok(outcome.kind === 'error' && outcome.error instanceof LockNotHeldError, `extend by a non-holder: ${describeOutcome(outcome)}`);
    }
    await checkRedis(m, r);
  }
  toString = (): string => `extend(lease ${this.leaseIndex}, ${this.ms})`;
}

class InspectCmd implements Cmd {
  constructor(readonly actor: 0 | 1) {}
  check = (): boolean => true;
  async run(m: Model, r: Real): Promise<void> {
    assert.equal(await r.padlocks[this.actor][r.kind](r.name).isLocked(), m.holder !== null);
    await checkRedis(m, r);
  }
  toString = (): string => `isLocked(p${this.actor})`;
}

class ForceReleaseCmd implements Cmd {
  constructor(readonly actor: 0 | 1) {}
  check = (): boolean => true;
  async run(m: Model, r: Real): Promise<void> {
    assert.equal(await r.padlocks[this.actor][r.kind](r.name).forceRelease(), m.holder !== null);
    m.holder = null;
    await checkRedis(m, r);
  }
  toString = (): string => `forceRelease(p${this.actor})`;
}

describe('properties against Redis: call sequences', () => {
  it('random acquire/tryAcquire/re-enter/release/extend/forceRelease sequences agree with the model (mutex and fair mutex)', { timeout: 90_000 }, async (t) => {
    const padlocks = [padlockOn(server), padlockOn(server)] as const;
    const actor = fc.constantFrom<0 | 1>(0, 1);
    const index = fc.nat(20);
    const commands = [
      fc.tuple(actor, fc.constantFrom<'tryAcquire' | 'acquire'>('tryAcquire', 'acquire'), fc.constant(0)).map(([a, method, waitMs]) => new AcquireCmd(a, method, waitMs)),
      fc.tuple(actor, index).map(([a, i]) => new ReenterCmd(a, i, undefined)),
      fc.tuple(actor, validOwner()).map(([a, owner]) => new ReenterCmd(a, 0, owner)),
      index.map((i) => new ReleaseCmd(i)),
      index.map((i) => new ReleaseCmd(i)),
      fc.tuple(index, fc.oneof(fc.integer({ min: 10, max: 1_000 }), fc.integer({ min: 1_000, max: 600_000 }))).map(([i, ms]) => new ExtendCmd(i, ms)),
      actor.map((a) => new InspectCmd(a)),
      actor.map((a) => new ForceReleaseCmd(a)),
    ];
    await fc.assert(
      fc.asyncProperty(fc.constantFrom<Real['kind']>('mutex', 'fairMutex'), fc.commands(commands, { maxCommands: 40, size: 'large' }), async (kind, cmds) => {
        const name = freshName('model');
        const model: Model = { holder: null, lastFence: 0, leases: [] };
        const real: Real = { kind, name, keys: lockKeys('padlock', name), padlocks };
        try {
          await fc.asyncModelRun(() => ({ model, real }), cmds);
        } finally {
          // Leave nothing behind: the next case starts from an empty runtime.
          await Promise.allSettled(model.leases.map((l) => l.lease.release()));
          await padlocks[0].mutex(name).forceRelease();
        }
      }),
      { numRuns: runs(100) },
    );
    for (const p of padlocks) assert.equal(internals(p).runtime.holds.size, 0, 'every hold was released or given up');
    t.diagnostic(`${commandsRun} commands run in ${runs(100)} sequences`);
    assert.ok(commandsRun > runs(100) * 5, `the sequences ran ${commandsRun} commands`);
  });
});

// ---------------------------------------------------------------------------------------------

describe('properties against Redis: a foreign owner token is a no-op', () => {
  it('release, renew and re-entry scripts with a token that holds nothing change nothing', { timeout: 60_000 }, async () => {
    const p = padlockOn(server);
    await fc.assert(
      fc.asyncProperty(validOwner(), fc.nat(3), fc.integer({ min: 10, max: MAX_MS }), async (stranger, reentries, ms) => {
        const name = freshName('stranger');
        const keys = lockKeys('padlock', name);
        const held = await p.mutex(name).acquire({ leaseMs: 60_000 });
        const leases = [held];
        for (let i = 0; i < reentries; i++) leases.push(await p.mutex(name).acquire({ owner: held.owner }));
        const before = await admin.get(keys.lock);
        const pttl = await admin.pttl(keys.lock);
        await assert.rejects(p.mutex(name).acquire({ owner: stranger, waitMs: 0 }), LockNotHeldError);
        const { topology } = redisInternals(p);
        const protocol = new MutexProtocol(keys, 'mutex', redisInternals(p).clientId);
        assert.deepEqual(await topology.run(protocol.release(stranger, 1)), { status: 'not-held' });
        assert.deepEqual(await topology.run(MutexProtocol.renew([{ keys, owner: stranger, leaseMs: ms }])), [0]);
        assert.equal(await admin.get(keys.lock), before, 'the holder keeps its holds and fence, and not even the request log moved');
        assert.ok((await admin.pttl(keys.lock)) <= pttl, 'the lease was not lengthened');
        for (const lease of leases.reverse()) await lease.release();
        assert.equal(await p.mutex(name).isLocked(), false);
      }),
      { numRuns: runs(100) },
    );
  });
});

// ---------------------------------------------------------------------------------------------
// Keys of the wrong type.

/** Values a lock key can hold that padlock did not write: other types, and a string of another shape. */
const WRONG_VALUES: Record<string, (key: string) => Promise<unknown>> = {
  string: (key) => admin.set(key, 'str'),
  hash: (key) => admin.hset(key, 'f', 'v'),
  list: (key) => admin.rpush(key, 'a'),
  set: (key) => admin.sadd(key, 'a'),
  zset: (key) => admin.zadd(key, 1, 'a'),
  stream: (key) => admin.xadd(key, '*', 'f', 'v'),
};

/** A public operation on a lock whose key may hold the wrong type. */
type Op = 'acquire' | 'acquire(wait forever)' | 'tryAcquire' | 'withLock' | 'isLocked' | 'forceRelease';
const OPS: readonly Op[] = ['acquire', 'acquire(wait forever)', 'tryAcquire', 'withLock', 'isLocked', 'forceRelease'];

function runOp(p: Padlock, name: string, op: Op): Promise<unknown> {
  const lock = p.mutex(name);
  switch (op) {
    case 'acquire':
      return lock.acquire({ waitMs: 100 });
    case 'acquire(wait forever)':
      return lock.acquire();
    case 'tryAcquire':
      return lock.tryAcquire();
    case 'withLock':
      return lock.withLock(() => 'ran');
    case 'isLocked':
      return lock.isLocked();
    case 'forceRelease':
      return lock.forceRelease();
  }
}

describe('properties against Redis: keys of the wrong type', () => {
  it('a lock key holding what padlock did not write gives RedisCommandError (never a hang or a TypeError), and writes nothing', { timeout: 60_000 }, async () => {
    const p = padlockOn(server);
    const cases = fc.record({ type: fc.constantFrom(...Object.keys(WRONG_VALUES)), op: fc.constantFrom(...OPS) });
    await fc.assert(
      fc.asyncProperty(cases, async ({ type, op }) => {
        const name = freshName(`wrongtype-${type}`);
        const keys = lockKeys('padlock', name);
        const make = WRONG_VALUES[type];
        assert.ok(make !== undefined);
        await make(keys.lock);
        const typeBefore = await admin.type(keys.lock);
        const outcome = await outcomeOf(() => runOp(p, name, op), 3_000);
        assert.equal(outcome.kind, 'error', `${op} on a ${type} lock key: ${describeOutcome(outcome)}`);
        if (outcome.kind !== 'error') return;
        assert.ok(outcome.error instanceof RedisCommandError, `${op} on a ${type} lock key: ${describeOutcome(outcome)}`);
        assert.equal(outcome.error.lock, name);
        assert.match(outcome.error.message, /WRONGTYPE.*docs\/protocol\.md/);
        assert.ok(outcome.error.cause instanceof Error, 'the Redis error is the cause');
        assert.equal(await admin.type(keys.lock), typeBefore, 'the foreign key was left as it was');
        assert.equal(await admin.exists(keys.queue), 0, 'nothing was queued');
        await admin.del(keys.lock);
      }),
      { numRuns: runs(120) },
    );
    assert.equal(internals(p).runtime.holds.size, 0);
  });

  it('a key that changes type under a holder makes release and extend fail typed', { timeout: 30_000 }, async () => {
    const p = padlockOn(server);
    for (const make of Object.values(WRONG_VALUES)) {
      const name = freshName('swapped');
      const keys = lockKeys('padlock', name);
      const lease = await p.mutex(name).acquire({ leaseMs: 60_000 });
      await admin.del(keys.lock);
      await make(keys.lock);
      for (const call of [() => lease.extend(1_000), () => lease.release()]) {
        const outcome = await outcomeOf(call, 3_000);
        assert.ok(outcome.kind === 'error' && outcome.error instanceof RedisCommandError && /WRONGTYPE/.test(outcome.error.message), describeOutcome(outcome));
      }
      await admin.del(keys.lock);
    }
  });

  it('a lock key with a corrupt value gives a PadlockError, never a bare TypeError', { timeout: 30_000 }, async () => {
    const p = padlockOn(server);
    const owner = 'c'.repeat(32);
    const corruptions: string[] = [`not-a-number|${owner}|1| `, `3|${owner}|x| `, `3|${owner}|1`, '', '|||', `3|${owner}`];
    const failures: string[] = [];
    for (const value of corruptions) {
      // Not the ops that wait forever: a lock key without expiry is a lock held for ever.
      for (const op of ['acquire', 'tryAcquire', 'isLocked', 'forceRelease', 're-enter'] as const) {
        const name = freshName('corrupt');
        const keys = lockKeys('padlock', name);
        await admin.set(keys.lock, value);
        const outcome = await outcomeOf(() => (op === 're-enter' ? p.mutex(name).acquire({ owner, waitMs: 0 }) : runOp(p, name, op)), 3_000);
        if (outcome.kind === 'hang' || (outcome.kind === 'error' && !(outcome.error instanceof PadlockError))) {
          failures.push(`${JSON.stringify(value)} ${op}: ${describeOutcome(outcome)}`);
        }
        if (outcome.kind === 'value' && outcome.value instanceof Lease) await outcome.value.release().catch(() => undefined);
        await admin.del(keys.lock);
      }
    }
    assert.deepEqual(failures, []);
  });
});

// ---------------------------------------------------------------------------------------------

describe('properties against Redis: every duration validation accepts works end to end', () => {
  it('a free lock is granted for any waitMs: a short wait never cuts the first attempt short', { timeout: 30_000 }, async () => {
    const p = padlockOn(server);
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 3 }), async (waitMs) => {
        const outcome = await outcomeOf(() => p.mutex(freshName('short-wait')).acquire({ waitMs }), 2_000);
        assert.ok(outcome.kind === 'value' && outcome.value instanceof Lease, `waitMs ${waitMs} on a free lock: ${describeOutcome(outcome)}`);
        await outcome.value.release();
      }),
      { numRuns: runs(300) },
    );
  });

  it('any accepted leaseMs (fractions included) acquires with a lease and releases', { timeout: 60_000 }, async () => {
    const p = padlockOn(server);
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.integer({ min: 10, max: MAX_MS }), fc.double({ min: 10, max: MAX_MS, noNaN: true })), async (leaseMs) => {
        const name = freshName('lease');
        const keys = lockKeys('padlock', name);
        // A wait, not a try: on a loaded machine a reply may come back after a lease of a few ms has run
        // out, and padlock then tries again within the wait rather than hand out a lease already over.
        const outcome = await outcomeOf(() => p.mutex(name).acquire({ leaseMs, waitMs: 2_000 }), 5_000);
        const ttl = await admin.pttl(keys.lock);
        await admin.del(keys.lock);
        assert.ok(outcome.kind === 'value' && outcome.value instanceof Lease, `leaseMs ${leaseMs}: ${describeOutcome(outcome)}; the lock key's PTTL is ${ttl}`);
        // -2 or 0: a lease of a few ms may have run out, or be within its last ms, on a busy machine;
        // -1 (no expiry) never may.
        assert.ok(ttl >= 0 || ttl === -2, `leaseMs ${leaseMs}: the lock has an expiry (PTTL ${ttl})`);
        await outcome.value.release().catch(() => undefined);
      }),
      { numRuns: runs(50) },
    );
  });
});

