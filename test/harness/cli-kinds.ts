/**
 * The operator commands on the read/write lock and the semaphore, as one scenario each, run by
 * cli.test.ts (one server) and cli-topologies.test.ts (a Cluster): `list`, `inspect` and
 * `release --force`, their `--json` parsed.
 */
import assert from 'node:assert/strict';
import type { Padlock } from '../../src/index.js';
import type { InspectReport } from '../../src/cli/inspect.js';
import type { ListReport } from '../../src/cli/list.js';
import type { ReapReport } from '../../src/cli/reap.js';
import type { ReleaseReport } from '../../src/cli/release.js';
import type { WatchFrame } from '../../src/cli/watch.js';
import { runBin } from './cli.js';
import { eventually } from './redis.js';
import { redisInternals } from '../../src/testing.js';

/** What a scenario needs: the bin run against the server (prefix and URL given), two clients, and a key's list length. */
export interface KindsScenario {
  run(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }>;
  /** A fresh Padlock on the scenario's prefix. */
  padlock(): Padlock;
  llen(key: string): Promise<number>;
  prefix: string;
  /** The connection flags `run` adds (`--url …`). */
  connection: readonly string[];
}

/** The first frame of `padlock watch --json [pattern]`, which is then stopped with SIGINT. */
async function watchOnce(s: KindsScenario, pattern: string): Promise<WatchFrame> {
  let stopped = false;
  const run = await runBin(['watch', pattern, '--json', '--interval', '200ms', ...s.connection, '--prefix', s.prefix], {
    onStdout: (soFar, pid) => {
      if (!stopped && soFar.includes('\n')) {
        stopped = true;
        process.kill(pid, 'SIGINT');
      }
    },
  });
  assert.equal(run.code, 0, run.stderr);
  return JSON.parse(run.stdout.split('\n', 1)[0] ?? '') as WatchFrame;
}

async function json<T>(s: KindsScenario, ...args: string[]): Promise<T> {
  const result = await s.run(...args, '--json');
  assert.equal(result.code, 0, result.stderr);
  return JSON.parse(result.stdout) as T;
}

