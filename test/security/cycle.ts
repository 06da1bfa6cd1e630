/**
 * One full round of what padlock does on a connection, used to show that a secured connection
 * (password, ACL user, TLS) supports all of it: acquire, a second owner waiting on pub/sub and woken
 * by the release, watchdog renewal past several leases, an explicit extend, re-entry by owner token,
 * release, isLocked and forceRelease.
 */
import assert from 'node:assert/strict';
import type { Padlock } from '../../src/index.js';
import { probeWakes } from '../harness/probes.js';

/** Resolves after `ms`. */
function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Runs the round on lock `name` of the given kind with two Padlocks (two processes, in effect); fails on any problem. */
export async function fullCycle(a: Padlock, b: Padlock, name: string, kind: 'mutex' | 'fairMutex' = 'mutex'): Promise<void> {
  const errors: Error[] = [];
  a.on('error', (error) => errors.push(error));
  b.on('error', (error) => errors.push(error));
  let renewals = 0;
  a.on('extended', () => renewals++);
  const lost: Error[] = [];
  a.on('lost', (error) => lost.push(error));

  // Acquire with a short lease that only the watchdog keeps alive.
  const lease = await a[kind](name).acquire({ leaseMs: 400, autoExtend: true, waitMs: 1_000 });
  assert.equal(await b[kind](name).tryAcquire(), null, 'another owner is excluded');

  // A waiter subscribes to the release channel and sleeps.
  const wakes = probeWakes(b);
  const waiting = b[kind](name).acquire({ waitMs: 5_000 });

  // Renewal keeps the lock past two and a half leases.
  await delay(1_000);
  assert.deepEqual(lost.map((e) => e.message), [], 'the lock was not lost');
  assert.equal(lease.isHeld, true, 'the watchdog kept the lock');
  assert.ok(renewals >= 2, `the watchdog renewed (${renewals} renewals)`);
  assert.equal(lease.signal.aborted, false);

  // Explicit extend and re-entry by owner token.
  await lease.extend(2_000);
  const inner = await b[kind](name).acquire({ owner: lease.owner, waitMs: 0 });
  assert.equal(inner.fence, lease.fence);
  await inner.release();

  // Release wakes the waiter. From here its heartbeat is off, so only the release's message can
  // move it: a missed one leaves it asleep until its waitMs runs out.
  wakes.messagesOnly();
  await lease.release();
  const next = await waiting.catch((error: unknown) => assert.fail(`the waiter was not woken by the release: ${String(error)}`));
  assert.ok(next.fence > lease.fence);
  assert.equal(await a[kind](name).isLocked(), true);
  await next.release();
  assert.equal(await a[kind](name).isLocked(), false);

  const forced = await a[kind](name).acquire({ waitMs: 0 });
  assert.equal(await b[kind](name).forceRelease(), true);
  await assert.rejects(forced.release(), (e: unknown) => e instanceof Error && e.name === 'LockNotHeldError');
  assert.deepEqual(errors, [], 'no error event');
}
