/**
 * The semaphore's options, property-based: any `permits` (at creation, in acquire options, to
 * setPermits) that is not an integer from 1 to 2^31 − 1 is refused with PadlockOptionError naming
 * it, with nothing sent; and random sequences of acquisitions, releases and limit changes on a real
 * server agree with a small model (permits held, the limit, refusals over it).
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { RedisServer } from '../../src/devserver/redis-server.js';
import { Padlock, PadlockOptionError, PermitLimitError, type Lease } from '../../src/index.js';
import { padlockOn, startServer } from '../harness/redis.js';
import { anyValue, runs, spyClient, type SpyClient } from './support.js';

const MAX_PERMITS = 2_147_483_647;

function isValidPermits(value: unknown): boolean {
  return typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= MAX_PERMITS;
}

/** Values near the valid range and anything at all. */
function anyPermits(): fc.Arbitrary<unknown> {
  return fc.oneof(
    fc.integer({ min: -3, max: 40 }),
    fc.constantFrom(0, MAX_PERMITS, MAX_PERMITS + 1, 1.5, -0, NaN, Infinity, '3', null),
    fc.double(),
    anyValue(),
  );
}

let server: RedisServer;
let spy: SpyClient;
before(async () => {
  server = await startServer();
  spy = await spyClient();
});
after(() => spy.redis.disconnect());

describe('semaphore options (property)', () => {
  it('permits: refused with PadlockOptionError naming it unless an integer from 1 to 2^31 − 1, and nothing is sent', async () => {
    const padlock = new Padlock({ redis: spy.redis });
    await fc.assert(
      fc.asyncProperty(anyPermits(), fc.constantFrom('create', 'acquire', 'tryAcquire', 'withLock', 'setPermits'), async (permits, call) => {
        const valid = isValidPermits(permits);
        const named = (e: unknown): boolean => e instanceof PadlockOptionError && e.option === 'permits';
        if (call === 'create') {
          if (valid) padlock.semaphore('prop:sem', permits as number);
          else assert.throws(() => padlock.semaphore('prop:sem', permits as number), named);
          return;
        }
        // A valid call would go to Redis (the model test below covers those); in acquire options, undefined means the default, 1.
        if (valid || (permits === undefined && call !== 'setPermits')) return;
        const sem = padlock.semaphore('prop:sem', 4);
        const calls = {
          acquire: () => sem.acquire({ permits: permits as number }),
          tryAcquire: () => sem.tryAcquire({ permits: permits as number }),
          withLock: () => sem.withLock(() => 1, { permits: permits as number }),
          setPermits: () => sem.setPermits(permits as number),
        };
        await assert.rejects(calls[call](), named);
      }),
      { numRuns: runs(300) },
    );
    assert.deepEqual(spy.sent, [], 'no command was sent');
    await padlock.close();
  });

  it('random acquisitions, releases and limit changes agree with a model of the permits held', async () => {
    const padlock = padlockOn(server);
    const op = fc.oneof(
      fc.record({ kind: fc.constant('take' as const), permits: fc.integer({ min: 1, max: 6 }) }),
      fc.record({ kind: fc.constant('release' as const), index: fc.nat() }),
      fc.record({ kind: fc.constant('limit' as const), permits: fc.integer({ min: 1, max: 6 }) }),
    );
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 6 }), fc.array(op, { minLength: 1, maxLength: 12 }), async (initial, ops) => {
        const sem = padlock.semaphore(`prop:model:${run++}`, initial);
        let limit = initial;
        const held: { lease: Lease; permits: number }[] = [];
        const used = (): number => held.reduce((sum, h) => sum + h.permits, 0);
        for (const o of ops) {
          if (o.kind === 'take') {
            if (o.permits > limit) {
              await assert.rejects(sem.tryAcquire({ permits: o.permits }), (e: unknown) => e instanceof PermitLimitError && e.limit === limit);
              continue;
            }
            const lease = await sem.tryAcquire({ permits: o.permits });
            assert.equal(lease !== null, o.permits <= limit - used(), `take ${o.permits} with ${used()} of ${limit} held`);
            if (lease !== null) held.push({ lease, permits: o.permits });
          } else if (o.kind === 'release') {
            const [h] = held.splice(o.index % Math.max(1, held.length), 1);
            await h?.lease.release();
          } else {
            await sem.setPermits(o.permits);
            limit = o.permits;
          }
          assert.equal(await sem.available(), Math.max(0, limit - used()));
          assert.equal(await sem.isLocked(), used() > 0);
        }
        await Promise.all(held.map((h) => h.lease.release()));
      }),
      { numRuns: runs(40) },
    );
  });
});
