/**
 * `padlock dashboard`: the live web dashboard (src/dashboard/) served on its own, on loopback by
 * default. Prints the URL it listens on as its first line, then serves until Ctrl-C or SIGTERM,
 * or until the connection to Redis is lost for good. `--url` given several times names the
 * independent masters of a Redlock set. With `--zookeeper`, `--etcd` or `--postgres` it reads that
 * store through its catalog (CatalogSource) on a Padlock of its own; a store that stops answering
 * shows on the page as a failed read, and the dashboard serves on.
 */
import { Option, type Command as CommanderCommand } from 'commander';
import { createDashboard } from '../dashboard/handler.js';
import { serveDashboard, type DashboardServer } from '../dashboard/server.js';
import type { RedisClient } from '../stores/redis/adapters/clients.js';
import { checkPrefix } from '../options.js';
import type { CommandContext } from './command.js';
import { connect, parseTarget, type Connection } from './connection.js';
import { CliError, ExitCode, firstLine, interruptedError, usageError } from './errors.js';
import { namesStore, withStoreOptions, withStoreSession, type StoreFlags } from './store-session.js';
import { durationParser, integerParser } from './values.js';
import { CatalogSource } from '../dashboard/catalog-source.js';
import type { Dashboard } from '../dashboard/handler.js';

/** Flags of `padlock dashboard`. */
export interface DashboardFlags extends StoreFlags {
  readonly url: readonly string[];
  readonly cluster?: boolean;
  readonly prefix: string;
  readonly host: string;
  readonly port: number;
  readonly allowRelease?: boolean;
  readonly interval: number;
}

/** Declares `padlock dashboard` on `program`; its action passes its exit code to `exit`. */
export function declareDashboard(program: CommanderCommand, context: CommandContext, exit: (code: number) => void): void {
  withStoreOptions(program
    .command('dashboard'))
    .summary('a live web page of the locks: holders, fences, waiters, dead holders, hold/wait times')
    .description(
      'Serves a live web dashboard of every lock in use under the prefix: kind, holder (and whether ' +
        'its client is alive), fence, lease left, hold age, waiters; dead holders flagged; hold and wait ' +
        'times where Padlocks record them (recordTimings). Read-only unless --allow-release, which ' +
        'offers Force release on each held lock (the operator types its name to confirm; recorded ' +
        'in an audit log kept in Redis). Prints the URL first, then serves until Ctrl-C. With ' +
        "--zookeeper, --etcd or --postgres, read through the store's catalog: no hold/wait times, " +
        "and the audit log is kept in the dashboard's memory.",
    )
    .option('--url <url>', 'the Redis: redis://…, rediss://… or redis+sentinel://… (default: $REDIS_URL); several --url: the masters of a Redlock set', (value: string, previous: string[]) => [...previous, value], [] as string[])
    .option('--cluster', 'the URL is a node of a Redis Cluster (found out by itself otherwise)')
    .option('--prefix <prefix>', 'the key prefix the Padlock clients use', 'padlock')
    .option('--host <host>', 'the address to listen on (keep it loopback unless something in front authenticates)', '127.0.0.1')
    .option('--port <port>', 'the port to listen on (0: a free one)', integerParser('--port', 0, 65_535), 8_080)
    .option('--allow-release', 'offer Force release on each held lock')
    .addOption(new Option('--interval <duration>', 'time between two reads while a page is open (500ms, 2s)').argParser(durationParser('--interval', 100, 60_000)).default(1_000, '1s'))
    .addHelpText('after', '\nExit status: 0 stopped by Ctrl-C, 1 Redis unreachable or lost, or the port taken, 2 bad command line, 143 SIGTERM.')
    .action(async (flags: DashboardFlags) => exit(await runDashboard(flags, context)));
}

