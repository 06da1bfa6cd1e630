/**
 * The semaphore on one server: permits, FIFO, the limit and setPermits, available(), re-entry,
 * resends, bad input, renewal in batches, expiry of a holder's lease on the server's clock, and
 * every key expiring once unused.
 */
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import type { Redis } from 'ioredis';
import type { RedisServer } from '../src/devserver/redis-server.js';
import { LockTimeoutError, PadlockOptionError, PermitLimitError } from '../src/index.js';
import { semaphoreKeys, SemaphoreProtocol, semaphoreScriptKeys } from '../src/stores/redis/kinds/semaphore-protocol.js';
import { probeScripts, probeWakes } from './harness/probes.js';
import { connect, delay, eventually, padlockOn, runCall, startServer } from './harness/redis.js';

let server: RedisServer;
let admin: Redis;
before(async () => {
  server = await startServer();
  admin = connect(server);
});

const keysOf = (name: string): string[] => semaphoreScriptKeys(semaphoreKeys('padlock', name));
const queueOf = (name: string): string => semaphoreKeys('padlock', name).queue;

/** Resolves once `n` waiters are queued for semaphore `name`. */
async function queued(name: string, n: number): Promise<void> {
  assert.ok(await eventually(async () => (await admin.llen(queueOf(name))) === n, 10_000), `${n} waiter(s) queued on ${name}`);
}

describe('semaphore: permits', () => {
  it('grants up to the limit, then tryAcquire is null, and a release lets the next one in', async () => {
    const sem = padlockOn(server).semaphore('sem:basic', 3);
    const a = await sem.acquire({ permits: 2 });
    const b = await sem.acquire();
    assert.equal(await sem.tryAcquire(), null, 'all 3 permits are held');
    assert.equal(await sem.available(), 0);
    await b.release();
    assert.equal(await sem.available(), 1);
    const c = await sem.tryAcquire();
    assert.ok(c !== null);
    assert.equal(await sem.tryAcquire({ permits: 2 }), null, 'only 0 left');
    await Promise.all([a.release(), c.release()]);
    assert.equal(await sem.available(), 3);
    assert.equal(await sem.isLocked(), false);
  });

  it('gives every acquisition a fresh fence, strictly greater than every earlier one', async () => {
    const sem = padlockOn(server).semaphore('sem:fences', 2);
    const fences: number[] = [];
    for (let i = 0; i < 5; i++) {
      const [x, y] = await Promise.all([sem.acquire(), sem.acquire()]);
      fences.push(Math.min(x.fence, y.fence), Math.max(x.fence, y.fence));
      assert.notEqual(x.fence, y.fence, 'two holders at once have distinct fences');
      await Promise.all([x.release(), y.release()]);
    }
    for (let i = 1; i < fences.length; i++) assert.ok(fences[i]! > fences[i - 1]!, `fences ${fences.join(', ')}`);
  });

  it('isLocked: any permit held; forceRelease frees every holder and admits the waiters that fit', async () => {
    const owner = padlockOn(server);
    const sem = owner.semaphore('sem:force', 2);
    assert.equal(await sem.isLocked(), false);
    const [a, b] = await Promise.all([sem.acquire(), sem.acquire()]);
    assert.equal(await sem.isLocked(), true);
    const waiting = padlockOn(server).semaphore('sem:force', 2).acquire({ permits: 2 });
    await queued('sem:force', 1);
    assert.equal(await sem.forceRelease(), true);
    const lease = await waiting;
    assert.ok(lease.fence > Math.max(a.fence, b.fence));
    await assert.rejects(a.release(), { name: 'LockNotHeldError' });
    await lease.release();
    assert.equal(await sem.forceRelease(), false, 'nothing held');
    await b.release().catch(() => undefined);
  });
});

