/**
 * What the operator commands tell a user about the states that used to mislead: a name never used
 * (`inspect` said `state free`), a dead holder `reap` would free (`inspect` did not say), a mutex
 * whose waiters queued through `fairMutex` (`list` said plain `mutex`). Against a real
 * redis-server; the dead holder's lock value is written as a crashed holder leaves it (its
 * clients' liveness keys gone).
 */
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import type { RedisServer } from '../src/devserver/redis-server.js';
import type { InspectReport } from '../src/cli/inspect.js';
import { lockKeys } from '../src/keys.js';
import { connect, eventually, padlockOn, startServer } from './harness/redis.js';
import { runBin } from './harness/cli.js';

let server: RedisServer;
before(async () => {
  server = await startServer();
});

function run(prefix: string, ...args: string[]) {
  return runBin([...args, '--url', server.url, '--prefix', prefix]);
}

describe('padlock inspect and list on states that used to mislead', () => {
  it('inspect says nothing is known of a name never used, in text and in --json', async () => {
    const text = await run('in1', 'inspect', 'never:used');
    assert.equal(text.code, 0, text.stderr);
    assert.equal(text.stdout, "Nothing is known of lock 'never:used' under prefix 'in1': Redis has no key of it (never used, or free and unused for over an hour).\n");
    const json = await run('in1', 'inspect', 'never:used', '--json');
    assert.equal((JSON.parse(json.stdout) as InspectReport).known, false);

    // Once used and released, its tombstone is known (free, with its last fence).
    const padlock = padlockOn(server, { prefix: 'in1' });
    try {
      await (await padlock.mutex('used:once').acquire()).release();
    } finally {
      await padlock.close();
    }
    const used = await run('in1', 'inspect', 'used:once');
    assert.match(used.stdout, /^state +free$/m);
    assert.equal((JSON.parse((await run('in1', 'inspect', 'used:once', '--json')).stdout) as InspectReport).known, true);
  });

  it('inspect flags a held mutex whose holder is dead (reap would free it), and not a live one', async () => {
    const admin = connect(server);
    const padlock = padlockOn(server, { prefix: 'in2' });
    try {
      // A crashed holder's hold: its two clients' liveness keys are gone.
      await admin.set(lockKeys('in2', 'crashed').lock, `17|${'d'.repeat(32)}|1|0123456789abcdef,fedcba9876543210| `, 'PX', 60_000);
      const dead = await run('in2', 'inspect', 'crashed');
      assert.equal(dead.code, 0, dead.stderr);
      assert.match(dead.stdout, /^holder +dead: every client holding it let its liveness key run out; 'padlock reap' frees it$/m);
      const deadJson = JSON.parse((await run('in2', 'inspect', 'crashed', '--json')).stdout) as InspectReport;
      assert.equal(deadJson.lock.holderLiveness, 'dead');

      const lease = await padlock.mutex('alive').acquire();
      const alive = await run('in2', 'inspect', 'alive');
      assert.doesNotMatch(alive.stdout, /dead/);
      assert.equal((JSON.parse((await run('in2', 'inspect', 'alive', '--json')).stdout) as InspectReport).lock.holderLiveness, 'alive');
      await lease.release();
    } finally {
      await padlock.close();
      admin.disconnect();
    }
  });

  it("list and inspect show a mutex with waiters queued through fairMutex as 'mutex (fair)'", async () => {
    const holderSide = padlockOn(server, { prefix: 'in3' });
    const waiterSide = padlockOn(server, { prefix: 'in3' });
    const admin = connect(server);
    try {
      const lease = await holderSide.fairMutex('fair:1').acquire();
      const plain = await holderSide.mutex('plain:1').acquire();
      const waiting = waiterSide.fairMutex('fair:1').acquire({ waitMs: 60_000 });
      assert.ok(await eventually(async () => (await admin.llen(lockKeys('in3', 'fair:1').queue)) === 1));
      const listed = await run('in3', 'list');
      assert.equal(listed.code, 0, listed.stderr);
      assert.match(listed.stdout, /^fair:1 +mutex \(fair\) /m);
      assert.match(listed.stdout, /^plain:1 +mutex /m);
      assert.match((await run('in3', 'inspect', 'fair:1')).stdout, /^lock +fair:1 · mutex \(fair\)$/m);
      await lease.release();
      await (await waiting).release();
      await plain.release();
    } finally {
      await holderSide.close();
      await waiterSide.close();
      admin.disconnect();
    }
  });
});
