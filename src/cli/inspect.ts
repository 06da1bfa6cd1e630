/**
 * `padlock inspect <name>`: one lock in full: holders, fence, lease, each queued waiter, and its raw
 * keys with their time to live. On another store (`--zookeeper`, `--etcd`, `--postgres`) the lock is read
 * through the store's catalog and printed by the same renderer, without what the store does not
 * keep (keys, waiters' timings, a ZooKeeper hold's lease).
 */
import type { Command as CommanderCommand } from 'commander';
import { lockStateOf } from '../catalog.js';
import { kindLabel, type LockState } from '../lock-state.js';
import { LockReaper, type HolderLiveness } from '../stores/redis/inspection.js';
import { checkName } from '../options.js';
import { connectionFor } from '../stores/redis/adapters/clients.js';
import type { CommandContext } from './command.js';
import { redisFailure } from './connection.js';
import { evictionLines, readServerPolicies, type ServerPolicy } from './eviction.js';
import { ExitCode, usageError } from './errors.js';
import { checkedPrefix, withConnectionOptions, withSession, type ConnectionFlags, type Session } from './operator.js';
import { terminalOutput } from './progress.js';
import { colors, duration, table, type Colors, type Column } from './render.js';
import { namesStore, withStoreOptions, withStoreSession, type StoreFlags } from './store-session.js';
import { integerParser } from './values.js';

/** Flags of `padlock inspect`. */
export interface InspectFlags extends ConnectionFlags, StoreFlags {
  readonly waiters: number;
}

/** A lock as `inspect` shows it: its state, and for a held mutex whether its holder is dead. */
export type InspectedLock = LockState & {
  /**
   * A held mutex's: `dead` when every client holding it let its liveness key run out (`padlock
   * reap` would free it), `alive`, or `unknown` (its clients unrecorded). Absent for other kinds
   * and free locks.
   */
  readonly holderLiveness?: HolderLiveness;
};

/** What `padlock inspect --json` prints: the lock's whole {@link LockState}. */
export interface InspectReport {
  /** Where the lock was read: Redis's URL and topology (absent on a consensus store, see {@link store}). */
  readonly redis?: { readonly url: string; readonly topology: string };
  /** Another store's description (`--zookeeper`, `--etcd`, `--postgres`), instead of {@link redis}. */
  readonly store?: string;
  readonly prefix: string;
  /**
   * Whether Redis has any key of that name: `false` for a name never used (or unused for over an
   * hour). On a consensus store: whether the name has a holder or a waiter.
   */
  readonly known: boolean;
  /** The first of {@link locks}: the name's mutex when it has keys (or no kind has), else its first other kind. */
  readonly lock: InspectedLock;
  /** Every kind's lock of that name that has a key (mutex, readWrite, semaphore, in that order); one free mutex when none has. */
  readonly locks: readonly InspectedLock[];
  /** Each server's maxmemory-policy: one that evicts may take a lock away (docs/safety.md). Empty on a consensus store. */
  readonly servers: readonly ServerPolicy[];
}

/** Declares `padlock inspect` on `program`; its action passes its exit code to `exit`. */
export function declareInspect(program: CommanderCommand, context: CommandContext, exit: (code: number) => void): void {
  withConnectionOptions(
    withStoreOptions(program
      .command('inspect'))
      .summary('one lock in full: holders, fence, lease, each waiter, its keys and their TTLs')
      .description(
        "Shows one lock, held or free: its holders, their clients and hold counts, fence, lease left, the last " +
          'fence handed out, each queued waiter (kind, client, time queued, heartbeat) and its keys ' +
          'in Redis with their time to live. A read/write lock or a semaphore of that name is shown ' +
          'too (holders with their side or permits), each on its own. With --zookeeper, --etcd or --postgres, ' +
          "read through the store's catalog: holders, fences, hold counts and waiters (no keys, no " +
          'waiting times).',
      )
      .argument('<name>', "the lock's name, as the code passes it to padlock.mutex(name), readWrite(name) or semaphore(name, n)")
      .option('--waiters <n>', 'queued waiters to show, from the head', integerParser('--waiters', 0, 100_000), 100),
    'print a JSON object instead of text (fields: docs/cli.md)',
  )
    .addHelpText('after', '\nExit status: 0 shown (held or free), 1 Redis (or the store) unreachable or lost, 2 bad command line, 130 interrupted.')
    .action(async (name: string, flags: InspectFlags) => exit(await runInspect(name, flags, context)));
}