async function runDashboard(flags: DashboardFlags, context: CommandContext): Promise<number> {
  let prefix: string;
  try {
    prefix = checkPrefix(flags.prefix);
  } catch {
    throw usageError(`--prefix must be 1 to 64 characters from A-Z a-z 0-9 _ . : -, got '${flags.prefix}'`);
  }
  // `--url` is a list here (Redlock's masters): any given is refused beside a store.
  const { url, ...rest } = flags;
  if (namesStore(url.length > 0 ? { ...rest, url: url.join(',') } : rest)) return runDashboardOnStore(prefix, flags, context);
  const urls = flags.url.length > 0 ? flags.url : [undefined];
  if (urls.length === 2) throw usageError('Redlock needs 3 or more masters: give --url once, or 3 or more times');
  const targets = urls.map((url) => parseTarget({ url, cluster: flags.cluster === true, env: context.env }));
  if (targets.length > 1 && targets.some((t) => t.topology !== 'server')) throw usageError('several --url name the masters of a Redlock set: each must be a redis:// URL of one server');
  if (context.signal.aborted) throw interruptedError(context.signal);
  const connections: Connection[] = [];
  let server: DashboardServer | undefined;
  try {
    for (const target of targets) connections.push(await connect(target, context.env));
    if (connections.length > 1 && connections.some((c) => c.topology !== 'server')) throw usageError('several --url name the masters of a Redlock set: none may be a Cluster node');
    const clients: RedisClient[] = connections.map((c) => c.client);
    const description = connections.length > 1 ? `Redlock over ${connections.map((c) => c.displayUrl).join(', ')}` : (connections[0] as Connection).description;
    const dashboard = createDashboard({
      redis: clients.length > 1 ? clients : (clients[0]),
      prefix,
      description: `${description}, prefix ${prefix}`,
      allowRelease: flags.allowRelease === true,
      intervalMs: flags.interval,
    });
    server = await listen(dashboard, flags);
    context.stdout.write(`${server.url}\n`);
    context.stdout.write(`padlock dashboard: ${description}, prefix ${prefix}; ${flags.allowRelease === true ? 'Force release offered' : 'read-only (--allow-release offers Force release)'}. Ctrl-C to stop.\n`);
    const lost = await new Promise<Error | undefined>((resolve) => {
      if (context.signal.aborted) return resolve(undefined);
      context.signal.addEventListener('abort', () => resolve(undefined), { once: true });
      for (const connection of connections) connection.onLost((error) => resolve(error));
    });
    if (lost !== undefined) throw new CliError(`lost the connection to Redis: ${firstLine(lost)}`);
    if (context.signal.reason === 'SIGTERM') throw interruptedError(context.signal);
    return ExitCode.ok;
  } finally {
    await server?.close();
    for (const connection of connections) connection.close();
  }
}

/** `padlock dashboard` on ZooKeeper, etcd or PostgreSQL: the page reads the store's catalog, force-releases go through `forceRelease()`. */
async function runDashboardOnStore(prefix: string, flags: DashboardFlags, context: CommandContext): Promise<number> {
  return withStoreSession(flags, prefix, context, async (session) => {
    const description = `${session.description}, prefix ${prefix}`;
    const source = new CatalogSource({ padlock: session.padlock, description });
    const dashboard = createDashboard({ source, allowRelease: flags.allowRelease === true, intervalMs: flags.interval });
    const server = await listen(dashboard, flags).catch(async (error: unknown) => {
      await source.close();
      throw error;
    });
    try {
      context.stdout.write(`${server.url}\n`);
      context.stdout.write(`padlock dashboard: ${description}; ${flags.allowRelease === true ? 'Force release offered' : 'read-only (--allow-release offers Force release)'}. Ctrl-C to stop.\n`);
      await new Promise<void>((resolve) => {
        if (context.signal.aborted) return resolve();
        context.signal.addEventListener('abort', () => resolve(), { once: true });
      });
      if (context.signal.reason === 'SIGTERM') throw interruptedError(context.signal);
      return ExitCode.ok;
    } finally {
      // A source given is the caller's to close; the session closes the Padlock and the client.
      await server.close();
      await source.close();
    }
  });
}

/** Serves `dashboard` where the flags say; closes it when the port cannot be had. */
async function listen(dashboard: Dashboard, flags: DashboardFlags): Promise<DashboardServer> {
  try {
    return await serveDashboard(dashboard, flags.host, flags.port);
  } catch (error) {
    await dashboard.close();
    throw new CliError(`cannot listen on ${flags.host}:${flags.port}: ${firstLine(error)}`, ExitCode.failure, { cause: error });
  }
}
