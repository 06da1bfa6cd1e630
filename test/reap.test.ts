/**
 * The dead-holder monitor: every hold records the clients (Padlocks) holding it, every Padlock keeps
 * a liveness key while it holds or waits, and a reaper — a waiting Padlock with `reapDeadHolders`, or
 * `padlock reap` — frees a hold whose clients are all dead, giving its turn to the queue, and never
 * one whose client is alive. Real redis-server processes; the dead holders are child processes
 * killed with SIGKILL. (The Cluster's turn is in cli-topologies.test.ts.)
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { RedisServer } from '../src/devserver/redis-server.js';
import { monotonicNow } from '../src/clock.js';
import { Padlock, RedisCommandError } from '../src/index.js';
import { livenessKey, lockKeys } from '../src/keys.js';
import { MutexProtocol } from '../src/stores/redis/kinds/mutex-protocol.js';
import { fromIoredis } from '../src/stores/redis/adapters/ioredis.js';
import { reapIfDead } from '../src/stores/redis/reaping.js';
import { SingleServer } from '../src/stores/redis/topology/single-server.js';
import type { GaveUp, ScriptCall } from '../src/stores/redis/topology/topology.js';
import type { ReapReport } from '../src/cli/reap.js';
import { parseLock, readLock } from './harness/lock-state.js';
import { connect, delay, eventually, padlockOn, runCall, startServer, startServers } from './harness/redis.js';
import { runBin, type Run } from './harness/cli.js';
import { redisInternals } from '../src/testing.js';

const fixture = fileURLToPath(new URL('./fixtures/reap-holder.js', import.meta.url));
const children: ChildProcess[] = [];
after(() => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

/** What a holder process reports once it holds its lock. */
interface Held {
  readonly fence: number;
  readonly owner: string;
  readonly clientId: string;
}

/** A child process that takes `name` (lease `leaseMs`, liveness `livenessMs`) on `target` and holds it until killed. */
async function holder(target: string, name: string, options: { leaseMs?: number; livenessMs: number; prefix?: string }): Promise<{ child: ChildProcess; held: Held }> {
  const child = fork(fixture, [target, name, String(options.leaseMs ?? 60_000), String(options.livenessMs), options.prefix ?? 'padlock']);
  children.push(child);
  const held = await nextMessage<Held>(child);
  return { child, held };
}

function nextMessage<T>(child: ChildProcess): Promise<T> {
  return new Promise((resolve, reject) => {
    const onExit = (code: number | null): void => reject(new Error(`the holder exited (${code}) before reporting`));
    child.once('exit', onExit);
    child.once('message', (message) => {
      child.off('exit', onExit);
      resolve(message as T);
    });
  });
}

async function kill(child: ChildProcess): Promise<void> {
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
  assert.equal(child.signalCode, 'SIGKILL');
}

function parsed<T>(run: Run): T {
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.stderr, '');
  return JSON.parse(run.stdout) as T;
}

let server: RedisServer;
before(async () => {
  server = await startServer();
});

function reap(prefix: string, ...args: string[]): Promise<Run> {
  return runBin(['reap', '--url', server.url, '--prefix', prefix, ...args]);
}

