/**
 * How `padlock list`, `inspect`, `watch` and `release` reach a store other than Redis: `--zookeeper
 * host:port[,…]` (through `node-zookeeper-client`), `--etcd host:port[,…]` (through `etcd3`) or
 * `--postgres <connection string>` (through `pg`, in the schema `--postgres-schema` names), each
 * loaded from the project only when asked for. The command opens a Padlock on that store with its
 * own client (on PostgreSQL, one that never installs the schema), and reads locks through the
 * store's catalog (catalog.ts) instead of Redis's keys:
 * each lock's queue turned into the same LockState (`lockStateOf`) that Redis's inspection gives, so
 * every command prints it with its Redis renderer. Options that mean something only on Redis
 * (`--url`, `--cluster`, `--all`) are refused beside a store, naming the option ({@link namesStore}).
 * `dashboard` serves a store's catalog through this session too; `reap` stays Redis-only.
 */
import type { Command as CommanderCommand } from 'commander';
import type { LockCatalog } from '../catalog.js';
import { Padlock } from '../padlock.js';
import type { CommandContext } from './command.js';
import { CliError, ExitCode, firstLine, interruptedError, usageError } from './errors.js';
import { CONNECT_TIMEOUT_MS } from './redis-target.js';
import { SCHEMA_PATTERN } from '../stores/postgres/postgres-schema.js';

/** The store flags, as commander parses them. */
export interface StoreFlags {
  readonly zookeeper?: string;
  readonly etcd?: string;
  /** A PostgreSQL connection string (`postgres://…`). */
  readonly postgres?: string;
  /** With `postgres`: the schema of padlock's tables (the Padlock's `postgresSchema`). */
  readonly postgresSchema?: string;
}

/** Adds `--zookeeper`, `--etcd`, `--postgres` and `--postgres-schema` to `command`. */
export function withStoreOptions(command: CommanderCommand): CommanderCommand {
  return command
    .option('--zookeeper <hosts>', 'locks on a ZooKeeper ensemble instead of Redis: host:port[,host:port…] (needs node-zookeeper-client)')
    .option('--etcd <hosts>', 'locks on an etcd cluster instead of Redis: host:port[,host:port…] (needs etcd3)')
    .option('--postgres <url>', 'locks on a PostgreSQL server instead of Redis: postgres://user[:password]@host[:port]/database (needs pg)')
    .option('--postgres-schema <name>', "with --postgres: the schema of padlock's tables (default: padlock)");
}

/**
 * Whether the flags name a consensus store (else the command talks to Redis).
 * @param redisOnly the command's own options that mean something only on Redis, by flag (`{ '--all': flags.all }`): each given is refused beside a store
 * @throws CliError (exit code 2) for two stores, or a store beside `--url`, `--cluster` or one of `redisOnly`
 */
export function namesStore(flags: StoreFlags & { readonly url?: string; readonly cluster?: boolean }, redisOnly: Readonly<Record<string, boolean | undefined>> = {}): boolean {
  const given = [flags.zookeeper, flags.etcd, flags.postgres].filter((f) => f !== undefined).length;
  if (given > 1) throw usageError(`give one store: ${STORE_FLAGS}, not two`);
  if (flags.postgresSchema !== undefined && flags.postgres === undefined) throw usageError('--postgres-schema goes with --postgres');
  if (given === 1 && (flags.url !== undefined || flags.cluster === true)) throw usageError(`--url and --cluster are for Redis: leave them out with ${STORE_FLAGS}`);
  const refused = given === 1 ? Object.keys(redisOnly).find((flag) => redisOnly[flag] === true) : undefined;
  // Ignored, it would print as if it had been honoured (e.g. `--all` listing tombstones a store never keeps).
  if (refused !== undefined) throw usageError(`${refused} is for Redis: leave it out with ${STORE_FLAGS}`);
  return given === 1;
}

const STORE_FLAGS = '--zookeeper, --etcd or --postgres';

/** What a command works with on a consensus store. */
export interface StoreSession {
  /** A Padlock on the store (to force-release through the library's own `forceRelease()`). */
  readonly padlock: Padlock;
  readonly catalog: LockCatalog;
  readonly prefix: string;
  /** `ZooKeeper 127.0.0.1:2181` or `etcd 127.0.0.1:2379`. */
  readonly description: string;
}

/**
 * Opens the store the flags name, runs `work`, and closes everything, whatever happens.
 * @throws CliError when the client library is missing (1), the store unreachable (1), the hosts malformed (2)
 */
export async function withStoreSession<T>(flags: StoreFlags, prefix: string, context: CommandContext, work: (session: StoreSession) => Promise<T>): Promise<T> {
  const opened =
    flags.zookeeper !== undefined
      ? await openZooKeeper(hostsOf('--zookeeper', flags.zookeeper))
      : flags.postgres !== undefined
        ? await openPostgres(flags.postgres, flags.postgresSchema ?? 'padlock')
        : await openEtcd(hostsOf('--etcd', flags.etcd ?? ''));
  try {
    if (context.signal.aborted) throw interruptedError(context.signal);
    const padlock = new Padlock({ ...opened.option, prefix, metrics: false });
    try {
      const { store } = padlock.shared;
      const catalog = store.catalog?.();
      if (catalog === undefined) throw new CliError(`${store.description} has no catalog`);
      try {
        return await work({ padlock, catalog, prefix, description: opened.description });
      } catch (error) {
        if (error instanceof CliError) throw error;
        throw new CliError(`${opened.description}: ${firstLine(error)}`, ExitCode.failure, { cause: error });
      } finally {
        await catalog.close();
      }
    } finally {
      await padlock.close({ drainMs: 0 });
    }
  } finally {
    await opened.close();
  }
}

