/**
 * How `padlock list`, `inspect`, `watch` and `release` reach a consensus store: `--zookeeper
 * host:port[,…]` (through `node-zookeeper-client`) or `--etcd host:port[,…]` (through `etcd3`), each
 * loaded from the project only when asked for. The command opens a Padlock on that store with its
 * own client, and reads locks through the store's catalog (catalog.ts) instead of Redis's keys:
 * each lock's queue turned into the same LockState (`lockStateOf`) that Redis's inspection gives, so
 * every command prints it with its Redis renderer. Options that mean something only on Redis
 * (`--url`, `--cluster`, `--all`) are refused beside a store, naming the option ({@link namesStore}).
 * `reap` and `dashboard` stay Redis-only.
 */
import type { Command as CommanderCommand } from 'commander';
import type { LockCatalog } from '../catalog.js';
import { Padlock } from '../padlock.js';
import type { CommandContext } from './command.js';
import { CliError, ExitCode, firstLine, interruptedError, usageError } from './errors.js';
import { CONNECT_TIMEOUT_MS } from './redis-target.js';

/** The store flags, as commander parses them. */
export interface StoreFlags {
  readonly zookeeper?: string;
  readonly etcd?: string;
}

/** Adds `--zookeeper` and `--etcd` to `command`. */
export function withStoreOptions(command: CommanderCommand): CommanderCommand {
  return command
    .option('--zookeeper <hosts>', 'locks on a ZooKeeper ensemble instead of Redis: host:port[,host:port…] (needs node-zookeeper-client)')
    .option('--etcd <hosts>', 'locks on an etcd cluster instead of Redis: host:port[,host:port…] (needs etcd3)');
}

/**
 * Whether the flags name a consensus store (else the command talks to Redis).
 * @param redisOnly the command's own options that mean something only on Redis, by flag (`{ '--all': flags.all }`): each given is refused beside a store
 * @throws CliError (exit code 2) for two stores, or a store beside `--url`, `--cluster` or one of `redisOnly`
 */
export function namesStore(flags: StoreFlags & { readonly url?: string; readonly cluster?: boolean }, redisOnly: Readonly<Record<string, boolean | undefined>> = {}): boolean {
  const given = [flags.zookeeper, flags.etcd].filter((f) => f !== undefined).length;
  if (given > 1) throw usageError('give one store: --zookeeper or --etcd, not both');
  if (given === 1 && (flags.url !== undefined || flags.cluster === true)) throw usageError('--url and --cluster are for Redis: leave them out with --zookeeper or --etcd');
  const refused = given === 1 ? Object.keys(redisOnly).find((flag) => redisOnly[flag] === true) : undefined;
  // Ignored, it would print as if it had been honoured (e.g. `--all` listing tombstones a store never keeps).
  if (refused !== undefined) throw usageError(`${refused} is for Redis: leave it out with --zookeeper or --etcd`);
  return given === 1;
}

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
  const opened = flags.zookeeper !== undefined ? await openZooKeeper(hostsOf('--zookeeper', flags.zookeeper)) : await openEtcd(hostsOf('--etcd', flags.etcd ?? ''));
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
    opened.close();
  }
}

/** `host:port[,host:port…]`, checked. */
function hostsOf(flag: string, value: string): string[] {
  const hosts = value.split(',').map((h) => h.trim());
  if (hosts.length === 0 || hosts.some((h) => !/^[A-Za-z0-9.[\]:-]+:\d{1,5}$/.test(h))) throw usageError(`${flag} takes host:port[,host:port…], got '${value}'`);
  return hosts;
}

interface OpenedStore {
  readonly option: { readonly zookeeper: import('node-zookeeper-client').Client } | { readonly etcd: import('etcd3').Etcd3 };
  readonly description: string;
  close(): void;
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