describe('holds record their clients', () => {
  it('a grant records its client (acquire, a woken mutex waiter, a fair handoff); a re-entry by another client adds it; a tombstone has none', async () => {
    const a = padlockOn(server, { prefix: 'rc1' });
    const b = padlockOn(server, { prefix: 'rc1' });
    const admin = connect(server);
    const clientsOf = async (name: string): Promise<string | undefined> => (await readLock(admin, lockKeys('rc1', name).lock))?.clients;

    const lease = await a.mutex('one').acquire();
    assert.equal(await clientsOf('one'), redisInternals(a).clientId);
    const inner = await b.mutex('one').acquire({ owner: lease.owner });
    assert.equal(await clientsOf('one'), `${redisInternals(a).clientId},${redisInternals(b).clientId}`, 'another client re-entered it');
    const again = await b.mutex('one').acquire({ owner: lease.owner });
    assert.equal(await clientsOf('one'), `${redisInternals(a).clientId},${redisInternals(b).clientId}`, 'listed once');
    await again.release();
    await inner.release();
    await lease.release();
    const tombstone = await readLock(admin, lockKeys('rc1', 'one').lock);
    assert.deepEqual([tombstone?.owner, tombstone?.count, tombstone?.clients], ['', 0, ''], 'a tombstone names no client');

    for (const kind of ['mutex', 'fairMutex'] as const) {
      const held = await a[kind](`turn:${kind}`).acquire();
      const waiting = b[kind](`turn:${kind}`).acquire({ waitMs: 10_000 });
      assert.ok(await eventually(async () => (await admin.llen(lockKeys('rc1', `turn:${kind}`).queue)) === 1));
      await held.release();
      const next = await waiting;
      assert.equal(await clientsOf(`turn:${kind}`), redisInternals(b).clientId, `${kind}: the waiter's client holds it`);
      await next.release();
    }
  });

  it('past 8 clients re-entering one hold, its clients are unknown (*): such a hold is never reaped', async () => {
    const padlocks = Array.from({ length: 9 }, () => padlockOn(server, { prefix: 'rc2' }));
    const [first, ...others] = padlocks;
    assert.ok(first !== undefined);
    const lease = await first.mutex('many').acquire();
    const leases = [];
    for (const p of others) leases.push(await p.mutex('many').acquire({ owner: lease.owner }));
    const admin = connect(server);
    const state = await readLock(admin, lockKeys('rc2', 'many').lock);
    assert.equal(state?.clients, '*');
    assert.equal(state?.count, 9);
    const topology = new SingleServer(fromIoredis(admin), 5_000);
    assert.equal(await reapIfDead(topology, 'rc2', lockKeys('rc2', 'many'), { owner: lease.owner, clients: '*' }), 'unknown');
    assert.equal(await runCall(admin, MutexProtocol.reap(lockKeys('rc2', 'many'), { owner: lease.owner, clients: '*' }, [], false)), 'changed', 'the script refuses it too');
    for (const l of leases) await l.release();
    await lease.release();
  });
});

