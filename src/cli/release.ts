/**
 * `padlock release <name> --force`: frees a lock whoever holds it and gives its turn to the queue
 * (the first live fair waiter is handed the lock, a mutex waiter is woken), through the library's
 * own `forceRelease()`. Asks for confirmation on a terminal; elsewhere needs `--yes`.
 */
import { createInterface } from 'node:readline/promises';
import type { Command as CommanderCommand } from 'commander';
import { Padlock } from '../padlock.js';
import { forceRelease } from '../force-release.js';
import type { LockKind, LockState } from '../lock-state.js';
import type { CommandContext } from './command.js';
import { redisFailure } from './connection.js';
import { CliError, ExitCode, interruptedError, usageError } from './errors.js';
import { holdLine, lockName, readLocks } from './inspect.js';
import { checkedPrefix, withConnectionOptions, withSession, type ConnectionFlags } from './operator.js';
import { namesStore, withStoreOptions, withStoreSession, type StoreFlags } from './store-session.js';
import { lockStateOf } from '../catalog.js';
import { terminalOutput } from './progress.js';
import { colors } from './render.js';
import { summary, type LockSummary } from './list.js';
import { integerParser, kindParser } from './values.js';

/** Flags of `padlock release`. */
export interface ReleaseFlags extends ConnectionFlags, StoreFlags {
  readonly force?: boolean;
  readonly yes?: boolean;
  readonly kind?: LockKind;
  readonly permits?: number;
}


/** What `padlock release --json` prints. */
export interface ReleaseReport {
  readonly name: string;
  /** The kind of lock released (or found free): `mutex`, `readWrite` or `semaphore`. */
  readonly kind: LockKind;
  /** True when the lock was held and this freed it; false when it was already free. */
  readonly released: boolean;
  /** The lock as read just before (its holder, fence, waiters). */
  readonly before: LockSummary;
}

/** Declares `padlock release` on `program`; its action passes its exit code to `exit`. */
export function declareRelease(program: CommanderCommand, context: CommandContext, exit: (code: number) => void): void {
  withConnectionOptions(
    withStoreOptions(program
      .command('release'))
      .summary('free a stuck lock whoever holds it (--force), and wake its waiters')
      .description(
        'Frees a lock whoever holds it, as lock.forceRelease() does: the first live waiter is handed ' +
          'the lock (fairMutex) or woken (mutex); a read/write lock (both sides) or a semaphore (every ' +
          'permit) admits the queued waiters it then allows. The holder is told at once, within a second (its ' +
          'lease.signal aborts with LockLostError, reason "taken"; a holder the notice missed learns at its ' +
          'next renewal), but code already past its last check may still write: fence your writes, and only ' +
          'free a lock whose holder is gone or stuck. ' +
          'Asks for confirmation when run in a terminal; elsewhere --yes is needed.',
      )
      .argument('<name>', "the lock's name")
      .option('--force', 'required: say that you mean to free a lock someone else holds')
      .option('-y, --yes', 'do not ask for confirmation')
      .option('--kind <kind>', 'which lock of that name: mutex, readWrite or semaphore (needed when several are held)', kindParser)
      .option('--permits <n>', "a semaphore without a stored limit: the limit its code passes, to admit waiters up to it (default 1)", integerParser('--permits', 1, 1_000_000_000)),
    'print a JSON object instead of a sentence (fields: docs/cli.md)',
  )
    .addHelpText(
      'after',
      '\nExit status: 0 released, or already free; 1 Redis unreachable or lost, or not confirmed;\n2 bad command line (no --force; no --yes outside a terminal; several kinds held, no --kind);\n130 interrupted.',
    )
    .action(async (name: string, flags: ReleaseFlags) => exit(await runRelease(name, flags, context)));
}

