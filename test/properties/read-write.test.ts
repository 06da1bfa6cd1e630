/**
 * The read/write lock, property-based: its sides refuse exactly the input the mutex refuses (same
 * option named, nothing sent), and random sequences of reads, writes, re-entries by owner token
 * (downgrades and refused upgrades among them) and releases from two Padlocks agree with a model,
 * as Redis keeps it.
 */
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { Redis } from 'ioredis';
import type { RedisServer } from '../../src/devserver/redis-server.js';
import { Lease, LockNotHeldError, LockUpgradeError, Padlock, PadlockOptionError, type AcquireOptions } from '../../src/index.js';
import { resolveAcquireOptions } from '../../src/options.js';
import { ReadWriteProtocol, holdMember, readWriteKeys, type ReadWriteKeys, type ReadWriteSide } from '../../src/stores/redis/kinds/read-write-protocol.js';
import { connect, padlockOn, runCall, startServer } from '../harness/redis.js';
import { anyValue, describeOutcome, invalidNameString, nearMs, nearOwner, outcomeOf, runs, spyClient, validName, validOwner, MAX_MS } from './support.js';
import { internals } from '../../src/testing.js';

let server: RedisServer;
let admin: Redis;
before(async () => {
  server = await startServer();
  admin = connect(server);
});

/** The error a call gives, or 'ok'. */
async function refusal(call: () => unknown): Promise<unknown> {
  try {
    await call();
    return 'ok';
  } catch (error) {
    return error instanceof PadlockOptionError ? `${error.option}` : error;
  }
}

describe('properties: read/write input', () => {
  it('readWrite(name) and both sides refuse exactly what the mutex refuses, naming the same option, sending nothing', { timeout: 60_000 }, async () => {
    const spy = await spyClient();
    const padlock = new Padlock({ redis: spy.redis });
    const options = fc.record(
      {
        waitMs: fc.oneof(fc.integer({ min: 0, max: MAX_MS }), nearMs(0), anyValue()),
        leaseMs: fc.oneof(fc.integer({ min: 10, max: MAX_MS }), nearMs(10), anyValue()),
        owner: fc.oneof(validOwner(), nearOwner(), anyValue()),
        autoExtend: fc.oneof(fc.boolean(), anyValue()),
      },
      { requiredKeys: [] },
    );
    await fc.assert(
      fc.asyncProperty(fc.oneof(validName(), invalidNameString(), anyValue()), options, async (name, raw) => {
        const opts = raw as AcquireOptions;
        const mutexSays = await refusal(() => padlock.mutex(name as string));
        const rwSays = await refusal(() => padlock.readWrite(name as string));
        assert.equal(rwSays, mutexSays, 'names: as the mutex');
        if (mutexSays !== 'ok') return;
        // Only refusals are compared: a valid call would try to reach the spy (it never answers).
        const expected = await refusal(() => resolveAcquireOptions(opts, { waitMs: 0, leaseMs: 30_000 }));
        if (expected === 'ok') return;
        const { read, write } = padlock.readWrite(name as string);
        assert.equal(await refusal(() => read.tryAcquire(opts)), expected);
        assert.equal(await refusal(() => write.acquire(opts)), expected);
        assert.equal(await refusal(() => read.withLock(() => 1, opts)), expected);
      }),
      { numRuns: runs(300) },
    );
    assert.deepEqual(spy.sent, [], 'no refused call sent anything');
    await padlock.close();
  });
});

// ---------------------------------------------------------------------------------------------
// Call sequences against a model.

interface Model {
  /** Hold count in Redis per side and owner. */
  readonly holds: Map<string, number>;
  /** The last fence handed out (a read gets it, a write the next). */
  lastFence: number;
  leases: { side: ReadWriteSide; owner: string; released: 'ok' | 'not-held' | undefined; lease: Lease }[];
}

interface Real {
  readonly name: string;
  readonly keys: ReadWriteKeys;
  readonly padlocks: readonly [Padlock, Padlock];
}

type Cmd = fc.AsyncCommand<Model, Real>;
let commandsRun = 0;

const key = (side: ReadWriteSide, owner: string): string => holdMember(side, owner);
const readers = (m: Model): number => [...m.holds.keys()].filter((k) => k.startsWith('r:')).length;
const writer = (m: Model): boolean => [...m.holds.keys()].some((k) => k.startsWith('w:'));

async function checkRedis(m: Model, r: Real): Promise<void> {
  commandsRun++;
  const state = await runCall(admin, new ReadWriteProtocol(r.keys, 'model', false).inspect());
  assert.deepEqual({ writer: state.writer, readers: state.readers }, { writer: writer(m), readers: readers(m) }, 'Redis holds what the model holds');
  for (const [member, count] of m.holds) assert.equal(Number(await admin.hget(r.keys.state, member)), count, `count of ${member}`);
  for (const entry of m.leases) if (entry.released !== undefined) assert.equal(entry.lease.isHeld, false);
}