describe('the liveness key', () => {
  it('is written before the first grant, and only then while it is fresh; a Padlock that takes no lock writes none', async () => {
    const admin = connect(server);
    const p = padlockOn(server, { prefix: 'lv0', livenessMs: 60_000 });
    const key = livenessKey('lv0', redisInternals(p).clientId);
    assert.equal(key, `lv0:client:${redisInternals(p).clientId}`);
    const sent: string[] = [];
    const { topology } = redisInternals(p);
    for (const method of ['run', 'send'] as const) {
      const original = topology[method].bind(topology);
      topology[method] = <R>(call: ScriptCall<R>, gaveUp?: GaveUp): Promise<R> => {
        sent.push(call.script.name);
        return original(call, gaveUp);
      };
    }
    assert.equal(await p.mutex('lv').isLocked(), false);
    assert.equal(await admin.exists(key), 0, 'reading writes nothing');
    const lease = await p.mutex('lv').acquire();
    assert.deepEqual(sent, ['inspect.lua', 'liveness.lua', 'acquire.lua'], 'the key is written before the grant');
    const ttl = await admin.pttl(key);
    assert.ok(ttl > 55_000 && ttl <= 60_000, `the key expires in livenessMs (${ttl} ms left)`);
    // Grants while the key is fresh cost nothing more (a refresh is due only every livenessMs / 5 = 12 s).
    for (let i = 0; i < 20; i++) await (await p.mutex(`lv:${i}`).acquire()).release();
    assert.equal(sent.filter((s) => s === 'liveness.lua').length, 1, 'one write for 21 grants');
    await lease.release();
    await p.close();
    assert.equal(await admin.exists(key), 0, 'close() deletes it');
  });

  it('is kept with an expiry of livenessMs while held, runs out once idle, and is deleted by close()', async () => {
    const admin = connect(server);
    const p = padlockOn(server, { prefix: 'lv1', livenessMs: 1_500 });
    const key = livenessKey('lv1', redisInternals(p).clientId);
    const lease = await p.mutex('lv').acquire();
    // Held past several expiries: kept alive by the tick, never without an expiry.
    for (let i = 0; i < 6; i++) {
      await delay(500);
      const left = await admin.pttl(key);
      assert.ok(left > 0 && left <= 1_500, `still kept, with an expiry (${left} ms left)`);
    }
    await lease.release();
    // Idle (nothing held, nothing waited for): the tick stops and the key runs out within livenessMs.
    assert.ok(await eventually(async () => (await admin.exists(key)) === 0, 5_000), 'the key ran out once idle');
    await delay(800);
    assert.equal(await admin.exists(key), 0, 'and the tick stopped');
    await (await p.mutex('lv').acquire()).release();
    assert.equal(await admin.exists(key), 1, 'written again for the next grant');
    await p.close();
    assert.equal(await admin.exists(key), 0, 'close() deletes it');
  });

  it('a queued waiter keeps it too (a fair handoff records the waiter as the holder at any moment)', async () => {
    const admin = connect(server);
    const holderSide = padlockOn(server, { prefix: 'lv2' });
    const waiterSide = padlockOn(server, { prefix: 'lv2', livenessMs: 1_000 });
    const held = await holderSide.mutex('q').acquire();
    const waiting = waiterSide.fairMutex('q').acquire({ waitMs: 10_000 });
    await delay(2_500);
    const ttl = await admin.pttl(livenessKey('lv2', redisInternals(waiterSide).clientId));
    assert.ok(ttl > 0 && ttl <= 1_000, `the waiter's key is alive after 2.5 livenessMs (${ttl} ms left)`);
    await held.release();
    await (await waiting).release();
  });
});