async function runInspect(name: string, flags: InspectFlags, context: CommandContext): Promise<number> {
  const checked = lockName(name);
  if (namesStore(flags)) return inspectOnStore(checked, flags, context);
  await withSession(flags, context, async (session) => {
    const locks = await withLiveness(session, await readLocks(session, checked, flags.waiters));
    const [lock] = locks as [InspectedLock, ...InspectedLock[]];
    const known = locks.some((l) => l.keys.some((k) => k.exists));
    const servers = await readServerPolicies(session.connection);
    if (flags.json === true) {
      const report: InspectReport = { redis: { url: session.connection.displayUrl, topology: session.connection.topology }, prefix: session.prefix, known, lock, locks, servers };
      context.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
      return;
    }
    if (!known) {
      context.stdout.write(`${nothingKnown(checked, session.prefix)}: Redis has no key of it (never used, or free and unused for over an hour).\n`);
      return;
    }
    const c = colors(terminalOutput(context.stdout, context.env));
    context.stdout.write(`${[locks.map((l) => describeLock(l, c)).join('\n\n'), ...evictionLines(servers, c)].join('\n\n')}\n`);
  });
  return ExitCode.ok;
}

/**
 * `padlock inspect` on a consensus store: every kind's lock of that name in the store's catalog, as
 * Redis's are shown. A name without a holder or waiter there is free and leaves nothing behind, as
 * a Redis name without a key: the same message, the same exit code, a free mutex in `--json`.
 */
async function inspectOnStore(name: string, flags: InspectFlags, context: CommandContext): Promise<number> {
  const prefix = checkedPrefix(flags.prefix);
  await withStoreSession(flags, prefix, context, async (session) => {
    // The catalog sorts by name then kind: mutex, readWrite, semaphore, the order Redis's inspect shows.
    const found = (await session.catalog.locks()).filter((lock) => lock.name === name).map((lock) => lockStateOf(lock, flags.waiters));
    const free = lockStateOf({ kind: 'mutex', name, entries: [], limit: null, codeLimit: null, leaseMs: null });
    const locks = found.length > 0 ? found : [free];
    if (flags.json === true) {
      const report: InspectReport = { store: session.description, prefix, known: found.length > 0, lock: locks[0] ?? free, locks, servers: [] };
      context.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
      return;
    }
    if (found.length === 0) {
      context.stdout.write(`${nothingKnown(name, prefix)}: ${session.description} has no holder or waiter of it (never used, or free).\n`);
      return;
    }
    const c = colors(terminalOutput(context.stdout, context.env));
    context.stdout.write(`${found.map((l) => describeLock(l, c, { store: true })).join('\n\n')}\n`);
  });
  return ExitCode.ok;
}

/** The start of what `inspect` says of a name nothing is kept of (a free lock that left nothing behind). */
function nothingKnown(name: string, prefix: string): string {
  return `Nothing is known of lock '${name}' under prefix '${prefix}'`;
}