/** Two readers hold `doc`, a writer waits; a mutex `doc` is held too: each its own row; release --force hands the lock to the writer. */
export async function readWriteScenario(s: KindsScenario): Promise<void> {
  const [a, b, w] = [s.padlock(), s.padlock(), s.padlock()];
  const r1 = await a.readWrite('doc').read.acquire();
  const r1again = await a.readWrite('doc').read.acquire({ owner: r1.owner });
  const r2 = await b.readWrite('doc').read.acquire();
  const mutex = await a.mutex('doc').acquire();
  const writing = w.readWrite('doc').write.acquire({ waitMs: 20_000 });
  assert.ok(await eventually(async () => (await s.llen(`${s.prefix}:{doc}:rwqueue`)) === 1));

  const listed = await json<ListReport>(s, 'list');
  assert.deepEqual(listed.locks.map((l) => [l.name, l.kind]), [['doc', 'mutex'], ['doc', 'readWrite']], 'one row per kind');
  const rw = listed.locks[1];
  assert.ok(rw !== undefined);
  assert.equal(rw.held, true);
  assert.equal(rw.fence, r1.fence);
  assert.equal(rw.waiting, 1);
  assert.ok(rw.oldestWaitMs !== null);
  assert.ok(rw.leaseMs !== null && rw.leaseMs > 20_000);
  assert.deepEqual(
    rw.holders.map((h) => [h.owner, h.holdCount, h.side, h.clients]).sort(),
    [[r1.owner, 2, 'read', null], [r2.owner, 1, 'read', null]].sort(),
  );
  assert.ok(rw.holders.every((h) => h.leaseMs !== undefined && h.leaseMs > 20_000));
  const frame = await watchOnce(s, 'doc');
  assert.deepEqual(frame.locks.map((l) => [l.kind, l.holders.map((h) => h.side)]), [['mutex', [undefined]], ['readWrite', ['read', 'read']]], 'watch shows each kind as list does');
  const text = await s.run('list', 'doc');
  assert.match(text.stdout, new RegExp(`^doc +readWrite +read ${r1.owner.slice(0, 8)}…, read ${r2.owner.slice(0, 8)}…|^doc +readWrite +read ${r2.owner.slice(0, 8)}…, read ${r1.owner.slice(0, 8)}…`, 'm'));

  const { lock, locks } = await json<InspectReport>(s, 'inspect', 'doc');
  assert.deepEqual(locks.map((l) => l.kind), ['mutex', 'readWrite']);
  assert.equal(lock.kind, 'mutex');
  const full = locks[1];
  assert.ok(full !== undefined);
  assert.deepEqual(full.waiters.map((x) => [x.position, x.kind, x.clientId, x.alive]), [[1, 'write', redisInternals(w).clientId, true]]);
  assert.deepEqual(full.keys.map((k) => [k.role, k.type, k.exists]), [['rw', 'hash', true], ['rwleases', 'zset', true], ['rwqueue', 'list', true]]);
  assert.ok(full.keys.every((k) => k.ttlMs !== null && k.ttlMs > 0), 'every key expires');
  const shown = await s.run('inspect', 'doc');
  assert.match(shown.stdout, /^lock +doc · readWrite$/m);
  assert.match(shown.stdout, new RegExp(`^ +1 +\\S+ +write +${redisInternals(w).clientId} `, 'm'));

  const reaped = await json<ReapReport>(s, 'reap', '--dry-run');
  assert.deepEqual([reaped.checked, reaped.locks.map((l) => l.name)], [1, ['doc']], 'reap looks at the mutex only: read/write holds record no clients');

  const ambiguous = await s.run('release', 'doc', '--force', '--yes');
  assert.equal(ambiguous.code, 2);
  assert.match(ambiguous.stderr, /'doc' is held as mutex and readWrite: add --kind/);
  const released = await json<ReleaseReport>(s, 'release', 'doc', '--force', '--yes', '--kind', 'readWrite');
  assert.deepEqual([released.kind, released.released, released.before.holders.length], ['readWrite', true, 2]);
  const writer = await writing;
  assert.ok(writer.fence > r1.fence, 'the waiting writer was admitted, with a greater fence');
  assert.equal(mutex.isHeld, true, 'the mutex of the same name is left alone');

  const again = await json<ReleaseReport>(s, 'release', 'doc', '--force', '--yes', '--kind', 'readWrite');
  assert.deepEqual([again.released, again.before.holders.map((h) => [h.owner, h.side])], [true, [[writer.owner, 'write']]]);
  const after = await json<ListReport>(s, 'list', 'doc');
  assert.deepEqual(after.locks.map((l) => l.kind), ['mutex'], 'the read/write lock is free: not in use');
  await mutex.release();
  await Promise.allSettled([r1again.release(), r1.release(), r2.release(), writer.release()]);
}

/**
 * Two holders take 3 permits of `pool`, a third asks 2 and waits; release --force frees every permit
 * and the waiter gets its own. With `storedLimit`, the limit 3 is stored first (`setPermits`).
 */
