/**
 * padlock on PostgreSQL under faults, through its public API: the server restarted (a crash: no
 * checkpoint, recovery from the WAL) while a lock is held, the holder's process killed or frozen past
 * its lease. Where locks change hands during a fault, workers (each a Padlock with a pool of its own)
 * run read-modify-write sections on the fenced store (test/safety/fenced-store.ts), and the safety
 * checker (test/safety/checker.ts) judges the records: no overlapping valid holds, no lost update, no
 * stale write accepted, fences growing. The killed LISTEN connection is test/postgres-store.test.ts's.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Redis } from 'ioredis';
import { Padlock, PostgresUnavailableError } from '../src/index.js';
import { startPostgres, type PostgresServer } from './harness/postgres.js';
import { connect, delay, startServer } from './harness/redis.js';
import { firstMessage, forkFixture } from './harness/children.js';
import { describeReport, isLive, isSafe, type SafetyReport } from './safety/checker.js';
import { FencedStore } from './safety/fenced-store.js';
import { runInProcess } from './safety/in-process-run.js';

const LEASE_MS = 2_000;

describe('padlock on PostgreSQL under faults', { timeout: 90_000 }, () => {
  let server: PostgresServer;
  let admin: Redis;
  let redisPort: number;
  const padlocks: Padlock[] = [];

  const padlock = (leaseMs = LEASE_MS): Padlock => {
    const made = new Padlock({ postgres: server.pool({ max: 3 }), leaseMs, replyTimeoutMs: 2_000 });
    // Renewals that fail while the server is down are reported as events; the holds' fate is what is tested.
    made.on('error', () => undefined);
    padlocks.push(made);
    return made;
  };

  before(async () => {
    const redis = await startServer();
    redisPort = redis.port;
    admin = connect(redis);
    server = await startPostgres();
    await server.query(`CREATE TABLE accounts (id integer PRIMARY KEY, balance integer NOT NULL)`);
    await server.query(`INSERT INTO accounts VALUES (1, 0)`);
  });
  after(async () => {
    await Promise.all(padlocks.map((p) => p.close({ drainMs: 0 }).catch(() => undefined)));
  });

  /** `workers` Padlocks each run `sections` read-modify-write sections of lock `name` while `during` runs; the checker's report. */
  const runChecked = (name: string, workers: number, sections: number, during: (holding: () => Promise<void>) => Promise<void>): Promise<SafetyReport> =>
    runInProcess({ admin, name, workers, sections, padlock: () => padlock(), giveUpMs: 30_000, during });

  it('the server restarted (a crash) while locks are held: the holder keeps its lock (rows and leases survive), no second holder, fences go on increasing, and both sides work again', async () => {
    const holder = padlock(6_000);
    const held = await holder.mutex('restart:held').acquire();
    const other = padlock();
    const report = await runChecked('restart', 3, 6, async (holding) => {
      await holding();
      await server.crash();
      await delay(1_000);
      await server.start();
    });
    assert.ok(isSafe(report), describeReport(report));
    assert.ok(isLive(report), describeReport(report));
    assert.equal(held.signal.aborted, false, `the holder was told ${String(held.signal.reason)}`);
    assert.equal(held.isHeld, true);
    assert.equal(await other.mutex('restart:held').tryAcquire(), null, 'nobody else got it');
    await held.release();
    const next = await other.mutex('restart:held').acquire({ waitMs: 5_000 });
    assert.ok(next.fence > held.fence, `fence ${next.fence} after ${held.fence}, across the restart`);
    await next.release();
    await (await holder.mutex('restart:again').acquire()).release();
  });

  it("the holder's process killed: a waiter is served once its lease ran out (no poll: woken at the lease's end), with a higher fence", async () => {
    const child = forkFixture('postgres-padlock-holder', [String(server.port), 'killed', String(LEASE_MS), String(redisPort), 'killed']);
    const { fence } = await firstMessage<{ fence: number }>(child);
    const waiter = padlock();
    const waiting = waiter.mutex('killed').acquire({ waitMs: 30_000 });
    await delay(200);
    const killedAt = Date.now();
    child.kill('SIGKILL');
    const lease = await waiting;
    const servedAfter = Date.now() - killedAt;
    assert.ok(lease.fence > fence);
    // The lease ends at most LEASE_MS after the kill (its last renewal was before); the waiter looks again then.
    assert.ok(servedAfter < LEASE_MS + 1_000, `served ${servedAfter} ms after the kill`);
    await lease.release();
  });

  it('the holder frozen past its lease: another takes the lock; resumed, the holder has been told, and its late write is refused by the fence and by the in-transaction check', async () => {
    const store = new FencedStore(admin, 'frozen');
    await store.reset('checked');
    const child = forkFixture('postgres-padlock-holder', [String(server.port), 'frozen', String(LEASE_MS), String(redisPort), 'frozen']);
    const first = await firstMessage<{ fence: number; owner: string }>(child);
    child.kill('SIGSTOP');
    let report: { told: boolean; reason: string; read: boolean; write: boolean; committed: boolean } | undefined;
    const [before] = await server.query<{ balance: number }>('SELECT balance FROM accounts WHERE id = 1');
    try {
      const next = await padlock().mutex('frozen').acquire({ waitMs: 30_000 });
      assert.ok(next.fence > first.fence);
      const read = await store.read(next.fence, next.owner);
      assert.ok((await store.write(next.fence, next.owner, read.value)).accepted);
      const reported = new Promise<typeof report>((resolve) => child.once('message', (m) => resolve(m as typeof report)));
      child.kill('SIGCONT');
      await delay(500);
      child.send('write');
      report = await reported;
      await next.release();
    } finally {
      child.kill('SIGCONT');
      child.kill('SIGKILL');
    }
    assert.equal(report?.told, true, 'told before it wrote');
    assert.ok(report.reason === 'expired' || report.reason === 'taken', report.reason);
    assert.equal(report.write, false, 'its late fenced write refused');
    assert.equal(report.committed, false, 'its late transaction refused by the in-transaction check');
    const [afterward] = await server.query<{ balance: number }>('SELECT balance FROM accounts WHERE id = 1');
    assert.equal(afterward?.balance, before?.balance, 'nothing written by the old holder');
    const log = await store.log();
    assert.equal(log.filter((e) => e.owner === first.owner && e.accepted).length, 0, 'nothing of the old holder accepted');
    assert.equal(await store.value(), 1);
  });

  it('a wait rides through a server restart within its waitMs: queued before the crash, served after it by the holder\'s release, with a higher fence', async () => {
    const holder = padlock(6_000);
    const held = await holder.mutex('ride').acquire();
    const waiter = padlock();
    const waiting = waiter.mutex('ride').acquire({ waitMs: 20_000 });
    const settled = waiting.then(() => 'served', (error: unknown) => `rejected: ${String(error)}`);
    await delay(300);
    await server.crash();
    // Down past a back-off or two, and past the waiter's listening connection: its takes fail meanwhile.
    await delay(1_500);
    await server.start();
    assert.equal(await Promise.race([settled, delay(500).then(() => 'waiting')]), 'waiting', 'the wait ended during the outage');
    await held.release();
    const lease = await waiting;
    assert.ok(lease.fence > held.fence, `fence ${lease.fence} after ${held.fence}`);
    await lease.release();
    const rows = await server.query<{ n: string }>(`SELECT count(*) AS n FROM padlock.participants WHERE name = 'ride'`);
    assert.equal(Number(rows[0]?.n), 0, 'no row left');
  });

  it('a wait whose waitMs runs out while the server is down fails with PostgresUnavailableError (not LockTimeoutError) at its deadline, and the same Padlock works once the server is back', async () => {
    const waiter = padlock();
    // The server has answered this Padlock: a failure now is an outage, not a wrong address.
    await (await waiter.mutex('down').acquire()).release();
    await server.crash();
    try {
      const startedAt = Date.now();
      const error = await waiter.mutex('down').acquire({ waitMs: 1_500 }).then(() => undefined, (e: unknown) => e);
      const took = Date.now() - startedAt;
      assert.ok(error instanceof PostgresUnavailableError, `rejected with ${String(error)}`);
      assert.ok(took >= 1_200, `gave up after ${took} ms, before its waitMs (it did not ride the outage through)`);
      assert.ok(took < 1_500 + 2_500, `gave up after ${took} ms: its deadline bounds a try in flight`);
    } finally {
      await server.start();
    }
    const lease = await waiter.mutex('down').acquire({ waitMs: 10_000 });
    await lease.release();
  });
});
