/**
 * padlock on PostgreSQL through its public API (`new Padlock({ postgres: pool })`), on one real
 * server for the whole file: what is particular to the PostgreSQL store. The store-neutral behaviour
 * of every kind is the behaviour suite's (test/stores.test.ts); the faults are
 * test/postgres-faults.test.ts's.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { LockLostError, Padlock, PadlockOptionError, PostgresUnavailableError, postgresSchemaSql, type Lease, type PadlockOptions } from '../src/index.js';
import { PostgresStore } from '../src/stores/postgres/postgres-store.js';
import { isTransientPostgres, unavailable } from '../src/stores/postgres/postgres-errors.js';
import { freePort } from '../src/devserver/redis-server.js';
import { internals } from '../src/testing.js';
import { startPostgres, type PostgresServer } from './harness/postgres.js';
import { delay, eventually } from './harness/redis.js';
import pg from 'pg';

describe('padlock on PostgreSQL (one server)', { timeout: 60_000 }, () => {
  let server: PostgresServer;
  const padlocks: Padlock[] = [];
  const prefixOf = new Map<Padlock, string>();
  let prefixes = 0;

  const padlock = (options: Omit<PadlockOptions, 'postgres' | 'redis' | 'etcd' | 'zookeeper'> = {}, pool?: pg.Pool): Padlock => {
    const prefix = options.prefix ?? `pg${++prefixes}`;
    const made = new Padlock({ ...options, prefix, postgres: pool ?? server.pool({ max: 4 }) });
    padlocks.push(made);
    prefixOf.set(made, prefix);
    return made;
  };
  /** The channel `of` listens on. */
  const channelOf = (of: Padlock): string => {
    const { store } = internals(of);
    if (!(store instanceof PostgresStore)) throw new TypeError('not a PostgreSQL Padlock');
    return store.listener.channel;
  };
  /** The backends listening for `of` now, or for any Padlock (their last statement was its LISTEN). */
  const listeners = async (of?: Padlock): Promise<number[]> =>
    (
      await server.query<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE query LIKE 'LISTEN "' || $1 || '%' AND pid <> pg_backend_pid()`, [
        of === undefined ? 'padlock_' : channelOf(of),
      ])
    ).map((r) => r.pid);
  /** Rows padlock has under `prefix` (`waiting`: only the waiters'). */
  const rowsOf = async (prefix: string, waiting = false): Promise<number> =>
    Number((await server.query<{ n: string }>(`SELECT count(*) AS n FROM padlock.participants WHERE prefix = $1 AND (NOT $2 OR fence IS NULL)`, [prefix, waiting]))[0]?.n);

  before(async () => {
    server = await startPostgres();
    await server.query(`CREATE TABLE accounts (id integer PRIMARY KEY, balance integer NOT NULL)`);
    await server.query(`INSERT INTO accounts VALUES (1, 0)`);
  });
  after(async () => {
    await Promise.all(padlocks.map((p) => p.close({ drainMs: 0 }).catch(() => undefined)));
  });

  it('the LISTEN connection killed (pg_terminate_backend) while waiters wait: a new one listens, and each waiter is still served', async () => {
    const holder = padlock();
    const waiterSide = padlock({ prefix: prefixOf.get(holder) });
    const held = await Promise.all(['a', 'b', 'c'].map((name) => holder.mutex(`killed-${name}`).acquire()));
    const served: string[] = [];
    const waits = ['a', 'b', 'c'].map((name) =>
      waiterSide
        .mutex(`killed-${name}`)
        .acquire({ waitMs: 8_000 })
        .then((lease: Lease) => {
          served.push(name);
          return lease;
        }),
    );
    assert.ok(await eventually(async () => (await rowsOf(prefixOf.get(waiterSide) ?? '', true)) === 3), 'three waiters queued');
    const before = await listeners(waiterSide);
    assert.equal(before.length, 1, 'one LISTEN connection: the waiting Padlock’s');
    await server.query('SELECT pg_terminate_backend($1)', [before[0]]);
    assert.ok(await eventually(async () => (await listeners(waiterSide)).some((pid) => pid !== before[0])), 'a new LISTEN connection');
    const releasedAt = Date.now();
    await Promise.all(held.map((lease) => lease.release()));
    const leases = await Promise.all(waits);
    assert.deepEqual([...served].sort(), ['a', 'b', 'c']);
    assert.ok(Date.now() - releasedAt < 2_000, `served ${Date.now() - releasedAt} ms after the releases (woken, not by a time-out)`);
    await Promise.all(leases.map((lease) => lease.release()));
  });

  it('a holder listens from its first hold, once per Padlock (not per acquisition): a force-release tells it at once, also after its LISTEN connection was killed', async () => {
    const holder = padlock();
    const operator = padlock({ prefix: prefixOf.get(holder) });
    const first = await holder.mutex('forced-1').acquire();
    assert.equal((await listeners(holder)).length, 1, 'listening once its first hold is granted');
    const more = [await holder.mutex('forced-2').acquire(), await holder.semaphore('forced-3', 3).acquire(), await holder.readWrite('forced-4').read.acquire()];
    assert.equal((await listeners(holder)).length, 1, 'still one LISTEN connection for four holds');
    const freedAt = Date.now();
    assert.equal(await operator.mutex('forced-1').forceRelease(), true);
    assert.ok(await eventually(() => first.signal.aborted, 1_000), `told in ${Date.now() - freedAt} ms`);
    assert.ok(first.signal.reason instanceof LockLostError && first.signal.reason.reason === 'taken');
    assert.ok(more.every((lease) => lease.isHeld), 'the notice named one lock: the others hold on');

    // Its connection killed: the next hold listens again, and a force-release is told again.
    const [killed] = await listeners(holder);
    await server.query('SELECT pg_terminate_backend($1)', [killed]);
    assert.ok(await eventually(async () => (await listeners(holder)).length === 0), 'the killed connection is gone');
    const again = await holder.mutex('forced-5').acquire();
    assert.ok(await eventually(async () => (await listeners(holder)).length === 1), 'a new LISTEN connection');
    assert.equal(await operator.mutex('forced-5').forceRelease(), true);
    assert.ok(await eventually(() => again.signal.aborted, 1_000), 'told on the new connection');
    await Promise.all(more.map((lease) => lease.release()));
  });

  it('the in-transaction check: a live holder’s transaction commits; a stale holder’s cannot, and no next holder is granted while a checked transaction is open', async () => {
    const a = padlock();
    const b = padlock({ prefix: prefixOf.get(a) });
    const name = 'account-1';
    const client = new pg.Client(server.config);
    await client.connect();
    try {
      // A live holder: its write commits.
      const live = await a.mutex(name).acquire();
      await client.query('BEGIN');
      await client.query('SELECT padlock.assert_holds($1, $2)', [name, live.fence]);
      await client.query('UPDATE accounts SET balance = balance + 1 WHERE id = 1');
      await client.query('COMMIT');
      await live.release();

      // A stale holder (a fixed lease of 300 ms, not renewed, long over): refused, nothing written.
      const stale = await a.mutex(name).acquire({ leaseMs: 300 });
      await delay(500);
      await client.query('BEGIN');
      await assert.rejects(client.query('SELECT padlock.assert_holds($1, $2)', [name, stale.fence]), /no longer held with fence/);
      await client.query('ROLLBACK');
      const [predicate] = (await client.query<{ held: boolean }>('SELECT padlock.holds($1, $2) AS held', [name, stale.fence])).rows;
      assert.equal(predicate?.held, false);

      // Checked while held, then the lease runs out with the transaction still open: the row stays
      // locked, so the next holder is granted only after that transaction ended.
      const checked = await a.mutex(name).acquire({ leaseMs: 300 });
      await client.query('BEGIN');
      await client.query('SELECT padlock.assert_holds($1, $2)', [name, checked.fence]);
      let grantedAt = 0;
      const next = b
        .mutex(name)
        .acquire({ waitMs: 10_000 })
        .then((lease: Lease) => {
          grantedAt = Date.now();
          return lease;
        });
      await delay(800);
      assert.equal(grantedAt, 0, 'not granted while the checked transaction is open, its lease over');
      await client.query('UPDATE accounts SET balance = balance + 1 WHERE id = 1');
      await client.query('COMMIT');
      const committedAt = Date.now();
      const lease = await next;
      assert.ok(grantedAt >= committedAt, 'granted after the commit');
      assert.ok(lease.fence > checked.fence);
      await lease.release();
      const [row] = (await client.query<{ balance: number }>('SELECT balance FROM accounts WHERE id = 1')).rows;
      assert.equal(row?.balance, 2, 'the live write and the checked write, not the stale one');
    } finally {
      await client.end();
    }
  });

  it('a read-only server is refused with a clear error (PostgresUnavailableError), and nothing is created there', async () => {
    await server.query('CREATE DATABASE readonly');
    await server.query('ALTER DATABASE readonly SET default_transaction_read_only = on');
    const ro = padlock({}, server.pool({ database: 'readonly', max: 2 }));
    const error = await ro.mutex('x').acquire().then(
      () => assert.fail('acquired on a read-only server'),
      (caught: unknown) => caught,
    );
    assert.ok(error instanceof PostgresUnavailableError);
    assert.equal(error.code, 'POSTGRES_UNAVAILABLE');
    assert.match(error.message, /read-only.*primary/);
    const check = new pg.Client({ ...server.config, database: 'readonly' });
    await check.connect();
    const [schema] = (await check.query<{ present: boolean }>(`SELECT to_regnamespace('padlock') IS NOT NULL AS present`)).rows;
    await check.end();
    assert.equal(schema?.present, false);
  });

  it('an idle waiter costs the server no transactions per second, and is woken within a few ms of the release', async (t) => {
    const holder = padlock();
    // The waiting Padlock's pool counts every statement it is sent (padlock's LISTEN client aside).
    const waiterPool = server.pool({ max: 4 });
    let statements = 0;
    const query = waiterPool.query.bind(waiterPool);
    waiterPool.query = ((...args: Parameters<typeof query>) => {
      statements++;
      return query(...args);
    }) as typeof waiterPool.query;
    const waiter = padlock({ prefix: prefixOf.get(holder) }, waiterPool);
    // The server's count of writing transactions so far (the next transaction id; reading it takes none). pg_stat_database's
    // xact_commit would do too, but PostgreSQL 15 flushes an idle backend's counts up to 10 s late.
    const nextXid = async (): Promise<number> => Number((await server.query<{ n: string }>(`SELECT pg_snapshot_xmax(pg_current_snapshot()) AS n`))[0]?.n);
    const latencies: number[] = [];
    for (let round = 0; round < 5; round++) {
      const held = await holder.mutex('idle').acquire();
      let wokenAt = 0;
      const waiting = waiter
        .mutex('idle')
        .acquire()
        .then((lease: Lease) => {
          wokenAt = performance.now();
          return lease;
        });
      if (round === 0) {
        assert.ok(await eventually(async () => (await rowsOf(prefixOf.get(holder) ?? '', true)) === 1), 'the waiter queued');
        await delay(100);
        const [firstXid, firstStatements] = [await nextXid(), statements];
        await delay(1_000);
        const [secondXid, secondStatements] = [await nextXid(), statements];
        t.diagnostic(`in 1 s of one waiter's wait: ${secondStatements - firstStatements} statements sent, ${secondXid - firstXid} transactions written`);
        assert.equal(secondStatements - firstStatements, 0, 'no statement sent while waiting');
        assert.equal(secondXid - firstXid, 0, 'no transaction on the server while waiting');
      } else {
        await delay(50);
      }
      const releasedAt = performance.now();
      await held.release();
      await (await waiting).release();
      latencies.push(wokenAt - releasedAt);
    }
    latencies.sort((x, y) => x - y);
    const median = latencies[2] ?? Infinity;
    t.diagnostic(`woken ${latencies.map((ms) => ms.toFixed(1)).join(', ')} ms after the release`);
    assert.ok(median < 50, `woken ${latencies.map((ms) => ms.toFixed(1)).join(', ')} ms after the release`);
  });

  it('nothing left behind once released and closed: no row, no LISTEN connection', async () => {
    const a = padlock();
    const b = padlock({ prefix: prefixOf.get(a) });
    const held = await a.mutex('left').acquire();
    const sem = await a.semaphore('left-sem', 2).acquire();
    const waiting = b.mutex('left').acquire({ waitMs: 5_000 });
    assert.ok(await eventually(async () => (await listeners(b)).length === 1), 'the waiter listens');
    await held.release();
    await (await waiting).release();
    await sem.release();
    await Promise.all([a.close(), b.close()]);
    assert.equal(await rowsOf(prefixOf.get(a) ?? ''), 0);
    assert.ok(await eventually(async () => (await listeners(a)).length + (await listeners(b)).length === 0), 'no LISTEN connection left');
  });

  it('bounded tables: a dead holder’s row on a name nobody takes again is swept by the next Padlock to connect', async () => {
    const dead = padlock();
    const prefix = prefixOf.get(dead) ?? '';
    await dead.mutex('never-again').acquire({ leaseMs: 100 });
    // As if its process had died two minutes ago: its lease long over, nobody releasing it.
    await server.query(`UPDATE padlock.participants SET expires_at = clock_timestamp() - interval '2 minutes' WHERE prefix = $1`, [prefix]);
    assert.equal(await rowsOf(prefix), 1);
    const next = padlock();
    assert.equal(await next.mutex('elsewhere').isLocked(), false);
    assert.ok(await eventually(async () => (await rowsOf(prefix)) === 0), 'swept');
  });

  it('a pool whose LISTEN connection never hears its NOTIFY (as through PgBouncer in transaction mode) fails the wait with an error naming the pooler', async () => {
    const holder = padlock();
    const held = await holder.mutex('unheard').acquire();
    // Statements reach this database; the listening client is another database's, where no NOTIFY sent here arrives.
    await server.query('CREATE DATABASE elsewhere');
    const statements = server.pool({ max: 2 });
    const listening = server.pool({ database: 'elsewhere', max: 1 });
    const split = new Proxy(statements, {
      get(target, key) {
        if (key === 'connect') return listening.connect.bind(listening);
        const value: unknown = Reflect.get(target, key, target);
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
    // A reply time-out with room for the connection and LISTEN before the probe's half of it (with
    // 500 ms, a loaded machine ran out of the call's bound first, and the error named no pooler).
    const waiter = padlock({ prefix: prefixOf.get(holder), replyTimeoutMs: 2_000 }, split);
    await assert.rejects(
      waiter.mutex('unheard').acquire({ waitMs: 5_000 }),
      (error: unknown) => error instanceof PostgresUnavailableError && /LISTEN received no NOTIFY.*PgBouncer/.test(error.message),
    );
    await held.release();
  });

  it('a schema of the user’s choice is created on first use; with postgresCreateSchema: false a missing one is an error naming the SQL to apply, which then works', async () => {
    const own = padlock({ postgresSchema: 'locks_here' });
    await (await own.mutex('s').acquire()).release();
    const [made] = await server.query<{ present: boolean }>(`SELECT to_regclass('locks_here.participants') IS NOT NULL AS present`);
    assert.equal(made?.present, true);

    const migrated = padlock({ postgresSchema: 'migrated', postgresCreateSchema: false });
    await assert.rejects(migrated.mutex('s').acquire(), (error: unknown) => error instanceof PostgresUnavailableError && /postgresSchemaSql\('migrated'\)/.test(error.message));
    const [absent] = await server.query<{ present: boolean }>(`SELECT to_regnamespace('migrated') IS NOT NULL AS present`);
    assert.equal(absent?.present, false, 'nothing created');
    const client = new pg.Client(server.config);
    await client.connect();
    await client.query(`BEGIN; ${postgresSchemaSql('migrated')} COMMIT;`);
    await client.end();
    const lease = await migrated.mutex('s').acquire();
    assert.ok(lease.fence >= 1);
    await lease.release();
  });

  it('bad options are refused with PadlockOptionError, naming the option, before anything reaches the server', async () => {
    const pool = server.pool({ max: 1 });
    const single = new pg.Client(server.config);
    assert.throws(() => new Padlock({ postgres: single as never }), (error: unknown) => error instanceof PadlockOptionError && error.option === 'postgres' && /Pool/.test(error.message));
    assert.throws(() => new Padlock({ postgres: pool, postgresSchema: 'Bad-Name' }), (error: unknown) => error instanceof PadlockOptionError && error.option === 'postgresSchema');
    assert.throws(() => new Padlock({ postgres: pool, postgresSchema: 'x; DROP TABLE accounts' }), PadlockOptionError);
    assert.throws(() => new Padlock({ postgres: pool, postgresCreateSchema: 'yes' as never }), (error: unknown) => error instanceof PadlockOptionError && error.option === 'postgresCreateSchema');
    assert.throws(() => new Padlock({ postgres: pool, livenessMs: 5_000 }), (error: unknown) => error instanceof PadlockOptionError && error.option === 'livenessMs');
    assert.throws(() => new Padlock({ etcd: {} as never, postgresSchema: 'padlock' }), PadlockOptionError);
    assert.equal(pool.totalCount, 0, 'no connection was made');
    assert.equal((await server.query(`SELECT 1 FROM accounts`)).length, 1);
  });

  it('a first wait against an address nothing listens on fails at once, naming the refusal (it is not an outage to ride out)', async () => {
    const nowhere = padlock({}, new pg.Pool({ ...server.config, port: await freePort(), max: 1 }));
    const startedAt = Date.now();
    const error = await nowhere.mutex('w').acquire({ waitMs: 10_000 }).then(() => undefined, (e: unknown) => e);
    const took = Date.now() - startedAt;
    assert.ok(error instanceof PostgresUnavailableError, `rejected with ${String(error)}`);
    assert.match(`${error.message} ${String(error.cause)}`, /ECONNREFUSED/);
    assert.ok(took < 2_000, `failed after ${took} ms of a 10 s wait`);
  });

  it('what a wait rides through: a refused connection, a terminated backend, no reply; never a missing database, a closed pool or a missing schema', async () => {
    const failure = async (pool: pg.Pool, sql = 'SELECT 1'): Promise<unknown> => {
      const error = await pool.query(sql).then(() => undefined, (e: unknown) => e);
      await pool.end().catch(() => undefined);
      return unavailable('x', error);
    };
    const refused = await failure(new pg.Pool({ ...server.config, port: await freePort(), max: 1 }));
    assert.equal(isTransientPostgres(refused), true, `a refused connection: ${String(refused)}`);
    // A socket error whose code has a SQLSTATE's shape (five capitals) is still a socket error.
    const broken = Object.assign(new Error('write EPIPE'), { code: 'EPIPE', errno: -32, syscall: 'write' });
    assert.equal(isTransientPostgres(unavailable('x', broken)), true, 'a broken pipe');

    const victim = server.pool({ max: 1 });
    const [{ pid } = { pid: 0 }] = (await victim.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows;
    const sleeping = victim.query('SELECT pg_sleep(5)').then(() => undefined, (e: unknown) => e);
    await eventually(async () => (await server.query(`SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND query LIKE 'SELECT pg_sleep%'`, [pid])).length === 1);
    await server.query('SELECT pg_terminate_backend($1)', [pid]);
    const terminated = unavailable('x', await sleeping);
    await victim.end().catch(() => undefined);
    assert.equal(isTransientPostgres(terminated), true, `a terminated backend: ${String(terminated)}`);

    const silent = internals(padlock()).store;
    assert.ok(silent instanceof PostgresStore);
    assert.equal(isTransientPostgres(silent.noReply('x', 10)), true, 'no reply in time');

    const missing = await failure(new pg.Pool({ ...server.config, database: 'no_such_database', max: 1 }));
    assert.equal(isTransientPostgres(missing), false, `a missing database: ${String(missing)}`);
    const closed = server.pool({ max: 1 });
    await closed.end();
    const ended = await failure(closed);
    assert.equal(isTransientPostgres(ended), false, `a closed pool: ${String(ended)}`);
    const noSchema = await padlock({ postgresSchema: 'never_made', postgresCreateSchema: false }).mutex('s').acquire().then(() => undefined, (e: unknown) => e);
    assert.ok(noSchema instanceof PostgresUnavailableError);
    assert.equal(isTransientPostgres(noSchema), false, `a missing schema: ${String(noSchema)}`);
  });
});
