/**
 * Every key padlock writes expires once its lock is free and unused: one lock per entity (millions
 * of names) must not grow Redis. And fences stay strictly increasing without an eternal counter.
 */
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import type { Redis } from 'ioredis';
import type { RedisServer } from '../src/devserver/redis-server.js';
import { lockKeys } from '../src/keys.js';
import { connect, padlockOn, startServer } from './harness/redis.js';

/** The documented bound (docs/protocol.md): the fence key lives an hour after the lock's last acquisition; every other key less. */
const FENCE_RETENTION_MS = 3_600_000;

let server: RedisServer;
let admin: Redis;
before(async () => {
  server = await startServer();
  admin = connect(server);
});

async function padlockKeys(): Promise<string[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await admin.scan(cursor, 'MATCH', 'padlock:*', 'COUNT', 1000);
    cursor = next;
    keys.push(...batch);
  } while (cursor !== '0');
  return keys;
}

describe('footprint', () => {
  it('20 000 distinct names acquired and released leave no key without an expiry, none longer than the documented bound', { timeout: 120_000 }, async () => {
    const padlock = padlockOn(server);
    const names = Array.from({ length: 20_000 }, (_, i) => `order:${i}`);
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < names.length) {
        const lease = await padlock.mutex(names[next++]!).acquire();
        await lease.release();
      }
    };
    await Promise.all(Array.from({ length: 64 }, worker));
    const keys = await padlockKeys();
    assert.ok(keys.length > 0, 'padlock wrote keys (the scan sees them)');
    const ttls = await Promise.all(keys.map((key) => admin.pttl(key)));
    const eternal = keys.filter((_, i) => ttls[i] === -1);
    assert.deepEqual(eternal.slice(0, 5), [], `${eternal.length} keys never expire`);
    const longest = Math.max(...ttls);
    assert.ok(longest <= FENCE_RETENTION_MS, `every key expires within the bound: the longest has ${longest} ms left`);
    // The fence keys are the only ones that outlive the 10 s tombstone.
    const lasting = keys.filter((_, i) => ttls[i]! > 60_000);
    assert.ok(lasting.every((key) => key.endsWith(':fence')), `only fence keys last long: ${lasting.filter((k) => !k.endsWith(':fence')).slice(0, 3).join(', ')}`);
  });

  it('fences keep increasing when the fence key has expired (or a server lost its data)', async () => {
    const padlock = padlockOn(server);
    const keys = lockKeys('padlock', 'fence:gone');
    const first = await padlock.mutex('fence:gone').acquire();
    await first.release();
    const second = await padlock.mutex('fence:gone').acquire();
    await second.release();
    assert.ok(second.fence > first.fence);
    await admin.del(keys.fence, keys.lock); // as if both had expired
    const third = await padlock.fairMutex('fence:gone').acquire();
    await third.release();
    assert.ok(third.fence > second.fence, `fence ${third.fence} after ${second.fence}`);
    assert.equal(String(third.fence), await admin.get(keys.fence), 'the fence key holds the last fence, exactly');
    assert.ok(Number.isSafeInteger(third.fence));
  });
});