describe('semaphore: FIFO', () => {
  it('a large request at the head is not overtaken by a stream of small ones', async () => {
    const name = 'sem:fifo';
    const small = padlockOn(server).semaphore(name, 4);
    const held = await Promise.all([small.acquire(), small.acquire()]);
    // 2 of 4 free: a request for 3 waits at the head.
    const large = padlockOn(server).semaphore(name, 4).acquire({ permits: 3 });
    await queued(name, 1);
    assert.equal(await small.tryAcquire(), null, 'a small request does not overtake it although 2 permits are free');
    let smallsServed = 0;
    const smalls = [0, 1, 2].map(() => small.acquire({ waitMs: 30_000 }).then((l) => (smallsServed++, l)));
    await queued(name, 4);
    await held[0].release();
    const big = await large;
    assert.equal(smallsServed, 0, 'the large request was served before the small ones queued behind it');
    assert.equal(await small.available(), 0, '3 for the large request, 1 still held');
    await held[1].release();
    await big.release();
    const rest = await Promise.all(smalls);
    await Promise.all(rest.map((l) => l.release()));
  });

  it('a release hands permits to as many head waiters as now fit, each told with a message (no retry)', async () => {
    const name = 'sem:handoff';
    const holder = await padlockOn(server).semaphore(name, 3).acquire({ permits: 3 });
    const waiterSide = padlockOn(server);
    const wakes = probeWakes(waiterSide);
    const scripts = probeScripts(waiterSide);
    const sem = waiterSide.semaphore(name, 3);
    const waiting = [sem.acquire({ permits: 1 }), sem.acquire({ permits: 2 })];
    await queued(name, 2);
    wakes.messagesOnly();
    const attempts = scripts.get('semaphore-acquire.lua');
    await holder.release();
    const leases = await Promise.all(waiting);
    assert.equal(scripts.get('semaphore-acquire.lua'), attempts, 'the waiters sent no attempt after the release: the messages granted their permits');
    assert.equal(wakes.messages, 2);
    await Promise.all(leases.map((l) => l.release()));
  });
});

describe('semaphore: the limit', () => {
  it('a request over the limit is refused at once with PermitLimitError, and leaves nothing queued', async () => {
    const sem = padlockOn(server).semaphore('sem:over', 2);
    await assert.rejects(sem.acquire({ permits: 3 }), (e: unknown) => e instanceof PermitLimitError && e.permits === 3 && e.limit === 2 && e.code === 'PERMIT_LIMIT');
    await assert.rejects(sem.tryAcquire({ permits: 3 }), PermitLimitError);
    assert.equal(await admin.exists(queueOf('sem:over')), 0);
  });

  it('setPermits up admits the queued waiters that now fit, at once', async () => {
    const name = 'sem:up';
    const sem = padlockOn(server).semaphore(name, 1);
    const holder = await sem.acquire();
    const waiters = [padlockOn(server).semaphore(name, 1).acquire(), padlockOn(server).semaphore(name, 1).acquire()];
    await queued(name, 2);
    await sem.setPermits(3);
    const leases = await Promise.all(waiters);
    assert.equal(await sem.available(), 0);
    await Promise.all([holder, ...leases].map((l) => l.release()));
    assert.equal(await padlockOn(server).semaphore(name, 1).available(), 3, 'the stored limit outlives the holds');
  });

  it('setPermits down: holders keep their permits; a waiter asking more than the new limit is refused, one that fits is served later', async () => {
    const name = 'sem:down';
    const sem = padlockOn(server).semaphore(name, 4);
    const held = await Promise.all([sem.acquire({ permits: 2 }), sem.acquire({ permits: 2 })]);
    const big = padlockOn(server).semaphore(name, 4).acquire({ permits: 3 });
    const small = padlockOn(server).semaphore(name, 4).acquire({ permits: 1 });
    await queued(name, 2);
    await sem.setPermits(2);
    await assert.rejects(big, (e: unknown) => e instanceof PermitLimitError && e.limit === 2, 'never waits forever');
    assert.equal(held.every((l) => l.isHeld), true, 'holders above the lowered limit keep their permits');
    assert.equal(await sem.available(), 0);
    await held[0].release();
    assert.equal(await sem.tryAcquire(), null, '2 held of a limit of 2: nothing for a newcomer');
    await held[1].release();
    const lease = await small;
    assert.equal(await sem.available(), 1);
    await lease.release();
  });

  it('bad permits are refused with PadlockOptionError before anything is sent', async () => {
    const padlock = padlockOn(server);
    const scripts = probeScripts(padlock);
    for (const bad of [0, -1, 1.5, NaN, Infinity, '2', null, 2 ** 31]) {
      assert.throws(() => padlock.semaphore('sem:bad', bad as number), (e: unknown) => e instanceof PadlockOptionError && e.option === 'permits');
    }
    assert.throws(() => padlock.semaphore('', 2), (e: unknown) => e instanceof PadlockOptionError && e.option === 'name');
    const sem = padlock.semaphore('sem:bad', 2);
    for (const bad of [0, 2.5, '1', -3]) {
      await assert.rejects(sem.acquire({ permits: bad as number }), (e: unknown) => e instanceof PadlockOptionError && e.option === 'permits');
      await assert.rejects(sem.tryAcquire({ permits: bad as number }), PadlockOptionError);
      await assert.rejects(sem.withLock(() => 1, { permits: bad as number }), PadlockOptionError);
      await assert.rejects(sem.setPermits(bad as number), (e: unknown) => e instanceof PadlockOptionError && e.option === 'permits');
    }
    await assert.rejects(sem.acquire({ permits: 1, waitMs: -1 }), (e: unknown) => e instanceof PadlockOptionError && e.option === 'waitMs');
    assert.equal([...scripts.values()].reduce((sum, n) => sum + n, 0), 0, 'no script was sent');
    assert.deepEqual(await admin.keys('padlock:{sem:bad}*'), [], 'nothing was written');
  });
});

