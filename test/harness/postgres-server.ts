/**
 * A real PostgreSQL server (Debian's `postgresql` package, 15) on a free loopback port, its data in a
 * temporary directory, for the tests (test/harness/postgres.ts stops it after a file) and the
 * benchmarks. PostgreSQL refuses to run as root: as root, initdb and the server run as the
 * `postgres` user (spawned with its uid), which must own the directory.
 *
 * `fsync=off`: a test kills server processes, never the machine, and the operating system keeps
 * every write a killed process made; commits are still synchronous (the default), as padlock's
 * fences assume (docs/postgres.md).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, closeSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { freePort } from '../../src/devserver/redis-server.js';
import './terminated.js';
import { exitedAtStart, onFreshPorts } from './port-taken.js';

/** The server's programs: `POSTGRES_BIN`, else Debian's newest installed major version (15 on bookworm). */
const BIN = process.env['POSTGRES_BIN'] ?? debianBin();

function debianBin(): string {
  let majors: number[] = [];
  try {
    majors = readdirSync('/usr/lib/postgresql').map(Number).filter(Number.isInteger);
  } catch {
    // Not installed: postgresInstalled() says so.
  }
  return `/usr/lib/postgresql/${Math.max(15, ...majors)}/bin`;
}

/** A running server and what the tests do to it. */
export interface PostgresServer {
  readonly port: number;
  /** pg's connection settings for this server's `postgres` database (as `postgres`, trusted). */
  readonly config: pg.PoolConfig;
  /** A pool of this server (ended by {@link stop}). */
  pool(config?: pg.PoolConfig): pg.Pool;
  /** One statement on the harness's own pool. */
  query<Row extends pg.QueryResultRow = pg.QueryResultRow>(sql: string, values?: unknown[]): Promise<Row[]>;
  /** Whether the server runs. */
  readonly running: boolean;
  /** Stops the server as a crash does (`immediate`: no checkpoint; the next start recovers from the WAL). */
  crash(): Promise<void>;
  /** Starts it again on the same port and data. */
  start(): Promise<void>;
  /** Stops it and removes its data. Safe to call twice. */
  stop(): Promise<void>;
}

// Whatever happens to the test process, no server outlives it (an exit, or the runner's SIGTERM).
const live = new Set<ChildProcess>();
const killAll = (): void => {
  for (const child of live) child.kill('SIGKILL');
};
process.once('exit', killAll);
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    killAll();
    process.exit(128 + (signal === 'SIGTERM' ? 15 : 2));
  });
}

/** The uid and gid to run PostgreSQL as: the `postgres` user when we are root, else ourselves. */
function runAs(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('postgres:'));
  const [, , uid, gid] = line?.split(':') ?? [];
  if (uid === undefined || gid === undefined) throw new Error('running as root, and there is no postgres user to run PostgreSQL as');
  return { uid: Number(uid), gid: Number(gid) };
}

/** Whether this machine has the server (the tests that need it skip, saying why, where it has not). */
export function postgresInstalled(): boolean {
  return spawnSync(join(BIN, 'postgres'), ['--version']).status === 0;
}

/** Starts a fresh server on a free loopback port; the caller stops it. */
export async function startPostgresServer(settings: readonly string[] = []): Promise<PostgresServer> {
  const user = runAs();
  const dir = mkdtempSync(join(tmpdir(), 'padlock-postgres-'));
  const data = join(dir, 'data');
  if (user !== undefined) chownSync(dir, user.uid, user.gid);
  const init = spawnSync(join(BIN, 'initdb'), ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8'], { ...user, encoding: 'utf8' });
  if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr}`);
  // Chosen again if the first start finds its port taken (port-taken.ts); fixed from then on.
  let port = 0;
  let args: string[] = [];
  let config: pg.PoolConfig = {};
  const choosePort = async (): Promise<void> => {
    port = await freePort();
    args = ['-D', data, '-p', String(port), '-k', dir, '-c', 'listen_addresses=127.0.0.1', '-c', 'fsync=off', '-c', 'max_connections=200', ...settings.flatMap((s) => ['-c', s])];
    config = { host: '127.0.0.1', port, user: 'postgres', database: 'postgres' };
  };
  const pools: pg.Pool[] = [];
  const makePool = (extra: pg.PoolConfig = {}): pg.Pool => {
    const made = new pg.Pool({ ...config, ...extra });
    // A pool's idle client that loses its server emits 'error' on the pool: a fault the tests make.
    made.on('error', () => undefined);
    pools.push(made);
    return made;
  };
  let child: ChildProcess | undefined;
  let stopped = false;

  const start = async (): Promise<void> => {
    if (child !== undefined) return;
    const out = openSync(join(dir, 'postgres.log'), 'a');
    const started = spawn(join(BIN, 'postgres'), args, { ...user, stdio: ['ignore', out, out] });
    closeSync(out);
    child = started;
    live.add(started);
    started.once('exit', () => {
      live.delete(started);
      if (child === started) child = undefined;
    });
    const end = Date.now() + 30_000;
    for (;;) {
      if (child !== started) throw exitedAtStart('postgres', join(dir, 'postgres.log'));
      const probe = new pg.Client(config);
      probe.on('error', () => undefined);
      try {
        await probe.connect();
        await probe.query('SELECT 1');
        await probe.end();
        return;
      } catch {
        await probe.end().catch(() => undefined);
        if (Date.now() > end) throw new Error('postgres did not answer within 30 s');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
  };
  const halt = async (signal: NodeJS.Signals): Promise<void> => {
    const running = child;
    if (running === undefined) return;
    child = undefined;
    const exited = new Promise((resolve) => running.once('exit', resolve));
    running.kill(signal);
    await exited;
  };

  try {
    await onFreshPorts(async () => {
      await choosePort();
      await start();
    });
  } catch (error) {
    // A server that started but never answered is stopped too.
    await halt('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  const admin = makePool({ max: 2 });
  return {
    port,
    config,
    pool: makePool,
    async query<Row extends pg.QueryResultRow>(sql: string, values: unknown[] = []): Promise<Row[]> {
      return (await admin.query<Row>(sql, values)).rows;
    },
    get running() {
      return child !== undefined;
    },
    crash: () => halt('SIGQUIT'),
    start,
    async stop() {
      if (stopped) return;
      stopped = true;
      await Promise.allSettled(pools.map((p) => p.end()));
      await halt('SIGQUIT');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
