/**
 * `padlock reap [pattern]`: frees the locks whose holder is dead — every client (Padlock) holding
 * it has let its liveness key run out — and gives each its queue's turn, as a release would. Once,
 * or every `--every` seconds until Ctrl-C. A hold whose client is alive is never touched; on one
 * server (or a Sentinel primary) the check and the free are one atomic script, on a Cluster the
 * liveness keys live in other slots and are checked just before (src/stores/redis/reaping.ts).
 */
import type { Command as CommanderCommand } from 'commander';
import { type LockState } from '../lock-state.js';
import { LockReaper } from '../stores/redis/inspection.js';
import { connectionFor } from '../stores/redis/adapters/clients.js';
import type { ReapOutcome } from '../stores/redis/reaping.js';
import type { CommandContext } from './command.js';
import { redisFailure } from './connection.js';
import { ExitCode, interruptedError } from './errors.js';
import { readList } from './list.js';
import { withConnectionOptions, withSession, type ConnectionFlags, type Session } from './operator.js';
import { plural } from './plural.js';
import { terminalOutput } from './progress.js';
import { colors, duration, shortToken, type Colors } from './render.js';
import { durationParser } from './values.js';
import { lostSignal, pause, type LostSignal } from './watch.js';

/** Flags of `padlock reap`. */
export interface ReapFlags extends ConnectionFlags {
  /** Milliseconds between two rounds (`--every`, given in seconds or with a unit); once when absent. */
  readonly every?: number;
  readonly dryRun?: boolean;
}

/**
 * What happened to one held lock: `reaped` (freed: its holder was dead), `dead` (with `--dry-run`:
 * would have been reaped), `alive` (a client holding it is alive: left alone), `unknown` (its
 * clients are not recorded: left alone), `changed` (released or taken by another between the read
 * and the reap: left alone).
 */
export type LockOutcome = ReapOutcome | 'dead';

/** One held lock in `padlock reap --json`. */
export interface ReapedLock {
  readonly name: string;
  readonly outcome: LockOutcome;
  /** The holder as read before the reap. */
  readonly owner: string;
  readonly fence: number | null;
  /** Its clients (Padlock ids); `null` when unknown. */
  readonly clients: readonly string[] | null;
  /** Live waiters queued on it: with `reaped`, the first of them got its turn. */
  readonly waiting: number;
}

/** What `padlock reap --json` prints (once), or each line of `reap --every --json`. */
export interface ReapReport {
  /** When the round ran (ISO 8601, this machine's clock). */
  readonly at: string;
  readonly redis: { readonly url: string; readonly topology: string };
  readonly prefix: string;
  readonly pattern: string;
  readonly dryRun: boolean;
  /** Held mutexes looked at (reap frees mutexes only). */
  readonly checked: number;
  /** Held read/write locks and semaphores, left alone (their holds record no clients, or expire by themselves). */
  readonly otherKinds: number;
  /** Locks freed (with `--dry-run`: that would have been). */
  readonly reaped: number;
  /** Every held lock looked at, sorted by name. */
  readonly locks: readonly ReapedLock[];
}

/** Declares `padlock reap` on `program`; its action passes its exit code to `exit`. */
export function declareReap(program: CommanderCommand, context: CommandContext, exit: (code: number) => void): void {
  withConnectionOptions(
    program
      .command('reap')
      .summary('free the locks of dead holders (crashed processes), and give them to their queues')
      .description(
        'Frees every lock (matching the pattern) whose holder is dead: every Padlock holding it has ' +
          'let its liveness key run out (livenessMs, 10 s by default, after its process died or ' +
          'stalled). Its first live waiter gets its turn, as after a release. A lock whose holder is ' +
          'alive is never touched. Once, or every --every (seconds, or with a unit) until Ctrl-C. With Redlock, run it ' +
          "against every master. Mutexes only: a read/write lock's holds record no clients, a " +
          "semaphore's expire on their own.",
      )
      .argument('[pattern]', 'lock names to look at (a Redis glob: * ? [abc])', '*')
      .option('--every <duration>', 'run again every so long (seconds, or 500ms, 2s, 1m), until Ctrl-C', durationParser('--every', 100, 86_400_000))
      .option('--dry-run', 'only say which locks have a dead holder; free nothing'),
    'print a JSON object (with --every, one per line, per round) instead of text (fields: docs/cli.md)',
  )
    .addHelpText('after', '\nExit status: 0 done (reaped or not; with --every, stopped by Ctrl-C), 1 Redis unreachable or lost,\n2 bad command line, 130 interrupted, 143 SIGTERM.')
    .action(async (pattern: string, flags: ReapFlags) => exit(await runReap(pattern, flags, context)));
}