describe('semaphore: leases', () => {
  it('a holder that stops renewing loses its permits on the server\'s clock, and a waiter gets them with no message', async () => {
    const name = 'sem:expiry';
    const dead = await padlockOn(server).semaphore(name, 1).acquire({ leaseMs: 300 }); // fixed lease: no renewal
    const waiterSide = padlockOn(server);
    const wakes = probeWakes(waiterSide);
    const lease = await waiterSide.semaphore(name, 1).acquire({ waitMs: 10_000 });
    assert.ok(lease.fence > dead.fence);
    assert.equal(wakes.messages, 0, 'woken by its own timer (the busy reply\'s pttl), not by a message');
    assert.equal(dead.isHeld, false);
    await lease.release();
  });

  it('the watchdog renews many semaphore holds in one script call', async () => {
    const padlock = padlockOn(server, { leaseMs: 300 });
    const scripts = probeScripts(padlock);
    const sem = padlock.semaphore('sem:renew', 10);
    const leases = await Promise.all(Array.from({ length: 6 }, () => sem.acquire()));
    await delay(1_000); // three leases long: each hold needed several renewals
    assert.ok(leases.every((l) => l.isHeld));
    const renewals = scripts.get('semaphore-renew.lua') ?? 0;
    assert.ok(renewals > 0 && renewals <= 30, `${renewals} renew calls for 6 holds over ~10 renewal rounds: they are batched`);
    assert.equal(await sem.available(), 4);
    await Promise.all(leases.map((l) => l.release()));
  });

  it('every key expires once unused: holders and leases with the last lease, meta an hour later, the queue within 3 allowances', async () => {
    const name = 'sem:footprint';
    const [meta, holders, leases, queue] = keysOf(name);
    const sem = padlockOn(server, { leaseMs: 600 }).semaphore(name, 1);
    const lease = await sem.acquire();
    const waiting = padlockOn(server, { leaseMs: 600 }).semaphore(name, 1).acquire();
    await queued(name, 1);
    for (const key of [meta!, holders!, leases!, queue!]) assert.ok((await admin.pttl(key)) > 0, `${key} has an expiry`);
    assert.ok((await admin.pttl(holders!)) <= 600);
    await lease.release();
    const next = await waiting;
    await next.release();
    assert.deepEqual((await admin.keys(`padlock:{${name}}*`)).sort(), [meta!], 'only meta (fence, log) is left');
    const pttl = await admin.pttl(meta!);
    assert.ok(pttl > 3_000_000 && pttl <= 3_600_000 + 600, `meta lives ${pttl} ms`);
  });

  it('an abandoned wait leaves nothing in the queue, and passes on what was handed to it', async () => {
    const name = 'sem:abort';
    const sem = padlockOn(server).semaphore(name, 2);
    const holder = await sem.acquire({ permits: 2 });
    const controller = new AbortController();
    const big = padlockOn(server).semaphore(name, 2).acquire({ permits: 2, signal: controller.signal });
    const small = padlockOn(server).semaphore(name, 2).acquire({ permits: 1 });
    await queued(name, 2);
    await assert.rejects(padlockOn(server).semaphore(name, 2).acquire({ waitMs: 50 }), LockTimeoutError);
    controller.abort(new Error('gave up'));
    await assert.rejects(big, { message: 'gave up' });
    await holder.release();
    const lease = await small; // the large head left: the small one behind it is admitted
    assert.ok(await eventually(async () => (await admin.llen(queueOf(name))) === 0));
    assert.equal(await sem.available(), 1);
    await lease.release();
  });
});