class TryCmd implements Cmd {
  constructor(readonly actor: 0 | 1, readonly side: ReadWriteSide) {}
  check = (): boolean => true;
  async run(m: Model, r: Real): Promise<void> {
    const outcome = await outcomeOf(() => r.padlocks[this.actor].readWrite(r.name)[this.side].tryAcquire(), 2_000);
    const allowed = this.side === 'read' ? !writer(m) : !writer(m) && readers(m) === 0;
    if (allowed) {
      assert.ok(outcome.kind === 'value' && outcome.value instanceof Lease, `granted: ${describeOutcome(outcome)}`);
      const lease = outcome.value;
      if (this.side === 'write') assert.ok(lease.fence > m.lastFence, `a write's fence is fresh: ${lease.fence} after ${m.lastFence}`);
      else if (m.lastFence > 0) assert.equal(lease.fence, m.lastFence, "a read shares the last write's fence");
      m.lastFence = lease.fence;
      m.holds.set(key(this.side, lease.owner), 1);
      m.leases.push({ side: this.side, owner: lease.owner, released: undefined, lease });
    } else {
      assert.ok(outcome.kind === 'value' && outcome.value === null, `refused: ${describeOutcome(outcome)}`);
    }
    await checkRedis(m, r);
  }
  toString = (): string => `try ${this.side} (p${this.actor})`;
}

/** Re-entry of `side` by the owner of an earlier lease (of either side): re-entry, downgrade, refused upgrade, or not held. */
class ReenterCmd implements Cmd {
  constructor(readonly actor: 0 | 1, readonly side: ReadWriteSide, readonly index: number) {}
  check = (m: Readonly<Model>): boolean => m.leases.length > 0;
  async run(m: Model, r: Real): Promise<void> {
    const { owner } = m.leases[this.index % m.leases.length]!;
    const outcome = await outcomeOf(() => r.padlocks[this.actor].readWrite(r.name)[this.side].acquire({ owner, waitMs: 0 }), 2_000);
    const mine = m.holds.get(key(this.side, owner));
    if (mine !== undefined || (this.side === 'read' && m.holds.has(key('write', owner)))) {
      assert.ok(outcome.kind === 'value' && outcome.value instanceof Lease, `re-entered (or downgraded): ${describeOutcome(outcome)}`);
      m.holds.set(key(this.side, owner), (mine ?? 0) + 1);
      assert.equal(outcome.value.holdCount, (mine ?? 0) + 1);
      m.leases.push({ side: this.side, owner, released: undefined, lease: outcome.value });
    } else if (this.side === 'write' && m.holds.has(key('read', owner))) {
      assert.ok(outcome.kind === 'error' && outcome.error instanceof LockUpgradeError, `an upgrade is refused: ${describeOutcome(outcome)}`);
    } else {
      assert.ok(outcome.kind === 'error' && outcome.error instanceof LockNotHeldError, `not held: ${describeOutcome(outcome)}`);
    }
    await checkRedis(m, r);
  }
  toString = (): string => `reenter ${this.side} (p${this.actor}, lease ${this.index})`;
}

class ReleaseCmd implements Cmd {
  constructor(readonly index: number) {}
  check = (m: Readonly<Model>): boolean => m.leases.length > 0;
  async run(m: Model, r: Real): Promise<void> {
    const entry = m.leases[this.index % m.leases.length]!;
    const outcome = await outcomeOf(() => entry.lease.release(), 2_000);
    const got = outcome.kind === 'value' ? 'ok' : outcome.kind === 'error' && outcome.error instanceof LockNotHeldError ? 'not-held' : describeOutcome(outcome);
    const member = key(entry.side, entry.owner);
    const count = m.holds.get(member);
    if (entry.released !== undefined) {
      assert.equal(got, entry.released, 'a second release gives the first answer and does nothing');
    } else if (count !== undefined) {
      assert.equal(got, 'ok');
      if (count === 1) m.holds.delete(member);
      else m.holds.set(member, count - 1);
      entry.released = 'ok';
    } else {
      assert.equal(got, 'not-held');
      entry.released = 'not-held';
    }
    await checkRedis(m, r);
  }
  toString = (): string => `release(lease ${this.index})`;
}

let counter = 0;

describe('properties: read/write call sequences', () => {
  it('random reads, writes, re-entries, downgrades, upgrades and releases from two Padlocks agree with the model', { timeout: 90_000 }, async (t) => {
    const padlocks = [padlockOn(server), padlockOn(server)] as const;
    const actor = fc.constantFrom<0 | 1>(0, 1);
    const side = fc.constantFrom<ReadWriteSide>('read', 'write');
    const index = fc.nat(20);
    const commands = [
      fc.tuple(actor, side).map(([a, s]) => new TryCmd(a, s)),
      fc.tuple(actor, side).map(([a, s]) => new TryCmd(a, s)),
      fc.tuple(actor, side, index).map(([a, s, i]) => new ReenterCmd(a, s, i)),
      index.map((i) => new ReleaseCmd(i)),
      index.map((i) => new ReleaseCmd(i)),
    ];
    await fc.assert(
      fc.asyncProperty(fc.commands(commands, { maxCommands: 30, size: 'large' }), async (cmds) => {
        const name = `rw-model:${process.pid}:${counter++}`;
        const model: Model = { holds: new Map(), lastFence: 0, leases: [] };
        try {
          await fc.asyncModelRun(() => ({ model, real: { name, keys: readWriteKeys('write')('padlock', name), padlocks } }), cmds);
        } finally {
          await Promise.allSettled(model.leases.map((l) => l.lease.release()));
        }
      }),
      { numRuns: runs(60) },
    );
    for (const p of padlocks) assert.equal(internals(p).runtime.holds.size, 0, 'every hold was released');
    t.diagnostic(`${commandsRun} commands run`);
    assert.ok(commandsRun > runs(60) * 5);
  });
});