/** `host:port[,host:port…]`, checked. */
function hostsOf(flag: string, value: string): string[] {
  const hosts = value.split(',').map((h) => h.trim());
  if (hosts.length === 0 || hosts.some((h) => !/^[A-Za-z0-9.[\]:-]+:\d{1,5}$/.test(h))) throw usageError(`${flag} takes host:port[,host:port…], got '${value}'`);
  return hosts;
}

interface OpenedStore {
  readonly option:
    | { readonly zookeeper: import('node-zookeeper-client').Client }
    | { readonly etcd: import('etcd3').Etcd3 }
    | { readonly postgres: import('pg').Pool; readonly postgresSchema: string; readonly postgresCreateSchema: false };
  readonly description: string;
  close(): void | Promise<void>;
}

async function load(name: string): Promise<unknown> {
  try {
    return await import(name);
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    if (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') throw new CliError(`this needs the client library '${name}': npm install ${name}`);
    throw new CliError(`'${name}' is installed but does not load: ${firstLine(error)}`, ExitCode.failure, { cause: error });
  }
}

async function openZooKeeper(hosts: readonly string[]): Promise<OpenedStore> {
  const zookeeper = (await load('node-zookeeper-client')) as typeof import('node-zookeeper-client');
  const client = zookeeper.createClient(hosts.join(','), { sessionTimeout: 10_000, retries: 0 });
  const description = `ZooKeeper ${hosts.join(',')}`;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      client.close();
      reject(new CliError(`could not reach ${description} within ${CONNECT_TIMEOUT_MS / 1000} s`));
    }, CONNECT_TIMEOUT_MS);
    client.once('connected', () => {
      clearTimeout(timer);
      resolve();
    });
    client.connect();
  });
  return { option: { zookeeper: client }, description, close: () => client.close() };
}

async function openEtcd(hosts: readonly string[]): Promise<OpenedStore> {
  const { Etcd3 } = (await load('etcd3')) as typeof import('etcd3');
  const client = new Etcd3({ hosts: hosts.map((h) => `http://${h}`), dialTimeout: CONNECT_TIMEOUT_MS });
  const description = `etcd ${hosts.join(',')}`;
  try {
    await client.maintenance.status();
  } catch (error) {
    client.close();
    throw new CliError(`could not reach ${description}: ${firstLine(error)}`, ExitCode.failure, { cause: error });
  }
  return { option: { etcd: client }, description, close: () => client.close() };
}

/**
 * A pool on `url` (one connection is checked out at once, to fail early and name the server), for
 * a Padlock that never installs padlock's schema: an operator's command reads or frees, it does not
 * migrate a database.
 * @throws CliError when `url` or `schema` is malformed (2), or the server is unreachable (1)
 */
async function openPostgres(url: string, schema: string): Promise<OpenedStore> {
  const where = parsedPostgresUrl(url);
  if (where === undefined) throw usageError(`--postgres takes a connection string postgres://user[:password]@host[:port]/database, got '${redactPassword(url)}'`);
  if (!SCHEMA_PATTERN.test(schema)) throw usageError(`--postgres-schema takes an unquoted lower-case identifier (a-z, 0-9, _; up to 63), got '${schema}'`);
  const pg = (await load('pg')) as { default: typeof import('pg') };
  const pool = new pg.default.Pool({ connectionString: url, connectionTimeoutMillis: CONNECT_TIMEOUT_MS, max: 4, application_name: 'padlock-cli' });
  // An idle client that loses its server emits 'error' on the pool: the next query reports it.
  pool.on('error', () => undefined);
  let description = `PostgreSQL ${where.host}${where.pathname === '/' ? '' : where.pathname}`;
  try {
    const client = await pool.connect();
    // What pg connected to once its defaults and the environment were applied: the server, named.
    description = `PostgreSQL ${client.host}:${client.port}/${client.database ?? ''}`;
    client.release();
  } catch (error) {
    await pool.end().catch(() => undefined);
    throw new CliError(`could not reach ${description}: ${firstLine(error)}`, ExitCode.failure, { cause: error });
  }
  return { option: { postgres: pool, postgresSchema: schema, postgresCreateSchema: false }, description, close: () => pool.end().catch(() => undefined) };
}

/** `url` parsed, when it is a `postgres://` or `postgresql://` URL. */
function parsedPostgresUrl(url: string): URL | undefined {
  if (!/^postgres(ql)?:\/\//.test(url)) return undefined;
  try {
    return new URL(url);
  } catch {
    return undefined;
  }
}

/** `url` with its password, if any, replaced by `***` (it is echoed in an error). */
function redactPassword(url: string): string {
  return url.replace(/^([a-z]+:\/\/[^:@/]*:)[^@/]*@/, '$1***@');
}
