/**
 * `padlock list [pattern]`: every lock in use (held, or with waiters) under the prefix, found with
 * SCAN on the server or on every master of a Cluster, one line each.
 */
import type { Command as CommanderCommand } from 'commander';
import { kindLabel, type HolderState, type LockState } from '../lock-state.js';
import { listLocks } from '../stores/redis/inspection.js';
import type { CommandContext } from './command.js';
import { redisFailure } from './connection.js';
import { evictionLines, readServerPolicies, type ServerPolicy } from './eviction.js';
import { ExitCode } from './errors.js';
import { checkedPrefix, withConnectionOptions, withSession, type ConnectionFlags, type Session } from './operator.js';
import { namesStore, withStoreOptions, withStoreSession, type StoreFlags, type StoreSession } from './store-session.js';
import { globMatches, lockStateOf } from '../catalog.js';
import { terminalOutput } from './progress.js';
import { colors, duration, shortToken, table, type Colors } from './render.js';

/** Flags of `padlock list`. */
export interface ListFlags extends ConnectionFlags, StoreFlags {
  readonly all?: boolean;
}

/** One lock in `padlock list --json` (and `watch --json`): a {@link LockState} without its waiters and keys (one row per family using a name). */
export type LockSummary = Omit<LockState, 'waiters' | 'keys'>;

/** What `padlock list --json` prints. */
export interface ListReport {
  /** Where the locks were read: Redis's URL and topology (absent on a consensus store, see {@link store}). */
  readonly redis?: { readonly url: string; readonly topology: string };
  /** Another store's description (`--zookeeper`, `--etcd`, `--postgres`), instead of {@link redis}. */
  readonly store?: string;
  readonly prefix: string;
  readonly pattern: string;
  readonly locks: readonly LockSummary[];
  /** Each server's maxmemory-policy: one that evicts may take a lock away (docs/safety.md). */
  readonly servers: readonly ServerPolicy[];
}

/** Waiters read per lock to count the dead ones and find the longest wait. */
export const LIST_WAITERS = 100;

/** Declares `padlock list` on `program`; its action passes its exit code to `exit`. */
export function declareList(program: CommanderCommand, context: CommandContext, exit: (code: number) => void): void {
  withConnectionOptions(
    withStoreOptions(program
      .command('list'))
      .summary('every lock in use: holder, hold count, lease left, fence, waiters')
      .description(
        'Lists every lock in use (held, or with queued waiters) under the prefix whose name matches ' +
          'the pattern (a Redis glob: * ? [abc]), found with SCAN (never KEYS): on a Cluster, on ' +
          'every master. One line per lock: kind (mutex, readWrite, semaphore with its permits ' +
          'held/limit; a name used by several kinds has a line for each), holders (side, permits) and ' +
          'hold counts, lease left, fence, live waiters and how long the longest-queued one has waited.',
      )
      .argument('[pattern]', 'lock names to list', '*')
      .option('--all', 'also free locks whose key remains (a freed lock keeps its key an hour, with its last fence)'),
    'print a JSON object instead of a table (fields: docs/cli.md)',
  )
    .addHelpText('after', EXIT_STATUS)
    .action(async (pattern: string, flags: ListFlags) => exit(await runList(pattern, flags, context)));
}

const EXIT_STATUS = `
Exit status: 0 listed (even none), 1 Redis unreachable or lost, 2 bad command line, 130 interrupted.`;

async function runList(pattern: string, flags: ListFlags, context: CommandContext): Promise<number> {
  if (namesStore(flags, { '--all': flags.all })) return runListOnStore(pattern, flags, context);
  await withSession(flags, context, async (session) => {
    const locks = await readList(session, pattern, flags.all === true);
    const servers = await readServerPolicies(session.connection);
    if (flags.json === true) {
      const report: ListReport = {
        redis: { url: session.connection.displayUrl, topology: session.connection.topology },
        prefix: session.prefix,
        pattern,
        locks: locks.map(summary),
        servers,
      };
      context.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
      return;
    }
    const c = colors(terminalOutput(context.stdout, context.env));
    context.stdout.write(`${[locks.length === 0 ? noLocks(session.prefix, pattern, flags.all === true) : lockTable(locks, c), ...evictionLines(servers, c)].join('\n')}\n`);
  });
  return ExitCode.ok;
}