/** Checks a lock name from the command line as padlock would. */
export function lockName(name: string): string {
  try {
    return checkName(name);
  } catch (error) {
    throw usageError(`invalid lock name: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** Reads every kind's lock named `name` that has a key (a free mutex when none has); a Redis failure as a one-line error. */
export async function readLocks(session: Session, name: string, waiters: number): Promise<LockState[]> {
  try {
    return await session.reader.readKinds(name, waiters);
  } catch (error) {
    throw redisFailure(error, session.connection);
  }
}

/** Each held mutex with whether its holder is dead (what `padlock reap` would free). */
async function withLiveness(session: Session, locks: readonly LockState[]): Promise<InspectedLock[]> {
  if (!locks.some((l) => l.kind === 'mutex' && l.held)) return [...locks];
  const reaper = new LockReaper(connectionFor('--url', session.connection.client), session.prefix);
  try {
    return await Promise.all(locks.map(async (l) => (l.kind === 'mutex' && l.held ? { ...l, holderLiveness: await reaper.holderLiveness(l) } : l)));
  } catch (error) {
    throw redisFailure(error, session.connection);
  }
}

/**
 * One line about a lock's holders: `held by 3f9a1c2e5b7d… (2 holds), fence 1732…, 28.1 s left` (with
 * sides or permits for the other kinds; without the lease left when it is not known, as on ZooKeeper).
 */
export function holdLine(lock: LockState): string {
  if (!lock.held) return 'free';
  const holders = lock.holders
    .map((h) => {
      const permits = h.permits === undefined ? '' : `, ${h.permits} ${h.permits === 1 ? 'permit' : 'permits'}`;
      return `${h.side === undefined ? '' : `${h.side} `}${h.owner} (${h.holdCount} ${h.holdCount === 1 ? 'hold' : 'holds'}${permits})`;
    })
    .join(', ');
  return `held by ${holders}, fence ${lock.fence ?? '?'}${lock.leaseMs === null ? '' : `, ${duration(lock.leaseMs)} left`}`;
}

/** How {@link describeLock} prints a lock. */
export interface DescribeOptions {
  /**
   * The lock was read through a consensus store's catalog: it has no keys, and its waiters no
   * timings (a participant lives exactly as long as its session or lease), so neither is shown.
   */
  readonly store?: boolean;
}

/** `inspect`'s text: a few labelled lines, then the waiters and the keys as tables. */
export function describeLock(lock: InspectedLock, c: Colors, options: DescribeOptions = {}): string {
  const store = options.store === true;
  const label = (text: string): string => c.bold(text.padEnd(8));
  const dead = lock.waiters.filter((w) => !w.alive).length;
  const queue =
    lock.waiting === 0 && dead === 0
      ? 'empty'
      : `${lock.waiting} waiting${dead > 0 ? `, ${dead} dead (skipped at the next handoff)` : ''}` +
        (lock.oldestWaitMs === null ? '' : `; the longest-queued for ${duration(lock.oldestWaitMs)}`);
  const lines = [
    // The kind in list's words (`mutex (fair)` when waiters queued through fairMutex); a semaphore's permits have their own line.
    `${label('lock')}${lock.name} · ${lock.permits === undefined ? kindLabel(lock) : lock.kind}`,
    `${label('state')}${lock.held ? holdLine(lock) : c.dim('free')}`,
    ...(lock.permits === undefined ? [] : [`${label('permits')}${lock.permits.used} held of ${lock.permits.limit ?? (lock.permits.codeLimit === null ? c.dim("the code's limit (none stored)") : `${lock.permits.codeLimit} ${c.dim("(the code's; none stored)")}`)}`]),
    // A read/write lock's holds record no clients (on Redis); a store's holder lives by its session or lease.
    ...(lock.kind === 'readWrite' && !store ? [] : lock.holders.map((h) => `${label('client')}${h.clients === null ? c.dim(store ? 'unknown' : 'unknown (never reaped)') : h.clients.join(', ')}`)),
    ...(lock.holderLiveness === 'dead' ? [`${label('holder')}${c.red('dead')}: every client holding it let its liveness key run out; 'padlock reap' frees it`] : []),
    // A store keeps no fence of a free lock: nothing to say then.
    ...(store && lock.lastFence === null ? [] : [`${label('fence')}${lock.lastFence === null ? c.dim('none handed out within the hour') : `last handed out: ${lock.lastFence}`}`]),
    `${label('queue')}${queue}`,
  ];
  if (lock.waiters.length > 0) {
    lines.push('', c.bold('waiters'));
    const timings: readonly Column[] = store ? [] : [{ title: 'queued for', align: 'right' }, { title: 'heartbeat' }];
    lines.push(
      indent(
        table(
          [{ title: '#', align: 'right' }, { title: 'owner' }, { title: 'kind' }, { title: 'client' }, ...timings],
          lock.waiters.map((w) => [
            String(w.position),
            w.owner,
            w.permits === undefined ? w.kind : `${w.kind} (${w.permits} ${w.permits === 1 ? 'permit' : 'permits'})`,
            w.clientId ?? '—',
            ...(store
              ? []
              : [duration(w.waitedMs), w.heartbeatMs === null ? c.red('dead: no entry') : w.alive ? `live, ${duration(w.heartbeatMs)} to spare` : c.red(`dead for ${duration(-w.heartbeatMs)}`)]),
          ]),
          c.dim,
        ),
      ),
    );
    if (lock.waiting + dead > lock.waiters.length) lines.push(c.dim(`  … and ${lock.waiting + dead - lock.waiters.length} more (--waiters N shows more)`));
  }
  if (store) return lines.join('\n');
  lines.push('', c.bold('keys'));
  lines.push(
    indent(
      table(
        [{ title: 'key' }, { title: 'type' }, { title: 'ttl', align: 'right' }],
        lock.keys.map((k) => [k.key, k.type, k.exists ? (k.ttlMs === null ? c.yellow('no expiry') : duration(k.ttlMs)) : c.dim('absent')]),
        c.dim,
      ),
    ),
  );
  return lines.join('\n');
}

function indent(text: string): string {
  return text
    .split('\n')
    .map((line) => `  ${line}`)
    .join('\n');
}