export async function semaphoreScenario(s: KindsScenario, options: { storedLimit?: boolean } = {}): Promise<void> {
  const [a, b, c] = [s.padlock(), s.padlock(), s.padlock()];
  if (options.storedLimit === true) await a.semaphore('pool', 3).setPermits(3);
  const limit = options.storedLimit === true ? 3 : null;
  // With no stored limit, list shows the limit the holders' code passed (never used to free permits).
  const permits = { used: 3, limit, codeLimit: limit === null ? 3 : null };
  const two = await a.semaphore('pool', 3).acquire({ permits: 2 });
  const one = await b.semaphore('pool', 3).acquire();
  const waiting = c.semaphore('pool', 3).acquire({ permits: 2, waitMs: 20_000 });
  assert.ok(await eventually(async () => (await s.llen(`${s.prefix}:{pool}:semaphore-queue`)) === 1));

  const listed = await json<ListReport>(s, 'list', 'pool');
  assert.equal(listed.locks.length, 1);
  const [row] = listed.locks;
  assert.ok(row !== undefined);
  assert.deepEqual([row.kind, row.held, row.waiting, row.permits], ['semaphore', true, 1, permits]);
  assert.equal(row.fence, Math.max(two.fence, one.fence));
  assert.deepEqual(
    row.holders.map((h) => [h.owner, h.holdCount, h.permits, h.fence, h.clients]).sort(),
    [[two.owner, 1, 2, two.fence, [redisInternals(a).clientId]], [one.owner, 1, 1, one.fence, [redisInternals(b).clientId]]].sort(),
  );
  const [watched] = (await watchOnce(s, 'pool')).locks;
  assert.deepEqual([watched?.kind, watched?.permits, watched?.holders.length, watched?.waiting], ['semaphore', permits, 2, 1], 'watch shows it as list does');
  const text = await s.run('list', 'pool');
  assert.match(text.stdout, /^pool +semaphore 3\/3 +/m);
  assert.match(text.stdout, new RegExp(`${two.owner.slice(0, 8)}… \\(2 permits\\)`));

  const { lock } = await json<InspectReport>(s, 'inspect', 'pool');
  assert.equal(lock.kind, 'semaphore');
  assert.deepEqual(lock.waiters.map((x) => [x.position, x.kind, x.permits, x.clientId, x.alive]), [[1, 'semaphore', 2, redisInternals(c).clientId, true]]);
  assert.deepEqual(lock.keys.map((k) => [k.role, k.type, k.exists]), [
    ['semaphore', 'hash', true],
    ['semaphore-holders', 'hash', true],
    ['semaphore-leases', 'zset', true],
    ['semaphore-queue', 'list', true],
  ]);
  const shown = await s.run('inspect', 'pool');
  assert.match(shown.stdout, new RegExp(`^permits +3 held of ${limit ?? "3 \\(the code's; none stored\\)"}$`, 'm'));
  const reaped = await json<ReapReport>(s, 'reap', '--dry-run');
  assert.equal(reaped.checked, 0, "reap leaves a semaphore's holds to expire on their own");

  const released = await json<ReleaseReport>(s, 'release', 'pool', '--force', '--yes');
  assert.deepEqual([released.kind, released.released, released.before.permits], ['semaphore', true, permits]);
  const got = await waiting;
  assert.ok(got.fence > Math.max(two.fence, one.fence), 'the waiter took its permits');
  const after = await json<ListReport>(s, 'list', 'pool');
  assert.deepEqual(after.locks[0]?.holders.map((h) => [h.owner, h.permits]), [[got.owner, 2]]);
  await Promise.allSettled([two.release(), one.release(), got.release()]);
}

/**
 * A semaphore without a stored limit, all 3 permits held, two waiters asking 1 each: release --force
 * admits one of them by default (limit 1, never more than the code's), both with `--permits 3`.
 * (A waiter's own attempts use its code's limit, which would admit more on its own: here it is 1.)
 */
export async function permitsFlagScenario(s: KindsScenario): Promise<void> {
  for (const [name, flags, admitted] of [['slots:a', [], 1], ['slots:b', ['--permits', '3'], 2]] as const) {
    const [a, b, c] = [s.padlock(), s.padlock(), s.padlock()];
    const all = await a.semaphore(name, 3).acquire({ permits: 3 });
    // The waiters' own code says 1: their later attempts (a heartbeat, a handoff confirmed by a call)
    // then admit no one more, and what the list shows is what the force-release admitted.
    const waiting = [b.semaphore(name, 1).acquire({ waitMs: 20_000 }), c.semaphore(name, 1).acquire({ waitMs: 20_000 })];
    assert.ok(await eventually(async () => (await s.llen(`${s.prefix}:{${name}}:semaphore-queue`)) === 2));
    const released = await json<ReleaseReport>(s, 'release', name, '--force', '--yes', ...flags);
    assert.equal(released.released, true);
    const [row] = (await json<ListReport>(s, 'list', name)).locks;
    assert.deepEqual([row?.holders.length, row?.waiting], [admitted, 2 - admitted], flags.join(' ') || 'no --permits');
    // Each releases as soon as it holds: with the waiters' limit of 1 the second is admitted only then.
    await Promise.all(waiting.map(async (acquiring) => (await acquiring).release()));
    await all.release().catch(() => undefined);
  }
}