/** `padlock list` on a consensus store: the same table, read through the store's catalog. */
async function runListOnStore(pattern: string, flags: ListFlags, context: CommandContext): Promise<number> {
  const prefix = checkedPrefix(flags.prefix);
  await withStoreSession(flags, prefix, context, async (session) => {
    const locks = await readStoreList(session, pattern);
    if (flags.json === true) {
      const report: ListReport = { store: session.description, prefix, pattern, locks: locks.map(summary), servers: [] };
      context.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
      return;
    }
    const c = colors(terminalOutput(context.stdout, context.env));
    context.stdout.write(`${locks.length === 0 ? noLocks(prefix, pattern, false) : lockTable(locks, c)}\n`);
  });
  return ExitCode.ok;
}

/** The locks matching `pattern`, read; any Redis failure as a one-line error. */
export async function readList(session: Session, pattern: string, all: boolean): Promise<LockState[]> {
  try {
    return await listLocks(await session.connection.scanNodes(), session.reader, session.prefix, pattern, { all, waiters: LIST_WAITERS });
  } catch (error) {
    throw redisFailure(error, session.connection);
  }
}

/** The locks in use on a consensus store whose name matches `pattern`, through its catalog (a store keeps nothing of a free lock). */
export async function readStoreList(session: StoreSession, pattern: string): Promise<LockState[]> {
  return (await session.catalog.locks()).filter((lock) => globMatches(pattern, lock.name)).map((lock) => lockStateOf(lock, LIST_WAITERS));
}

/** The message for an empty list. */
export function noLocks(prefix: string, pattern: string, all: boolean): string {
  return `No locks ${all ? '' : 'in use '}under prefix '${prefix}'${pattern === '*' ? '' : ` matching '${pattern}'`}.`;
}

/** A lock without its waiters and keys: one entry of `list --json`. */
export function summary(state: LockState): LockSummary {
  return {
    name: state.name,
    kind: state.kind,
    held: state.held,
    fence: state.fence,
    leaseMs: state.leaseMs,
    holders: state.holders,
    waiting: state.waiting,
    oldestWaitMs: state.oldestWaitMs,
    lastFence: state.lastFence,
    ...(state.permits === undefined ? {} : { permits: state.permits }),
  };
}

/**
 * The kind column: a semaphore's with its permits held of its limit (`?`: not stored); a mutex's as
 * `mutex (fair)` when waiters queued through `fairMutex`. A mutex and a fair mutex of one name are
 * one lock (one key, no record of which kind took it): only the queue's entries say their kind.
 */
export function kindCell(lock: LockState): string {
  return kindLabel(lock);
}

/** A holder on one line: its side (read/write lock), its owner token (cut with `short`), its permits (semaphore). */
export function holderCell(holder: HolderState, short: (token: string) => string = shortToken): string {
  const side = holder.side === undefined ? '' : `${holder.side} `;
  const permits = holder.permits === undefined ? '' : ` (${holder.permits} ${holder.permits === 1 ? 'permit' : 'permits'})`;
  return `${side}${short(holder.owner)}${permits}`;
}

/** The table `list` prints and `watch` redraws. */
export function lockTable(locks: readonly LockState[], c: Colors): string {
  const dash = c.dim('—');
  const rows = locks.map((lock) => [
    lock.name,
    kindCell(lock),
    lock.held ? lock.holders.map((h) => holderCell(h)).join(', ') : c.dim('free'),
    lock.held ? lock.holders.map((h) => String(h.holdCount)).join(', ') : dash,
    lock.held ? duration(lock.leaseMs) : dash,
    lock.fence === null ? dash : String(lock.fence),
    lock.waiting > 0 ? c.yellow(String(lock.waiting)) : '0',
    lock.oldestWaitMs === null ? dash : duration(lock.oldestWaitMs),
  ]);
  return table(
    [
      { title: 'lock' },
      { title: 'kind' },
      { title: 'holder' },
      { title: 'holds', align: 'right' },
      { title: 'lease left', align: 'right' },
      { title: 'fence', align: 'right' },
      { title: 'waiting', align: 'right' },
      { title: 'oldest wait', align: 'right' },
    ],
    rows,
    c.bold,
  );
}