describe('reap.lua', () => {
  it('never frees a hold of a live client, of another owner, or with other clients; frees a dead one and hands it to the fair waiter', async () => {
    const admin = connect(server);
    const keys = lockKeys('rs1', 'r');
    const live = padlockOn(server, { prefix: 'rs1' });
    const lease = await live.mutex('r').acquire();
    const holder = { owner: lease.owner, clients: redisInternals(live).clientId };
    const liveKeys = [livenessKey('rs1', redisInternals(live).clientId)];
    assert.equal(await runCall(admin, MutexProtocol.reap(keys, holder, liveKeys, false)), 'alive', 'a live client');
    assert.equal(await runCall(admin, MutexProtocol.reap(keys, { ...holder, owner: 'f'.repeat(32) }, liveKeys, false)), 'changed', 'another owner');
    assert.equal(await runCall(admin, MutexProtocol.reap(keys, { ...holder, clients: 'deadbeefdeadbeef' }, [livenessKey('rs1', 'deadbeefdeadbeef')], false)), 'changed', 'other clients');
    // Even told the keys were checked elsewhere, it frees only that owner with those clients.
    assert.equal(await runCall(admin, MutexProtocol.reap(keys, { ...holder, owner: 'f'.repeat(32) }, undefined, false)), 'changed');
    await assert.rejects(runCall(admin, MutexProtocol.reap(keys, holder, [], false)), /1 clients but 0 liveness keys/, 'every client must be checked');
    assert.equal((await readLock(admin, keys.lock))?.owner, lease.owner, 'still held by its live owner');
    assert.equal(lease.isHeld, true);
    await lease.release();

    // A hold whose two clients are dead (no liveness key), with a fair waiter queued.
    const dead = { owner: 'd'.repeat(32), clients: '0123456789abcdef,fedcba9876543210' };
    const deadKeys = dead.clients.split(',').map((id) => livenessKey('rs1', id));
    const fence = (await readLock(admin, keys.lock))?.fence ?? 0;
    await admin.set(keys.lock, `${fence + 1}|${dead.owner}|3|${dead.clients}| `, 'PX', 60_000);
    const waiterSide = padlockOn(server, { prefix: 'rs1' });
    const waiting = waiterSide.fairMutex('r').acquire({ waitMs: 10_000 });
    assert.ok(await eventually(async () => (await admin.llen(keys.queue)) === 1));
    await admin.set(deadKeys[1] ?? '', '1', 'PX', 60_000); // one of them alive
    assert.equal(await runCall(admin, MutexProtocol.reap(keys, dead, deadKeys, false)), 'alive', 'alive while any of its clients is');
    await admin.del(deadKeys[1] ?? '');
    assert.equal(await runCall(admin, MutexProtocol.reap(keys, dead, deadKeys, false)), 'reaped');
    const next = await waiting;
    assert.equal(next.fence, fence + 2, 'handed over with the next fence');
    assert.deepEqual((({ owner, count, clients }) => ({ owner, count, clients }))(parseLock(await admin.get(keys.lock)) ?? { owner: '', count: 0, clients: '' }), { owner: next.owner, count: 1, clients: redisInternals(waiterSide).clientId });
    assert.equal(await runCall(admin, MutexProtocol.reap(keys, dead, deadKeys, false)), 'changed', 'a second reap finds the new holder');
    await next.release();
  });

  it('a hold of a foreign shape is refused as padlock refuses it elsewhere (WRONGTYPE), before anything is written', async () => {
    const p = padlockOn(server, { prefix: 'rs2' });
    const admin = connect(server);
    const keys = lockKeys('rs2', 'old');
    await admin.set(keys.lock, `5|${'a'.repeat(32)}|1| `, 'PX', 60_000); // the layout before clients were recorded
    const topology = new SingleServer(fromIoredis(admin), 5_000);
    await assert.rejects(reapIfDead(topology, 'rs2', keys, { owner: 'a'.repeat(32), clients: '0123456789abcdef' }), (e) => e instanceof RedisCommandError && /WRONGTYPE/.test(e.message));
    await assert.rejects(p.mutex('old').tryAcquire(), RedisCommandError);
    assert.equal(await admin.get(keys.lock), `5|${'a'.repeat(32)}|1| `);
  });
});

