/**
 * The main behaviour suite: exclusion, reentrancy, fences, resends, waiting, aborting, closing and
 * leak checks, once per topology (./harness/suite.ts) and per lock kind.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Lease, LockLostError, LockNotHeldError, LockTimeoutError, Padlock, PadlockClosedError } from '../src/index.js';
import { MutexProtocol } from '../src/stores/redis/kinds/mutex-protocol.js';
import type { GaveUp, ScriptCall } from '../src/stores/redis/topology/topology.js';
import { forcedChannel, lockKeys } from '../src/keys.js';
import { tellHoldersScript } from '../src/stores/redis/scripts/index.js';
import { publishCommand } from '../src/stores/redis/kinds/mutex-protocol.js';
import { anyQuorum } from '../src/stores/redis/topology/quorum.js';
import { activeResources, delay, eventually, runCall, settledResources } from './harness/redis.js';
import { probeWakes } from './harness/probes.js';
import { TOPOLOGIES, clientsOf, eachKind, useTopology } from './harness/suite.js';
import { holdsOf, readLock } from './harness/lock-state.js';
import { opsOf } from './harness/clients.js';
import { redisInternals } from '../src/testing.js';

for (const factory of TOPOLOGIES) {
  describe(factory.name, () => {
    const topology = useTopology(factory);
    eachKind(topology, (kind) => {
      describe(`${kind}: exclusion and fencing`, () => {
        it('excludes a second owner and grants the lock after release', async () => {
          const a = await topology.padlock();
          const b = await topology.padlock();
          const first = await a[kind]('ex:1').acquire();
          assert.equal(await b[kind]('ex:1').tryAcquire(), null);
          assert.equal(await a[kind]('ex:1').tryAcquire(), null, 'an unrelated acquisition in the same process is another owner');
          await first.release();
          const second = await b[kind]('ex:1').tryAcquire();
          assert.ok(second);
          assert.ok(second.fence > first.fence);
          await second.release();
        });

        it('returns strictly increasing fences, also after a force-release', async () => {
          const p = await topology.padlock();
          const lock = p[kind]('ex:fence');
          const fences: number[] = [];
          for (let i = 0; i < 5; i++) {
            const lease = await lock.acquire();
            fences.push(lease.fence);
            if (i % 2 === 0) await lease.release();
            else assert.equal(await lock.forceRelease(), true);
          }
          for (let i = 1; i < fences.length; i++) assert.ok(fences[i]! > fences[i - 1]!, `fences ${fences.join(',')}`);
        });

        it('isLocked and forceRelease report the state', async () => {
          const p = await topology.padlock();
          const lock = p[kind]('ex:state');
          assert.equal(await lock.isLocked(), false);
          assert.equal(await lock.forceRelease(), false);
          const lease = await lock.acquire();
          assert.equal(await lock.isLocked(), true);
          await lease.release();
          assert.equal(await lock.isLocked(), false);
        });

        it('concurrent acquirers in one process are serialised (no two inside at once)', async () => {
          const p = await topology.padlock();
          let inside = 0;
          let maxInside = 0;
          let done = 0;
          await Promise.all(
            Array.from({ length: 20 }, () =>
              p[kind]('ex:concurrent').withLock(async () => {
                inside++;
                maxInside = Math.max(maxInside, inside);
                await delay(2);
                inside--;
                done++;
              }),
            ),
          );
          assert.equal(maxInside, 1);
          assert.equal(done, 20);
        });
      });

      describe(`${kind}: reentrancy`, () => {
        it('re-enters inside withLock: same owner, same fence, hold count + 1', async () => {
          const p = await topology.padlock();
          const lock = p[kind]('re:ctx');
          await lock.withLock(async (outer) => {
            const inner = await lock.acquire({ waitMs: 0 });
            assert.equal(inner.owner, outer.owner);
            assert.equal(inner.fence, outer.fence);
            assert.equal(inner.holdCount, 2);
            const nested = await p[kind]('re:ctx').withLock((l) => l.holdCount, { waitMs: 0 });
            assert.equal(nested, 3);
            await inner.release();
            assert.equal(await lock.isLocked(), true, 'the key stays while holds remain');
          });
          assert.equal(await lock.isLocked(), false, 'the key goes when the count reaches zero');
        });

        it('re-enters by owner token from a second Padlock (an RPC hop)', async () => {
          const a = await topology.padlock();
          const b = await topology.padlock();
          const outer = await a[kind]('re:rpc').acquire();
          const inner = await b[kind]('re:rpc').acquire({ owner: outer.owner, waitMs: 0 });
          assert.equal(inner.fence, outer.fence);
          assert.equal(inner.holdCount, 2);
          await outer.release();
          assert.equal(await a[kind]('re:rpc').isLocked(), true);
          await inner.release();
          assert.equal(await a[kind]('re:rpc').isLocked(), false);
        });

        it('refuses to re-enter for an owner that holds nothing', async () => {
          const p = await topology.padlock();
          await assert.rejects(p[kind]('re:none').acquire({ owner: 'f'.repeat(32) }), LockNotHeldError);
          assert.equal(await p[kind]('re:none').isLocked(), false);
        });

        it('a re-entry never shortens the lease', async () => {
          const p = await topology.padlock();
          const keys = lockKeys('padlock', 're:lease');
          const ttlAbove = (ms: number): Promise<boolean> => topology.read(async (admin) => (await admin.pttl(keys.lock)) > ms);
          const outer = await p[kind]('re:lease').acquire({ leaseMs: 60_000 });
          const inner = await p[kind]('re:lease').acquire({ owner: outer.owner, leaseMs: 1_000 });
          assert.ok(await ttlAbove(50_000));
          const longer = await p[kind]('re:lease').acquire({ owner: outer.owner, leaseMs: 120_000 });
          assert.ok(await ttlAbove(100_000), 'a longer re-entry lengthens it');
          await longer.release();
          await inner.release();
          await outer.release();
        });
      });

      describe(`${kind}: ownership and idempotence`, () => {
        it('release by a non-owner or after expiry rejects with LockNotHeldError and changes nothing', async () => {
          const p = await topology.padlock();
          const lease = await p[kind]('own:expire').acquire({ leaseMs: 50 });
          await delay(120);
          const other = await p[kind]('own:expire').acquire({ waitMs: 0 });
          await assert.rejects(lease.release(), LockNotHeldError);
          assert.equal(other.isHeld, true);
          assert.equal(await p[kind]('own:expire').isLocked(), true, 'the new holder keeps the lock');
          await assert.rejects(lease.extend(), LockNotHeldError);
          await other.release();
        });

        it('releasing the same lease twice is a no-op', async () => {
          const p = await topology.padlock();
          const lock = p[kind]('own:twice');
          const outer = await lock.acquire();
          const inner = await lock.acquire({ owner: outer.owner });
          await inner.release();
          await inner.release();
          await inner[Symbol.asyncDispose]();
          assert.equal(await lock.isLocked(), true, 'the second release did not take the outer hold');
          await outer.release();
          assert.equal(outer.isHeld, false);
        });

        it('a resent acquire or release script does not change the count twice', async () => {
          // The scripts themselves, sent by hand: on each copy of the data (each Redlock master computes its own fence).
          for (const admin of topology.readers()) {
            const keys = lockKeys('padlock', `own:resend:${kind}`);
            const owner = 'a'.repeat(32);
            const protocol = new MutexProtocol(keys, kind === 'mutex' ? 'mutex' : 'fair', 'client');
            // Each call is built once and sent twice, as ioredis resends a command after a reconnect.
            const fresh = protocol.attempt(owner, 10_000, 'queue', 1_000);
            const first = await runCall(admin, fresh);
            assert.ok(first.status === 'acquired' && first.holdCount === 1 && first.pttl === 10_000, JSON.stringify(first));
            const again = await runCall(admin, fresh);
            assert.ok(again.status === 'acquired' && again.holdCount === 1 && again.fence === first.fence, 'a resent fresh attempt is the same hold');
            assert.equal(await holdsOf(admin, keys.lock, owner), 1);
            const reentry = protocol.reenter(owner, 10_000);
            await runCall(admin, reentry);
            await runCall(admin, reentry);
            assert.equal(await holdsOf(admin, keys.lock, owner), 2, 'a resent re-entry counted once');
            const release1 = protocol.release(owner, 1);
            await runCall(admin, release1);
            await runCall(admin, release1);
            assert.equal(await holdsOf(admin, keys.lock, owner), 1, 'a resent release took one hold, not two');
            const release2 = protocol.release(owner, 1);
            assert.deepEqual(await runCall(admin, release2), { status: 'released', remaining: 0 });
            assert.deepEqual(await runCall(admin, release2), { status: 'released', remaining: 0 }, 'a resent final release still succeeds');
            assert.deepEqual(await runCall(admin, protocol.release(owner, 1)), { status: 'not-held' }, 'a new release finds nothing');
          }
        });

        it('a free lock is taken at exactly the next fence after its tombstone, across a carry too, and freed to a tombstone that keeps it', async () => {
          // The scripts sent by hand on each copy of the data, each from a tombstone written here.
          for (const admin of topology.readers()) {
            const keys = lockKeys('padlock', `fence:carry:${kind}`);
            const protocol = new MutexProtocol(keys, kind === 'mutex' ? 'mutex' : 'fair', 'client');
            for (const [last, next] of [['1799999999999999', 1_800_000_000_000_000], ['1800000000000000', 1_800_000_000_000_001], ['1800000000000008', 1_800_000_000_000_009]] as const) {
              await admin.set(keys.lock, `${last}||0|| r1 `, 'PX', 60_000);
              const owner = `${next}`.padStart(32, 'a');
              const taken = await runCall(admin, protocol.attempt(owner, 10_000, 'try', 1_000));
              assert.deepEqual(taken, { status: 'acquired', fence: next, holdCount: 1, pttl: 10_000 }, `after ${last}`);
              assert.deepEqual(await readLock(admin, keys.lock), { fence: next, owner, count: 1, clients: 'client', log: ' r1 ' });
              assert.deepEqual(await runCall(admin, protocol.release(owner, 1)), { status: 'released', remaining: 0 });
              const tombstone = await readLock(admin, keys.lock);
              assert.ok(tombstone?.fence === next && tombstone.count === 0 && tombstone.owner === '', `the tombstone keeps the fence: ${JSON.stringify(tombstone)}`);
              assert.match(tombstone.log, /^ \S+ r1 $/, 'and the request log, with the release id added');
            }
          }
        });
      });

      describe(`${kind}: waiting, aborting, closing`, () => {
        it('acquire waits for a release and times out with LockTimeoutError', async () => {
          const p = await topology.padlock();
          const lease = await p[kind]('wait:1').acquire();
          await assert.rejects(p[kind]('wait:1').acquire({ waitMs: 50 }), (e: unknown) => e instanceof LockTimeoutError && e.waitedMs >= 45);
          const waiting = p[kind]('wait:1').acquire({ waitMs: 5_000 });
          await delay(20);
          await lease.release();
          const next = await waiting;
          assert.ok(next.fence > lease.fence);
          await next.release();
        });

        it('a release wakes the waiter of another Padlock by its message, not by a timer', async () => {
          const a = await topology.padlock({ leaseMs: 60_000 });
          const b = await topology.padlock({ leaseMs: 60_000 });
          const holder = await a[kind]('wait:message').acquire();
          let asleep!: () => void;
          const sleeping = new Promise<void>((resolve) => (asleep = resolve));
          // No heartbeat or lease timer ends the waiter's sleep: only the release's message can.
          const probe = probeWakes(b, { messagesOnly: true, onSleep: () => asleep() });
          const waiting = b[kind]('wait:message').acquire({ waitMs: 10_000 });
          await sleeping;
          await holder.release();
          const lease = await waiting.catch((error: unknown) => assert.fail(`the release's message never reached the waiter: ${String(error)}`));
          assert.ok(probe.messages >= 1 && probe.fallbacks === 0, `woken by ${probe.messages} messages and ${probe.fallbacks} timers`);
          assert.ok(lease.fence > holder.fence);
          await lease.release();
        });

        it('an aborted wait rejects with signal.reason and leaves nothing behind', async () => {
          const p = await topology.padlock();
          const holder = await p[kind]('wait:abort').acquire();
          const controller = new AbortController();
          const waiting = p[kind]('wait:abort').acquire({ signal: controller.signal });
          const keys = lockKeys('padlock', 'wait:abort');
          assert.ok(await eventually(async () => (await topology.read((admin) => admin.llen(keys.queue))) === 1), 'the waiter queued');
          const reason = new Error('caller gave up');
          controller.abort(reason);
          await assert.rejects(waiting, (e) => e === reason);
          assert.equal(await topology.read(async (admin) => (await readLock(admin, keys.lock))?.owner), holder.owner);
          // The rejection comes at once; the leave it sent runs in Redis a moment later (a ghost entry
          // would stay for seconds: its heartbeat allowance).
          assert.ok(await eventually(async () => (await topology.read((admin) => admin.llen(keys.queue))) === 0, 4_000), 'no queue entry left');
          assert.ok(await eventually(async () => (await topology.readEvery((admin) => admin.llen(keys.queue))) === 0), 'none on any copy');
          assert.equal(redisInternals(p).subscriber.activeChannelCount, 0, 'the waiter left its channel');
          await holder.release();
          await assert.rejects(p[kind]('wait:abort').acquire({ signal: AbortSignal.abort(reason) }), (e) => e === reason);
        });

        it('after close(), every call rejects PadlockClosedError and sends nothing', async () => {
          // The masters' counts move only by what this Padlock sends once the others are closed (a
          // lease force-released earlier would still be renewed).
          await topology.closePadlocks();
          const p = await topology.padlock();
          const lock = p[kind]('closed:calls');
          await p.close();
          const scripts = async (): Promise<number> => (await topology.commandCalls('evalsha')) + (await topology.commandCalls('eval'));
          const before = await scripts();
          assert.ok(before > 0, 'the count sees the scripts that earlier tests ran');
          await assert.rejects(lock.isLocked(), PadlockClosedError);
          await assert.rejects(lock.forceRelease(), PadlockClosedError);
          await assert.rejects(lock.tryAcquire(), PadlockClosedError);
          await assert.rejects(lock.acquire(), PadlockClosedError);
          await assert.rejects(lock.withLock(() => 1), PadlockClosedError);
          assert.equal(await scripts(), before, 'no script was sent');
        });

        it('a lock granted just as close() begins is given back, not leaked', async () => {
          const p = await topology.padlock();
          const seam = redisInternals(p).topology;
          const send = seam.send.bind(seam);
          let closing: Promise<void> | undefined;
          // Let the acquire script succeed, then close before its caller resumes.
          seam.send = async <R>(call: ScriptCall<R>, gaveUp?: GaveUp): Promise<R> => {
            const reply = await send(call, gaveUp);
            closing ??= p.close();
            return reply;
          };
          await assert.rejects(p[kind]('close:race').acquire(), PadlockClosedError);
          await closing;
          assert.ok(await eventually(async () => !(await (await topology.padlock())[kind]('close:race').isLocked())), 'the grant was given back');
        });

        it('close() releases held locks, rejects pending waits and leaves no timer or socket', async () => {
          // Earlier tests' Padlocks still refresh their liveness keys; on a Cluster client that connects
          // to a master lazily (ioredis), such a write can open a socket mid-test. Quiet them first.
          await topology.closePadlocks();
          // Their clients wind down after close() resolves (a node-redis cluster client let go of 28
          // sockets and armed as many timers within the next seconds): count from where they settle.
          const before = await settledResources();
          // Clients of their own, so that closing them shows what padlock itself leaves open.
          const pClient = await topology.connect();
          const otherClient = await topology.connect();
          const p = new Padlock({ redis: pClient });
          const other = new Padlock({ redis: otherClient });
          const held: Lease = await p[kind]('close:1').acquire();
          const pending = p[kind]('close:2').acquire().catch((error: unknown) => error);
          const blocker = await other[kind]('close:3').acquire();
          const waiting = p[kind]('close:3').acquire().catch((error: unknown) => error);
          await delay(20);
          await p.close();
          assert.ok((await waiting) instanceof PadlockClosedError);
          await assert.rejects(p[kind]('close:4').acquire(), PadlockClosedError);
          assert.equal(held.isHeld, false);
          assert.equal(await other[kind]('close:1').isLocked(), false, 'close released the held lock');
          const late = await pending;
          if (late instanceof Lease) assert.equal(late.isHeld, false, 'a lease granted before close() was released by it');
          else assert.ok(late instanceof PadlockClosedError, 'a call still in flight at close() rejects');
          assert.equal(await other[kind]('close:2').isLocked(), false);
          await blocker.release();
          await other.close();
          await Promise.all([...clientsOf(pClient), ...clientsOf(otherClient)].map((client) => opsOf(client).quit()));
          // Sockets close a moment after QUIT is answered; what padlock left open never closes.
          const closed = (): boolean => ['Timeout', 'TCPSocketWrap'].every((type) => (activeResources().get(type) ?? 0) <= (before.get(type) ?? 0));
          assert.ok(await eventually(closed, 10_000), `left open: ${JSON.stringify([...activeResources()])} (before: ${JSON.stringify([...before])})`);
        });
      });
    });

    it('a force-release tells the holder within a second (not at its next renewal); a forged notice leaves a live hold', async () => {
      const holder = await topology.padlock();
      const operator = await topology.padlock();
      const lease = await holder.mutex('told:forced').acquire();
      const live = await holder.mutex('told:live').acquire();
      await redisInternals(holder).listeningForForce;
      // A notice naming a lock that is still held (no force-release happened): checked, and kept.
      const { topology: route } = redisInternals(operator);
      await route.run({ script: tellHoldersScript, keys: [forcedChannel('padlock')], args: ['told:live', publishCommand(route.shardedPubSub)], lock: 'told:live', quorum: anyQuorum });
      const freedAt = Date.now();
      assert.equal(await operator.mutex('told:forced').forceRelease(), true);
      assert.ok(await eventually(() => lease.signal.aborted, 1_000), 'told within a second (its next renewal is 10 s away)');
      assertToldLost(lease, Date.now() - freedAt);
      assert.ok(live.isHeld && !live.signal.aborted, 'the forged notice changed nothing');
      assert.equal(await operator.mutex('told:live').tryAcquire(), null);
      await live.release();
    });
  });
}

/** The holder was told: its signal aborted with `LockLostError` (`taken`), and its lease is no longer held. */
function assertToldLost(lease: Lease, ms: number): void {
  assert.ok(lease.signal.reason instanceof LockLostError, String(lease.signal.reason));
  assert.equal(lease.signal.reason.reason, 'taken');
  assert.equal(lease.isHeld, false, `told in ${ms} ms`);
}
