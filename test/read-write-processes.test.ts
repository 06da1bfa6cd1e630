import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { fork } from 'node:child_process';
import type { RedisServer } from '../src/devserver/redis-server.js';
import { ReadWriteProtocol, holdMember, readWriteKeys } from '../src/stores/redis/kinds/read-write-protocol.js';
import { connect, eventually, padlockOn, runCall, startServer } from './harness/redis.js';
import { fixture, firstMessage } from './harness/children.js';


let server: RedisServer;
before(async () => {
  server = await startServer();
});

describe('readWrite across OS processes', () => {
  it("a SIGKILLed reader's hold expires alone: another reader's lease is untouched and still excludes writers", async () => {
    const name = 'rw-proc:killed';
    const keys = readWriteKeys('read')('padlock', name);
    const admin = connect(server);
    const inspect = (): Promise<{ readers: number }> => runCall(admin, new ReadWriteProtocol(keys, 'test', false).inspect());
    const holder = fork(fixture('read-write-holder'), [server.url, name, 'read', '600']);
    const doomed = await firstMessage<{ owner: string }>(holder);
    const padlock = padlockOn(server);
    const { read, write } = padlock.readWrite(name);
    const survivor = await read.acquire({ leaseMs: 60_000 }); // a fixed lease: nothing renews it
    const untouched = await admin.zscore(keys.leases, holdMember('read', survivor.owner));
    const renewed = Number(await admin.zscore(keys.leases, holdMember('read', doomed.owner)));
    assert.ok(await eventually(async () => Number(await admin.zscore(keys.leases, holdMember('read', doomed.owner))) > renewed, 5_000), 'the live reader renews its own lease');
    holder.kill('SIGKILL');
    await new Promise((resolve) => holder.once('exit', resolve));
    assert.equal((await inspect()).readers, 2);
    assert.ok(await eventually(async () => (await inspect()).readers === 1, 10_000), "the killed reader's hold ran out");
    assert.equal(await admin.zscore(keys.leases, holdMember('read', survivor.owner)), untouched, "the survivor's lease is as it was");
    assert.equal(survivor.isHeld, true);
    assert.equal(await write.tryAcquire(), null, 'the survivor still excludes writers');
    const writing = write.acquire({ waitMs: 10_000 });
    await survivor.release();
    const w = await writing;
    assert.ok(w.fence > 0);
    await w.release();
  });
});
