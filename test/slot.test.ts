import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { lockKeys } from '../src/keys.js';
import { keySlot } from '../src/stores/redis/adapters/slot.js';

describe('cluster slots', () => {
  it('matches the slots Redis documents', () => {
    // Values from the Redis Cluster specification and CLUSTER KEYSLOT.
    assert.equal(keySlot('123456789'), 12739);
    assert.equal(keySlot('foo'), 12182);
    assert.equal(keySlot('{user1000}.following'), keySlot('{user1000}.followers'));
    assert.equal(keySlot('foo{}{bar}'), keySlot('foo{}{bar}'));
    assert.equal(keySlot('{}x'), keySlot('{}x'));
  });

  it('puts every key of one lock in one slot, whatever the name', () => {
    for (const name of ['a', '{a}', '}a{', '{}', 'a}b{c', 'é🔒', '%7B', 'x'.repeat(1_000)]) {
      const keys = lockKeys('padlock', name);
      const slots = new Set([keys.lock, keys.queue, keys.released].map(keySlot));
      assert.equal(slots.size, 1, `one slot for ${JSON.stringify(name)}`);
    }
  });
});