describe('a dead holder (SIGKILL) with a 60 s lease', () => {
  it('is reaped by a waiter with reapDeadHolders within livenessMs, and that waiter gets the lock', async () => {
    const livenessMs = 2_000;
    const { child, held } = await holder(server.url, 'dead:opt', { livenessMs });
    const admin = connect(server);
    const keys = lockKeys('padlock', 'dead:opt');
    const waiter = padlockOn(server, { reapDeadHolders: true });
    const waiting = waiter.mutex('dead:opt').acquire({ waitMs: 30_000 });
    assert.ok(await eventually(async () => (await admin.llen(keys.queue)) === 1));
    await delay(livenessMs); // waited through several heartbeats (liveness checks) of a live holder
    assert.equal((await readLock(admin, keys.lock))?.owner, held.owner, 'a live holder is left alone');
    await kill(child);
    const killedAt = monotonicNow();
    const lease = await waiting;
    const waited = monotonicNow() - killedAt;
    assert.ok(waited < livenessMs + 2_000, `got the lock ${waited.toFixed(0)} ms after the kill (livenessMs ${livenessMs}, a heartbeat 1 000; the lease had ~60 s left)`);
    assert.ok(lease.fence > held.fence);
    await lease.release();
  });

  it('is reaped by `padlock reap` (--json; --dry-run frees nothing), and the fair waiter gets the lock', async () => {
    const livenessMs = 1_500;
    const { child, held } = await holder(server.url, 'dead:cli', { livenessMs, prefix: 'rp1' });
    const admin = connect(server);
    const keys = lockKeys('rp1', 'dead:cli');
    const waiter = padlockOn(server, { prefix: 'rp1' });
    const waiting = waiter.fairMutex('dead:cli').acquire({ waitMs: 30_000 });
    assert.ok(await eventually(async () => (await admin.llen(keys.queue)) === 1));

    const alive = parsed<ReapReport>(await reap('rp1', '--json'));
    assert.deepEqual([alive.checked, alive.reaped, alive.dryRun], [1, 0, false]);
    assert.deepEqual(alive.locks, [{ name: 'dead:cli', outcome: 'alive', owner: held.owner, fence: held.fence, clients: [held.clientId], waiting: 1 }]);
    assert.ok(!Number.isNaN(Date.parse(alive.at)));
    assert.deepEqual(alive.redis, { url: server.url, topology: 'server' });

    await kill(child);
    assert.ok(await eventually(async () => (await admin.exists(livenessKey('rp1', held.clientId))) === 0, livenessMs + 1_000), 'its liveness key ran out');
    const dry = parsed<ReapReport>(await reap('rp1', '--json', '--dry-run'));
    assert.deepEqual([dry.dryRun, dry.reaped, dry.locks[0]?.outcome], [true, 1, 'dead']);
    assert.equal((await readLock(admin, keys.lock))?.owner, held.owner, 'a dry run frees nothing');
    const text = await reap('rp1', '--dry-run');
    assert.match(text.stdout, /^dead +'dead:cli' held by [0-9a-f]{8}… \(client [0-9a-f]{16}: dead\), fence \d+: would be reaped$/m);

    const report = parsed<ReapReport>(await reap('rp1', '--json'));
    assert.deepEqual(report.locks, [{ name: 'dead:cli', outcome: 'reaped', owner: held.owner, fence: held.fence, clients: [held.clientId], waiting: 1 }]);
    assert.equal(report.reaped, 1);
    const next = await waiting;
    assert.ok(next.fence > held.fence);
    // A semaphore held beside it: `list` counts it, reap leaves it alone and says so.
    const permit = await waiter.semaphore('beside:cli', 2).acquire();
    const after = await reap('rp1');
    assert.equal(after.code, 0, after.stderr);
    assert.equal(after.stdout, "1 held mutex under prefix 'rp1' (and 1 held read/write lock or semaphore, which reap leaves alone): 0 reaped, 1 held by live clients.\n");
    await permit.release();
    await next.release();
  });

  it('is reaped by `padlock reap --every` as soon as its key runs out; Ctrl-C ends the monitor with 0', async () => {
    const livenessMs = 1_500;
    const { child } = await holder(server.url, 'dead:every', { livenessMs, prefix: 'rp2' });
    let killedAt = 0;
    let reapedAt = 0;
    let stopped = false;
    const run = await runBin(['reap', '--every', '0.2', '--url', server.url, '--prefix', 'rp2'], {
      onStdout: (soFar, pid) => {
        if (killedAt === 0 && /every 200 ms/.test(soFar)) {
          killedAt = -1;
          void kill(child).then(() => (killedAt = monotonicNow()));
        }
        if (!stopped && /reaped +'dead:every'/.test(soFar)) {
          stopped = true;
          reapedAt = monotonicNow();
          process.kill(pid, 'SIGINT');
        }
      },
    });
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /^\d\d:\d\d:\d\d +reaped +'dead:every' \(was held by [0-9a-f]{8}… \(client [0-9a-f]{16}: dead\), fence \d+\)$/m);
    assert.ok(reapedAt - killedAt < livenessMs + 1_000, `reaped ${(reapedAt - killedAt).toFixed(0)} ms after the kill`);
    assert.equal(await padlockOn(server, { prefix: 'rp2' }).mutex('dead:every').isLocked(), false);
  });
});

