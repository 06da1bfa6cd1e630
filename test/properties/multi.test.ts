/**
 * The multi-lock's names, property-based: `padlock.multi(names)` accepts exactly a non-empty array
 * of valid names (refusing anything else with a PadlockOptionError naming `names` or the first bad
 * `names[i]`, before anything is sent), folds duplicates and sorts by UTF-16 code units; against a
 * real Redis, any set of odd names is held under one owner and freed, and random overlapping sets
 * taken concurrently in random orders all finish without two holders of one name.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { Redis } from 'ioredis';
import { Padlock, PadlockOptionError } from '../../src/index.js';
import { lockKeys } from '../../src/keys.js';
import { connect, padlockOn, startServer } from '../harness/redis.js';
import { readLock } from '../harness/lock-state.js';
import { anyValue, invalidNameString, isValidName, runs, show, spyClient, validName, type SpyClient } from './support.js';
import { internals } from '../../src/testing.js';

/** The oracle: the names a multi-lock holds, or the option its refusal names. */
function expected(names: unknown): { names: string[] } | { option: string; value: unknown } {
  if (!Array.isArray(names) || names.length === 0) return { option: 'names', value: names };
  const bad = names.findIndex((name) => !isValidName(name));
  if (bad >= 0) return { option: `names[${bad}]`, value: names[bad] };
  const unique = [...new Set(names as string[])];
  // Code-unit order, written out rather than left to sort()'s default.
  unique.sort((a, b) => {
    for (let i = 0; i < Math.min(a.length, b.length); i++) {
      const d = a.charCodeAt(i) - b.charCodeAt(i);
      if (d !== 0) return d;
    }
    return a.length - b.length;
  });
  return { names: unique };
}

/** Arrays of names: mostly valid (short ones, to repeat often), sometimes with a bad one, sometimes not an array at all. */
function namesArgument(): fc.Arbitrary<unknown> {
  const short = fc.string({ unit: fc.constantFrom('a', 'b', 'B', 'é', '🔒', '{', '}', '%'), minLength: 1, maxLength: 3 });
  const good = fc.oneof({ weight: 3, arbitrary: short }, { weight: 1, arbitrary: validName() });
  return fc.oneof(
    { weight: 6, arbitrary: fc.array(good, { minLength: 1, maxLength: 8 }) },
    { weight: 2, arbitrary: fc.tuple(fc.array(good, { maxLength: 4 }), fc.oneof(invalidNameString(), anyValue().filter((v) => typeof v !== 'string')), fc.array(fc.oneof(good, anyValue()), { maxLength: 3 })).map(([a, bad, b]) => [...a, bad, ...b]) },
    { weight: 1, arbitrary: fc.oneof(fc.constant([]), anyValue(), fc.string(), fc.constant(new Set(['a']))) },
  );
}

let spy: SpyClient;
let offline: Padlock;
before(async () => {
  spy = await spyClient();
  offline = new Padlock({ redis: spy.redis });
});
after(async () => {
  await offline.close();
  spy.redis.disconnect();
});

describe('properties: multi-lock names', () => {
  it('accepts exactly non-empty arrays of valid names, folded and sorted; refuses the rest naming the first bad one, sending nothing', { timeout: 60_000 }, () => {
    fc.assert(
      fc.property(namesArgument(), (names) => {
        const oracle = expected(names);
        let error: unknown;
        let made: ReturnType<Padlock['multi']> | undefined;
        try {
          made = offline.multi(names as string[]);
        } catch (e) {
          error = e;
        }
        if ('option' in oracle) {
          assert.ok(error instanceof PadlockOptionError, `expected PadlockOptionError for ${show(names)}, got ${show(error)}`);
          assert.equal(error.option, oracle.option);
          assert.ok(Object.is(error.value, oracle.value), 'the error carries the refused value');
        } else {
          assert.equal(error, undefined, `valid names were refused: ${show(error)}`);
          assert.deepEqual(made?.names, oracle.names);
          assert.equal(made?.name, JSON.stringify(oracle.names));
        }
      }),
      { numRuns: runs(2_000) },
    );
    assert.deepEqual(spy.sent, [], 'nothing was sent');
  });
});

describe('properties against Redis: multi-lock', () => {
  let admin: Redis;
  let padlocks: readonly [Padlock, Padlock];
  before(async () => {
    const server = await startServer();
    admin = connect(server);
    padlocks = [padlockOn(server), padlockOn(server)];
  });

  it('any set of odd names is held by one owner, once each, and freed by the one release', { timeout: 60_000 }, async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(validName(), { minLength: 1, maxLength: 5 }), async (names) => {
        const lock = padlocks[0].multi(names);
        const lease = await lock.acquire();
        try {
          for (const name of lock.names) {
            const state = await readLock(admin, lockKeys('padlock', name).lock);
            assert.equal(state?.owner, lease.owner, `${show(name)} is held by the lease's owner`);
            assert.equal(state.count, 1);
            assert.equal(state.fence, lease.fences.get(name));
          }
        } finally {
          await lease.release();
        }
        for (const name of lock.names) assert.equal((await readLock(admin, lockKeys('padlock', name).lock))?.count ?? 0, 0, `${show(name)} is free`);
      }),
      { numRuns: runs(100) },
    );
  });

  it('random overlapping sets, taken at once in random orders by two Padlocks, all finish and never share a name', { timeout: 90_000 }, async () => {
    let round = 0;
    const pool = ['p', 'q', 'r', 's'];
    const set = fc.shuffledSubarray(pool, { minLength: 1 });
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(fc.constantFrom<0 | 1>(0, 1), set), { minLength: 2, maxLength: 8 }), async (callers) => {
        const prefix = `round${++round}:`;
        const inside = new Map<string, number>();
        let shared = 0;
        await Promise.all(
          callers.map(([actor, names]) =>
            padlocks[actor].multi(names.map((name) => prefix + name)).withLock(async (lease) => {
              for (const name of lease.names) {
                if ((inside.get(name) ?? 0) > 0) shared++;
                inside.set(name, (inside.get(name) ?? 0) + 1);
              }
              await new Promise((resolve) => setImmediate(resolve));
              for (const name of lease.names) inside.set(name, (inside.get(name) ?? 1) - 1);
            }, { waitMs: 20_000 }),
          ),
        );
        assert.equal(shared, 0, 'no name had two holders at once');
      }),
      { numRuns: runs(100) },
    );
    for (const p of padlocks) assert.equal(internals(p).runtime.holds.size, 0, 'every hold was released');
  });
});
