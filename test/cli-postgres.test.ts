/**
 * The `padlock` command on PostgreSQL (`--postgres <url>`): `list` reads every lock in use under
 * the prefix from padlock's own tables in the schema (holders with fence, hold count and the lease
 * left by the server's clock, waiters in queue order, a semaphore's limit), `inspect` shows one in
 * full, `watch` redraws the list, `release --force` frees one through `forceRelease()` and its holder
 * is told at once; `--postgres-schema` reads another schema and never creates one; bad flags are
 * one-line usage errors, an unreachable server a one-line failure. One real server, the real bin.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { LockLostError, Padlock, type Lease } from '../src/index.js';
import type { InspectReport } from '../src/cli/inspect.js';
import type { ListReport } from '../src/cli/list.js';
import type { ReleaseReport } from '../src/cli/release.js';
import type { WatchFrame } from '../src/cli/watch.js';
import { PostgresStore } from '../src/stores/postgres/postgres-store.js';
import { internals } from '../src/testing.js';
import { assertOneLineError, runBin, until } from './harness/cli.js';
import { startPostgres, type PostgresServer } from './harness/postgres.js';
import { freePort } from '../src/devserver/redis-server.js';


// Side by side: each test has its own prefix (or schema), and the bin's start-up is most of their time.
describe('padlock list, inspect, watch and release --force on PostgreSQL', { timeout: 60_000, concurrency: true }, () => {
  let server: PostgresServer;
  let url: string;
  const padlocks: Padlock[] = [];

  /** A Padlock on the server (its own pool, as another process would have). */
  const padlock = (prefix: string, options: { leaseMs?: number; postgresSchema?: string } = {}): Padlock => {
    const made = new Padlock({ postgres: server.pool({ max: 4 }), prefix, leaseMs: options.leaseMs ?? 3_000, postgresSchema: options.postgresSchema });
    padlocks.push(made);
    return made;
  };
  /** The LISTEN channel `of` holds and waits on: the `client` the catalog names. */
  const channelOf = (of: Padlock): string => {
    const { store } = internals(of);
    assert.ok(store instanceof PostgresStore);
    return store.listener.channel;
  };
  /** `args` on this server. */
  const bin = (args: readonly string[]): ReturnType<typeof runBin> => runBin([...args, '--postgres', url]);

  before(async () => {
    server = await startPostgres();
    url = `postgres://postgres@127.0.0.1:${server.port}/postgres`;
  });
  after(() => Promise.allSettled(padlocks.map((p) => p.close({ drainMs: 0 }))));

  it("lists the locks in use (holder, fence, lease left, waiters, a semaphore's limit), frees one by force, and its holder is told at once", async () => {
    // A 30 s lease, renewed every 10 s: told at once by the force-release, not at a renewal.
    const holder = padlock('ops', { leaseMs: 30_000 });
    const waiter = padlock('ops');
    const lease: Lease = await holder.mutex('invoice:7').acquire();
    const waiting = waiter.mutex('invoice:7').acquire({ waitMs: 30_000 });
    const permits = await holder.semaphore('pool', 3).acquire({ permits: 2 });
    const stored = await holder.semaphore('stored', 2).acquire();
    await holder.semaphore('stored', 2).setPermits(5);
    await holder.mutex('other').acquire();
    await until(async () => Number((await server.query<{ n: string }>(`SELECT count(*) AS n FROM padlock.participants WHERE prefix = 'ops' AND fence IS NULL`))[0]?.n) === 1, 'the waiter is queued');

    const listed = await bin(['list', '--json', '--prefix', 'ops', 'invoice:*']);
    assert.equal(listed.code, 0, listed.stderr);
    const report = JSON.parse(listed.stdout) as ListReport;
    assert.match(report.store ?? '', new RegExp(`^PostgreSQL 127\\.0\\.0\\.1:${server.port}/postgres$`));
    assert.deepEqual(report.locks.map((l) => l.name), ['invoice:7'], 'the glob picks the name');
    const [invoice] = report.locks;
    assert.equal(invoice?.held, true);
    assert.equal(invoice?.fence, lease.fence);
    assert.deepEqual(invoice?.holders.map((h) => [h.owner, h.holdCount, h.clients]), [[lease.owner, 1, [channelOf(holder)]]]);
    // The lease left, by the server's clock: most of the 30 s.
    assert.ok(typeof invoice?.leaseMs === 'number' && invoice.leaseMs > 20_000 && invoice.leaseMs <= 30_000, `lease left ${invoice?.leaseMs}`);
    assert.equal(invoice?.waiting, 1);
    assert.equal(invoice?.oldestWaitMs, null, 'the table keeps no join time');

    const [allJson, table] = await Promise.all([bin(['list', '--json', '--prefix', 'ops']), bin(['list', '--prefix', 'ops'])]);
    const all = JSON.parse(allJson.stdout) as ListReport;
    assert.deepEqual(all.locks.map((l) => l.name), ['invoice:7', 'other', 'pool', 'stored']);
    assert.deepEqual(all.locks.find((l) => l.name === 'pool')?.permits, { used: 2, limit: null, codeLimit: 3 }, "no stored limit: the holder's code's limit is shown");
    assert.deepEqual(all.locks.find((l) => l.name === 'stored')?.permits, { used: 1, limit: 5, codeLimit: null }, 'the stored limit (setPermits)');

    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout, /invoice:7/);
    assert.match(table.stdout, /pool +semaphore 2\/3 /, 'the limit shown, not 2/?');
    assert.match(table.stdout, /stored +semaphore 1\/5 /);

    // Renewed now: its next renewal is about 10 s away, far past the second it has to be told in.
    await lease.extend(30_000);
    const released = await bin(['release', 'invoice:7', '--force', '--yes', '--json', '--prefix', 'ops']);
    assert.equal(released.code, 0, released.stderr);
    const out = JSON.parse(released.stdout) as ReleaseReport;
    assert.equal(out.released, true);
    assert.equal(out.before.fence, lease.fence);
    await until(() => lease.signal.aborted, 'the holder is told at once', Boolean, 1_000);
    assert.ok(lease.signal.reason instanceof LockLostError);
    const next = await waiting;
    assert.ok(next.fence > lease.fence, 'the waiter got its turn');
    await next.release();
    await permits.release();
    await stored.release();

    const again = await bin(['release', 'invoice:7', '--force', '--yes', '--prefix', 'ops']);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /not held: nothing to release/);
  });

  it("inspect shows a lock in full (hold count, waiters in order, each reader's lease), and watch draws a frame", async () => {
    const holder = padlock('insp');
    const waiter = padlock('insp');
    const lease = await holder.mutex('order:42').acquire();
    const again = await holder.mutex('order:42').acquire({ owner: lease.owner });
    const permit = await holder.semaphore('order:42', 2).acquire();
    const first = waiter.mutex('order:42').acquire({ waitMs: 30_000 });
    await until(async () => Number((await server.query<{ n: string }>(`SELECT count(*) AS n FROM padlock.participants WHERE prefix = 'insp' AND fence IS NULL`))[0]?.n) === 1, 'the first waiter is queued');
    const second = waiter.mutex('order:42').acquire({ waitMs: 30_000 });
    const readers = await Promise.all([holder.readWrite('doc').read.acquire(), waiter.readWrite('doc').read.acquire()]);
    const writer = holder.readWrite('doc').write.acquire({ waitMs: 30_000 });
    try {
      const queued = await until(
        async () => server.query<{ owner: string }>(`SELECT owner FROM padlock.participants WHERE prefix = 'insp' AND family = 'mutex' AND fence IS NULL ORDER BY ticket`),
        'both waiters are queued',
        (rows) => rows.length === 2,
      );

      const [json, docJson, text] = await Promise.all([
        bin(['inspect', 'order:42', '--json', '--prefix', 'insp']),
        bin(['inspect', 'doc', '--json', '--prefix', 'insp']),
        bin(['inspect', 'order:42', '--prefix', 'insp']),
      ]);
      assert.equal(json.code, 0, json.stderr);
      const report = JSON.parse(json.stdout) as InspectReport;
      assert.equal(report.known, true);
      assert.deepEqual(report.locks.map((l) => l.kind), ['mutex', 'semaphore'], 'each kind of the name, as on Redis');
      const { lock } = report;
      assert.equal(lock.fence, lease.fence);
      assert.deepEqual(lock.holders.map((h) => [h.owner, h.holdCount]), [[lease.owner, 2]]);
      assert.deepEqual(
        lock.waiters.map((w) => [w.position, w.owner, w.kind, w.clientId]),
        queued.map((row, i) => [i + 1, row.owner, 'mutex', channelOf(waiter)]),
        'the waiters in queue order',
      );
      assert.deepEqual(report.locks[1]?.holders.map((h) => [h.owner, h.permits, h.fence]), [[permit.owner, 1, permit.fence]]);

      const doc = (JSON.parse(docJson.stdout) as InspectReport).lock;
      assert.deepEqual(doc.holders.map((h) => [h.side, h.owner]).sort(), readers.map((r) => ['read', r.owner]).sort());
      assert.ok(doc.holders.every((h) => typeof h.leaseMs === 'number' && h.leaseMs > 0 && h.leaseMs <= 3_000), "each reader's own lease left");
      assert.deepEqual(doc.waiters.map((w) => w.kind), ['write']);

      assert.equal(text.code, 0, text.stderr);
      assert.match(text.stdout, new RegExp(`^state +held by ${lease.owner} \\(2 holds\\), fence ${lease.fence}, [\\d.]+ (ms|s) left$`, 'm'));
      assert.match(text.stdout, /^queue +2 waiting$/m);
      assert.match(text.stdout, /^lock +order:42 · semaphore$/m);
      assert.doesNotMatch(text.stdout, /^keys$/m, 'a store has no keys to show');

      // watch redraws what list reads: one JSON frame, then Ctrl-C ends it (exit 0).
      let stopped = false;
      const watched = await runBin(['watch', '--json', '--interval', '0.1', '--prefix', 'insp', '--postgres', url], {
        onStdout: (soFar, pid) => {
          if (!stopped && soFar.includes('\n')) {
            stopped = true;
            process.kill(pid, 'SIGINT');
          }
        },
      });
      assert.equal(watched.code, 0, watched.stderr);
      const [frame] = watched.stdout.trimEnd().split('\n').map((line) => JSON.parse(line) as WatchFrame);
      assert.deepEqual(frame?.locks.map((l) => [l.name, l.kind, l.waiting]), [
        ['doc', 'readWrite', 1],
        ['order:42', 'mutex', 2],
        ['order:42', 'semaphore', 0],
      ]);
    } finally {
      // Even after a failed assertion: every waiter gets its turn, and nothing is left held.
      await again.release();
      await lease.release();
      await permit.release();
      await first.then((next) => next.release());
      await second.then((next) => next.release());
      await Promise.all(readers.map((r) => r.release()));
      await writer.then((w) => w.release());
    }
  });

  it('--postgres-schema reads that schema; a schema padlock never installed is a one-line error, and the command creates nothing', async () => {
    const holder = padlock('own', { postgresSchema: 'ops_locks' });
    const lease = await holder.mutex('job').acquire();
    const [listed, elsewhere] = await Promise.all([bin(['list', '--json', '--prefix', 'own', '--postgres-schema', 'ops_locks']), bin(['list', '--json', '--prefix', 'own'])]);
    assert.equal(listed.code, 0, listed.stderr);
    assert.deepEqual((JSON.parse(listed.stdout) as ListReport).locks.map((l) => [l.name, l.fence]), [['job', lease.fence]]);
    assert.deepEqual((JSON.parse(elsewhere.stdout) as ListReport).locks, [], 'the default schema has none of it');

    // release reads the lock through the same catalog first: the same error.
    assertOneLineError(await bin(['release', 'job', '--force', '--yes', '--prefix', 'own', '--postgres-schema', 'nowhere']), 1, /schema "nowhere" has no padlock tables/);
    const [schema] = await server.query<{ found: boolean }>(`SELECT to_regnamespace('nowhere') IS NOT NULL AS found`);
    assert.equal(schema?.found, false, 'an operator command installs nothing');
    await lease.release();
  });

  it('refuses a malformed URL or schema, --postgres-schema alone, or two stores, in one line; an unreachable server fails in one line, no password shown', async () => {
    const closed = await freePort();
    // Independent runs, side by side.
    const [badUrl, badSchema, schemaAlone, twoStores, unreachable] = await Promise.all([
      runBin(['list', '--postgres', 'mysql://u:secret@127.0.0.1/db']),
      bin(['list', '--postgres-schema', 'Bad-Name']),
      runBin(['list', '--postgres-schema', 'ops']),
      bin(['list', '--etcd', '127.0.0.1:1']),
      runBin(['list', '--postgres', `postgres://postgres:secret@127.0.0.1:${closed}/postgres`]),
    ]);
    assertOneLineError(badUrl, 2, /--postgres takes a connection string postgres:\/\/.*got 'mysql:\/\/u:\*\*\*@127\.0\.0\.1\/db'/);
    assert.doesNotMatch(badUrl.stderr, /secret/, 'the password is never printed');
    assertOneLineError(badSchema, 2, /--postgres-schema takes an unquoted lower-case identifier/);
    assertOneLineError(schemaAlone, 2, /--postgres-schema goes with --postgres/);
    assertOneLineError(twoStores, 2, /one store: --zookeeper, --etcd or --postgres/);
    assertOneLineError(unreachable, 1, new RegExp(`could not reach PostgreSQL 127\\.0\\.0\\.1:${closed}/postgres: .*ECONNREFUSED`));
    assert.doesNotMatch(unreachable.stderr, /secret/, 'the password is never printed');
  });
});