describe('a live holder keeps its lock', () => {
  it('stalled (its event loop blocked for less than livenessMs), then holding on for several livenessMs, against a reaping waiter and `padlock reap --every`', async () => {
    const livenessMs = 3_000;
    const { child, held } = await holder(server.url, 'alive:stall', { livenessMs, prefix: 'st1' });
    const admin = connect(server);
    const keys = lockKeys('st1', 'alive:stall');
    const waiter = padlockOn(server, { prefix: 'st1', reapDeadHolders: true });
    let settled = false;
    const waiting = waiter.mutex('alive:stall').acquire({ waitMs: 60_000 }).finally(() => (settled = true));
    assert.ok(await eventually(async () => (await admin.llen(keys.queue)) === 1));
    let stop: (() => void) | undefined;
    const monitor = runBin(['reap', '--every', '0.2', '--json', '--url', server.url, '--prefix', 'st1'], {
      onStdout: (_soFar, pid) => (stop ??= () => process.kill(pid, 'SIGINT')),
    });

    const stalled = nextMessage<{ stalled: number; held: boolean }>(child);
    child.send({ stall: 1_800 });
    assert.deepEqual(await stalled, { stalled: 1_800, held: true }, 'the holder still holds after its stall');
    await delay(2 * livenessMs); // a long hold by a live process
    const check = nextMessage<{ held: boolean; fence: number }>(child);
    child.send({ check: true });
    assert.deepEqual(await check, { held: true, fence: held.fence });
    assert.equal((await readLock(admin, keys.lock))?.owner, held.owner, 'nobody took it');
    assert.equal(settled, false, 'the waiter still waits');

    stop?.();
    const rounds = (await monitor).stdout.trimEnd().split('\n').map((line) => JSON.parse(line) as ReapReport);
    assert.ok(rounds.length >= 10, `${rounds.length} reap rounds ran meanwhile`);
    assert.ok(rounds.every((r) => r.reaped === 0 && r.locks.every((l) => l.outcome === 'alive')), 'every round found it alive');

    await kill(child);
    const lease = await waiting; // dead now: reaped within livenessMs
    assert.ok(lease.fence > held.fence);
    await lease.release();
  });
});

describe('on Redlock (3 masters)', () => {
  it('a waiter with reapDeadHolders reaps a SIGKILLed holder on every master (each checks its own copy of the liveness key)', async () => {
    const servers = await startServers(3);
    const livenessMs = 1_500;
    const { child, held } = await holder(`redlock:${servers.map((s) => s.url).join(',')}`, 'dead:rl', { livenessMs });
    const admins = servers.map((s) => connect(s));
    const keys = lockKeys('padlock', 'dead:rl');
    // The holder returned once a majority granted; the third master's grant (and liveness write) may still be on its way.
    const onEvery = (check: (admin: (typeof admins)[number]) => Promise<boolean>): Promise<boolean> => eventually(async () => (await Promise.all(admins.map(check))).every(Boolean), 2_000);
    assert.ok(await onEvery(async (admin) => (await readLock(admin, keys.lock))?.clients === held.clientId), 'each master records the client');
    assert.ok(await onEvery(async (admin) => (await admin.pttl(livenessKey('padlock', held.clientId))) > 0), 'each master has the liveness key');
    const waiter = new Padlock({ redis: servers.map((s) => connect(s)), reapDeadHolders: true });
    try {
      const waiting = waiter.mutex('dead:rl').acquire({ waitMs: 30_000 });
      await delay(livenessMs);
      await kill(child);
      const killedAt = monotonicNow();
      const lease = await waiting;
      assert.ok(monotonicNow() - killedAt < livenessMs + 2_500, `got it ${(monotonicNow() - killedAt).toFixed(0)} ms after the kill`);
      assert.ok(lease.fence > held.fence);
      await lease.release();
    } finally {
      await waiter.close();
    }
  });
});