async function runRelease(name: string, flags: ReleaseFlags, context: CommandContext): Promise<number> {
  const checked = lockName(name);
  if (flags.force !== true) throw usageError(`release frees '${name}' whoever holds it: add --force if that is what you want`);
  const interactive = context.stdin.isTTY === true && context.stderr.isTTY === true;
  if (flags.yes !== true && !interactive) throw usageError('not a terminal, so no one can confirm: add --yes to release without confirmation');
  if (namesStore(flags)) return releaseOnStore(checked, flags, context);
  return withSession(flags, context, async (session) => {
    const found = (await readLocks(session, checked, 0)).filter((lock) => flags.kind === undefined || lock.kind === flags.kind);
    const held = found.filter((lock) => lock.held);
    if (held.length > 1) throw usageError(`'${checked}' is held as ${held.map((l) => l.kind).join(' and ')}: add --kind to say which to release`);
    const before = held[0] ?? found[0] ?? (await session.reader.read(checked, 0, flags.kind));
    const c = colors(terminalOutput(context.stdout, context.env));
    const report = (released: boolean): number => {
      if (flags.json === true) {
        const out: ReleaseReport = { name: checked, kind: before.kind, released, before: summary(before) };
        context.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
      } else if (released) {
        const turn = before.waiting === 0 ? '' : before.kind === 'mutex' ? `; the queue's first live waiter got its turn (${before.waiting} waiting)` : `; the queue's waiters it now allows were admitted (${before.waiting} waiting)`;
        const kind = before.kind === 'mutex' ? '' : ` (${before.kind})`;
        context.stdout.write(`${c.green('released')} '${checked}'${kind} (was ${holdLine(before)})${turn}\n`);
      } else {
        context.stdout.write(`'${checked}' is not held: nothing to release\n`);
      }
      return ExitCode.ok;
    };
    if (!before.held) return report(false);
    if (flags.yes !== true && !(await confirm(question(before), context))) throw new CliError(`not confirmed: '${checked}' was left as it is`);
    const padlock = new Padlock({ redis: session.connection.client, prefix: session.prefix });
    try {
      return report(await forceRelease(padlock, before, flags.permits));
    } catch (error) {
      throw redisFailure(error, session.connection);
    } finally {
      await padlock.close();
    }
  });
}

/** `padlock release --force` on a consensus store: the lock read through the store's catalog, freed through its kind's own `forceRelease()`. */
async function releaseOnStore(name: string, flags: ReleaseFlags, context: CommandContext): Promise<number> {
  return withStoreSession(flags, checkedPrefix(flags.prefix), context, async (session) => {
    const found = (await session.catalog.locks()).filter((lock) => lock.name === name && (flags.kind === undefined || lock.kind === flags.kind)).map((lock) => lockStateOf(lock, 0));
    const held = found.filter((lock) => lock.held);
    if (held.length > 1) throw usageError(`'${name}' is held as ${held.map((l) => l.kind).join(' and ')}: add --kind to say which to release`);
    const before = held[0];
    if (before === undefined) {
      if (flags.json === true) context.stdout.write(`${JSON.stringify({ name, kind: flags.kind ?? 'mutex', released: false, before: null }, null, 2)}\n`);
      else context.stdout.write(`'${name}' is not held: nothing to release\n`);
      return ExitCode.ok;
    }
    if (flags.yes !== true && !(await confirm(question(before), context))) throw new CliError(`not confirmed: '${name}' was left as it is`);
    const released = await forceRelease(session.padlock, before, flags.permits);
    if (flags.json === true) {
      const out: ReleaseReport = { name, kind: before.kind, released, before: summary(before) };
      context.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
    } else {
      const c = colors(terminalOutput(context.stdout, context.env));
      const kind = before.kind === 'mutex' ? '' : ` (${before.kind})`;
      context.stdout.write(released ? `${c.green('released')} '${name}'${kind} (was ${holdLine(before)})\n` : `'${name}' is not held: nothing to release\n`);
    }
    return ExitCode.ok;
  });
}

function question(lock: LockState): string {
  const waiting = lock.waiting > 0 ? `; ${lock.waiting} waiting` : '';
  return `Release '${lock.name}', ${holdLine(lock)}${waiting}? [y/N] `;
}

/** Asks `text` on the terminal; true for y or yes. Ctrl-C interrupts. */
async function confirm(text: string, context: CommandContext): Promise<boolean> {
  const rl = createInterface({ input: context.stdin, output: context.stderr, terminal: true });
  const answered = new AbortController();
  // In a terminal, readline takes Ctrl-C as a keystroke: it arrives here, not as a signal.
  rl.on('SIGINT', () => answered.abort('SIGINT'));
  const stop = (): void => answered.abort(context.signal.reason);
  context.signal.addEventListener('abort', stop, { once: true });
  try {
    const answer = await rl.question(text, { signal: answered.signal });
    return /^\s*y(es)?\s*$/i.test(answer);
  } catch (error) {
    if (answered.signal.aborted) {
      context.stderr.write('\n');
      throw interruptedError(answered.signal);
    }
    throw error;
  } finally {
    context.signal.removeEventListener('abort', stop);
    rl.close();
  }
}