async function runReap(pattern: string, flags: ReapFlags, context: CommandContext): Promise<number> {
  return withSession(flags, context, async (session) => {
    const reaper = new LockReaper(connectionFor('--url', session.connection.client), session.prefix);
    const c = colors(terminalOutput(context.stdout, context.env));
    if (flags.every === undefined) {
      const report = await round(session, reaper, pattern, flags.dryRun === true);
      context.stdout.write(flags.json === true ? `${JSON.stringify(report, null, 2)}\n` : `${describeRound(report, c, false)}\n`);
      return ExitCode.ok;
    }
    const lost = lostSignal(session.connection);
    if (flags.json !== true) {
      const what = pattern === '*' ? 'all locks' : `locks ${pattern}`;
      context.stdout.write(`${c.bold('padlock reap')}  ${session.connection.description}  ${c.dim(`prefix ${session.prefix}, ${what}, every ${duration(flags.every)}${flags.dryRun === true ? ', dry run' : ''}; Ctrl-C to stop`)}\n`);
    }
    while (!context.signal.aborted) {
      const started = performance.now();
      const report = await untilLost(round(session, reaper, pattern, flags.dryRun === true), lost);
      if (flags.json === true) context.stdout.write(`${JSON.stringify(report)}\n`);
      else if (report.locks.some((l) => l.outcome === 'reaped' || l.outcome === 'dead')) context.stdout.write(`${describeRound(report, c, true)}\n`);
      await pause(flags.every - (performance.now() - started), [context.signal, lost.signal]);
      if (lost.signal.aborted) throw lost.error();
    }
    // Ctrl-C is how a monitor ends; SIGTERM is still a termination.
    if (context.signal.reason === 'SIGTERM') throw interruptedError(context.signal);
    return ExitCode.ok;
  });
}

/** Settles as `work`, or rejects with the lost connection's error if that comes first. */
function untilLost<T>(work: Promise<T>, lost: LostSignal): Promise<T> {
  if (lost.signal.aborted) return Promise.reject(lost.error());
  return new Promise((resolve, reject) => {
    const onLost = (): void => reject(lost.error());
    lost.signal.addEventListener('abort', onLost, { once: true });
    work.then(resolve, reject).finally(() => lost.signal.removeEventListener('abort', onLost));
  });
}

/** One round: every held lock matching `pattern` read, and each whose holder is dead reaped (or, dry, named). */
async function round(session: Session, reaper: LockReaper, pattern: string, dryRun: boolean): Promise<ReapReport> {
  // Mutexes only: a read/write lock's holds record no clients, a semaphore's holds expire on their own.
  const all = (await readList(session, pattern, false)).filter((lock) => lock.held);
  const held = all.filter((lock) => lock.kind === 'mutex');
  const locks: ReapedLock[] = [];
  try {
    for (const lock of held) locks.push(entry(lock, dryRun ? await dryOutcome(reaper, lock) : await reaper.reap(lock)));
  } catch (error) {
    throw redisFailure(error, session.connection);
  }
  return {
    at: new Date().toISOString(),
    redis: { url: session.connection.displayUrl, topology: session.connection.topology },
    prefix: session.prefix,
    pattern,
    dryRun,
    checked: locks.length,
    otherKinds: all.length - held.length,
    reaped: locks.filter((l) => l.outcome === 'reaped' || l.outcome === 'dead').length,
    locks,
  };
}

async function dryOutcome(reaper: LockReaper, lock: LockState): Promise<LockOutcome> {
  const liveness = await reaper.holderLiveness(lock);
  return liveness === 'dead' ? 'dead' : liveness;
}

function entry(lock: LockState, outcome: LockOutcome): ReapedLock {
  const holder = lock.holders[0];
  return { name: lock.name, outcome, owner: holder?.owner ?? '', fence: lock.fence, clients: holder?.clients ?? null, waiting: lock.waiting };
}

/** A round in words: a line per lock reaped (or, dry, to reap), then (once) a summary. */
export function describeRound(report: ReapReport, c: Colors, timed: boolean): string {
  const time = timed ? `${c.dim(new Date(report.at).toTimeString().slice(0, 8))}  ` : '';
  const lines = report.locks
    .filter((l) => l.outcome === 'reaped' || l.outcome === 'dead')
    .map((l) => {
      const was = `held by ${shortToken(l.owner)} (client ${(l.clients ?? []).join(', ')}: dead), fence ${l.fence ?? '?'}`;
      if (l.outcome === 'dead') return `${time}${c.yellow('dead')}    '${l.name}' ${was}: would be reaped`;
      const turn = l.waiting > 0 ? `; the queue's first live waiter got its turn (${l.waiting} waiting)` : '';
      return `${time}${c.green('reaped')}  '${l.name}' (was ${was})${turn}`;
    });
  if (timed) return lines.join('\n');
  const count = (outcome: LockOutcome): number => report.locks.filter((l) => l.outcome === outcome).length;
  const parts = [
    report.dryRun ? `${count('dead')} with a dead holder (dry run: nothing freed)` : `${count('reaped')} reaped`,
    `${count('alive')} held by live clients`,
    ...(count('unknown') > 0 ? [`${count('unknown')} with unknown clients (left alone)`] : []),
    ...(count('changed') > 0 ? [`${count('changed')} released meanwhile`] : []),
  ];
  const pattern = report.pattern === '*' ? '' : ` matching '${report.pattern}'`;
  // Mutexes only, as `list` would count them too: say what else is held and left alone.
  const others = report.otherKinds > 0 ? ` (and ${plural(report.otherKinds, 'held read/write lock or semaphore', 'held read/write locks or semaphores')}, which reap leaves alone)` : '';
  lines.push(`${plural(report.checked, 'held mutex', 'held mutexes')}${pattern} under prefix '${report.prefix}'${others}: ${parts.join(', ')}.`);
  return lines.join('\n');
}