describe('semaphore: re-entry', () => {
  it('nested in withLock, an acquisition re-enters: same owner and fence, a hold count more, no more permits', async () => {
    const sem = padlockOn(server).semaphore('sem:reenter', 3);
    await sem.withLock(async (outer) => {
      const inner = await sem.acquire({ permits: 3 });
      assert.equal(inner.owner, outer.owner);
      assert.equal(inner.fence, outer.fence);
      assert.equal(inner.holdCount, 2);
      assert.equal(await sem.available(), 1, 'the re-entry holds the same 2 permits');
      await inner.release();
      assert.equal(await sem.available(), 1, 'still held by the outer lease');
    }, { permits: 2 });
    assert.equal(await sem.available(), 3);
  });

  it('acquire({ owner }) re-enters from another Padlock; an owner that holds nothing is refused', async () => {
    const sem = padlockOn(server).semaphore('sem:owner', 2);
    const lease = await sem.acquire();
    const remote = padlockOn(server).semaphore('sem:owner', 2);
    const again = await remote.acquire({ owner: lease.owner });
    assert.equal(again.fence, lease.fence);
    assert.equal(again.holdCount, 2);
    await again.release();
    await lease.release();
    await assert.rejects(remote.acquire({ owner: lease.owner }), { name: 'LockNotHeldError' });
  });
});

describe('semaphore: resends', () => {
  it('a resent release, re-entry or attempt changes a count once', async () => {
    const name = 'sem:resend';
    const protocol = new SemaphoreProtocol(semaphoreKeys('padlock', name), 2, 'c0ffee', false);
    const owner = 'resend-owner-0000000001';
    const attempt = protocol.attempt(owner, 1, 10_000, 'try', 1_000);
    const first = await runCall(admin, attempt);
    const again = await runCall(admin, attempt);
    assert.ok(first.status === 'acquired' && again.status === 'acquired');
    assert.equal(again.fence, first.fence, 'a resent attempt returns the hold it made');
    const reenter = protocol.reenter(owner, 10_000);
    assert.deepEqual([(await runCall(admin, reenter)).status, (await runCall(admin, reenter)).status], ['acquired', 'acquired']);
    const release = protocol.release(owner, 1);
    assert.deepEqual(await runCall(admin, release), { status: 'released', remaining: 1 });
    assert.deepEqual(await runCall(admin, release), { status: 'released', remaining: 1 }, 'the resend counted once');
    const state = await runCall(admin, protocol.inspect());
    assert.equal(state.used, 1, 'one permit still held');
    const last = protocol.release(owner, 1);
    assert.deepEqual(await runCall(admin, last), { status: 'released', remaining: 0 });
    assert.deepEqual(await runCall(admin, last), { status: 'released', remaining: 0 }, 'a resent last release is recognised after the hold is gone');
    assert.deepEqual(await runCall(admin, protocol.release(owner, 1)), { status: 'not-held' }, 'a new release of nothing is refused');
  });

  it('a resent partial release counts once however many other holders released meanwhile', async () => {
    const name = 'sem:resend-busy';
    const protocol = new SemaphoreProtocol(semaphoreKeys('padlock', name), 2, 'c0ffee', false);
    const owner = 'resend-owner-0000000002';
    assert.equal((await runCall(admin, protocol.attempt(owner, 1, 10_000, 'try', 1_000))).status, 'acquired');
    assert.equal((await runCall(admin, protocol.reenter(owner, 10_000))).status, 'acquired');
    const release = protocol.release(owner, 1);
    assert.deepEqual(await runCall(admin, release), { status: 'released', remaining: 1 });
    // 100 other holders come and go: more final releases than the semaphore's own log keeps.
    for (let i = 0; i < 100; i++) {
      const other = `other-owner-${String(i).padStart(12, '0')}`;
      assert.equal((await runCall(admin, protocol.attempt(other, 1, 10_000, 'try', 1_000))).status, 'acquired');
      await runCall(admin, protocol.release(other, 1));
    }
    assert.deepEqual(await runCall(admin, release), { status: 'released', remaining: 1 }, 'the resend is in the holder\'s own log');
    assert.equal((await runCall(admin, protocol.inspect())).used, 1);
    await runCall(admin, protocol.release(owner, 1));
  });
});
