/**
 * `padlock watch [pattern]`: `list`, redrawn in place every interval on a terminal (the alternate
 * screen, as `top` and `watch` use, restored on exit). Ends cleanly on Ctrl-C (exit 0; SIGTERM:
 * 143) and on a lost connection (exit 1, one line). Elsewhere it prints one frame per interval (`--json`: one
 * JSON object per line). On another store (`--zookeeper`, `--etcd`, `--postgres`) each frame is `list`'s read
 * of the store's catalog.
 */
import { Option, type Command as CommanderCommand } from 'commander';
import type { LockState } from '../lock-state.js';
import type { CommandContext, OutputStream } from './command.js';
import { redisFailure, type Connection } from './connection.js';
import { CliError, ExitCode, firstLine, interruptedError } from './errors.js';
import { lockTable, noLocks, readList, readStoreList, summary, type LockSummary } from './list.js';
import { checkedPrefix, withConnectionOptions, withSession, type ConnectionFlags } from './operator.js';
import { namesStore, withStoreOptions, withStoreSession, type StoreFlags, type StoreSession } from './store-session.js';
import { terminalOutput } from './progress.js';
import { colors, duration, type Colors } from './render.js';
import { plural } from './plural.js';
import { durationParser } from './values.js';

/** Flags of `padlock watch`. */
export interface WatchFlags extends ConnectionFlags, StoreFlags {
  readonly interval: number;
  readonly all?: boolean;
}

/** One line of `padlock watch --json`. */
export interface WatchFrame {
  /** When the frame was read (ISO 8601, this machine's clock). */
  readonly at: string;
  readonly locks: readonly LockSummary[];
}

/** A frame slower than this (or than 5 intervals, if longer) counts as a lost connection. */
const FRAME_TIMEOUT_MS = 5_000;

const ESC = '\x1b[';
const ALT_SCREEN_ON = `${ESC}?1049h`;
const ALT_SCREEN_OFF = `${ESC}?1049l`;
const CURSOR_HIDE = `${ESC}?25l`;
const CURSOR_SHOW = `${ESC}?25h`;
const HOME = `${ESC}H`;
const CLEAR_LINE_END = `${ESC}K`;
const CLEAR_BELOW = `${ESC}J`;

/** Declares `padlock watch` on `program`; its action passes its exit code to `exit`. */
export function declareWatch(program: CommanderCommand, context: CommandContext, exit: (code: number) => void): void {
  withConnectionOptions(
    withStoreOptions(program
      .command('watch'))
      .summary('a live view of the locks in use, redrawn in place until Ctrl-C')
      .description(
        "Shows what 'padlock list' shows, redrawn in place every interval, until Ctrl-C. When " +
          'stdout is not a terminal, prints one table per interval (with --json, one JSON object ' +
          'per line). Stops with an error when the connection to Redis (or the store) is lost.',
      )
      .argument('[pattern]', 'lock names to show (a Redis glob)', '*')
      .addOption(
        new Option('--interval <duration>', 'time between two reads (seconds, or 500ms, 2s, 1m)')
          .argParser(durationParser('--interval', 100, 60_000, 'it is in seconds, not milliseconds: 500ms or 0.5 for half a second'))
          .default(1_000, '1s'),
      )
      .option('--all', 'also free locks whose key remains (an hour after their release)'),
    'print one JSON object per line, per interval (fields: docs/cli.md)',
  )
    .addHelpText('after', '\nExit status: 0 stopped by Ctrl-C, 1 Redis (or the store) unreachable or lost, 2 bad command line, 143 SIGTERM.')
    .action(async (pattern: string, flags: WatchFlags) => exit(await runWatch(pattern, flags, context)));
}

/** Where `watch` reads its frames: Redis, or a consensus store's catalog. */
interface FrameSource {
  /** For the header: the Redis (URL, topology) or the store. */
  readonly description: string;
  readonly prefix: string;
  /** Reads the locks of one frame. */
  read(): Promise<LockState[]>;
  /** Aborted when the connection is lost for good. */
  readonly lost: LostSignal;
  /** A failure (a frame too slow) as the one-line error to exit with. */
  failure(error: Error): CliError;
}

async function runWatch(pattern: string, flags: WatchFlags, context: CommandContext): Promise<number> {
  if (namesStore(flags, { '--all': flags.all })) {
    return withStoreSession(flags, checkedPrefix(flags.prefix), context, (session) => watch(storeSource(session, pattern), pattern, flags, context));
  }
  return withSession(flags, context, (session) =>
    watch(
      {
        description: session.connection.description,
        prefix: session.prefix,
        read: () => readList(session, pattern, flags.all === true),
        lost: lostSignal(session.connection),
        failure: (error) => redisFailure(error, session.connection),
      },
      pattern,
      flags,
      context,
    ),
  );
}

/** A consensus store's frames: `list`'s read of its catalog. */
function storeSource(session: StoreSession, pattern: string): FrameSource {
  // The store's client reconnects by itself: a lost store shows as a read that fails or is too slow.
  const never = new AbortController();
  const failure = (error: Error): CliError => new CliError(`${session.description}: ${firstLine(error)}`, ExitCode.failure, { cause: error });
  return {
    description: session.description,
    prefix: session.prefix,
    read: () => readStoreList(session, pattern),
    lost: { signal: never.signal, error: () => failure(new Error('the connection was closed')) },
    failure,
  };
}

/** Draws `source`'s frames until Ctrl-C (or a lost connection), as a screen, tables or JSON lines. */
async function watch(source: FrameSource, pattern: string, flags: WatchFlags, context: CommandContext): Promise<number> {
  const term = terminalOutput(context.stdout, context.env);
  const screen = term.interactive && flags.json !== true ? new Screen(context.stdout) : undefined;
  const c = colors(term);
  const { lost } = source;
  try {
    let last: readonly LockState[] | undefined;
    const redraw = (): void => {
      if (screen !== undefined && last !== undefined) screen.draw(frame(last, source, pattern, flags, c, new Date()));
    };
    context.stdout.on('resize', redraw);
    try {
      while (!context.signal.aborted) {
        const started = performance.now();
        const locks = await readFrame(source, flags, context.signal);
        if (locks === undefined) break; // interrupted
        last = locks;
        const at = new Date();
        if (screen !== undefined) redraw();
        else if (flags.json === true) context.stdout.write(`${JSON.stringify({ at: at.toISOString(), locks: locks.map(summary) } satisfies WatchFrame)}\n`);
        else context.stdout.write(`${frame(locks, source, pattern, flags, c, at).join('\n')}\n\n`);
        await pause(flags.interval - (performance.now() - started), [context.signal, lost.signal]);
        if (lost.signal.aborted) throw lost.error();
      }
    } finally {
      context.stdout.off('resize', redraw);
    }
    // Ctrl-C is how a watch ends; SIGTERM is still a termination.
    if (context.signal.reason === 'SIGTERM') throw interruptedError(context.signal);
    return ExitCode.ok;
  } finally {
    screen?.close();
  }
}

/** Reads one frame, or `undefined` when interrupted; a lost connection or a frame too slow throws. */
function readFrame(source: FrameSource, flags: WatchFlags, interrupt: AbortSignal): Promise<LockState[] | undefined> {
  const { lost } = source;
  const limit = Math.max(FRAME_TIMEOUT_MS, flags.interval * 5);
  return new Promise((resolve, reject) => {
    const finish = (settle: () => void): void => {
      clearTimeout(timer);
      lost.signal.removeEventListener('abort', onLost);
      interrupt.removeEventListener('abort', onInterrupt);
      settle();
    };
    const onLost = (): void => finish(() => reject(lost.error()));
    const onInterrupt = (): void => finish(() => resolve(undefined));
    const timer = setTimeout(() => finish(() => reject(source.failure(new Error(`no reply within ${duration(limit)}`)))), limit);
    if (interrupt.aborted) return onInterrupt();
    if (lost.signal.aborted) return onLost();
    lost.signal.addEventListener('abort', onLost, { once: true });
    interrupt.addEventListener('abort', onInterrupt, { once: true });
    source.read().then(
      (locks) => finish(() => resolve(locks)),
      (error: unknown) => finish(() => reject(error)),
    );
  });
}

/** The lines of one frame: a header, then the table (or a message when there is nothing). */
function frame(locks: readonly LockState[], source: FrameSource, pattern: string, flags: WatchFlags, c: Colors, at: Date): string[] {
  const held = locks.filter((l) => l.held).length;
  const waiting = locks.reduce((sum, l) => sum + l.waiting, 0);
  const oldest = Math.max(-1, ...locks.map((l) => l.oldestWaitMs ?? -1));
  const head = [
    `${c.bold('padlock watch')}  ${source.description}  ${c.dim(`prefix ${source.prefix}, ${pattern === '*' ? 'all names' : `names ${pattern}`}, every ${duration(flags.interval)}`)}`,
    `${at.toTimeString().slice(0, 8)}  ${plural(held, 'lock')} held, ${plural(waiting, 'waiter')}${oldest >= 0 ? ` (the longest queued for ${duration(oldest)})` : ''}  ${c.dim('Ctrl-C to quit')}`,
    '',
  ];
  return [...head, ...(locks.length === 0 ? [c.dim(noLocks(source.prefix, pattern, flags.all === true))] : lockTable(locks, c).split('\n'))];
}

/** The terminal while `watch` draws on it: the alternate screen, the cursor hidden, restored on close. */
class Screen {
  readonly #out: OutputStream;
  #open = true;

  constructor(out: OutputStream) {
    this.#out = out;
    out.write(ALT_SCREEN_ON + CURSOR_HIDE);
  }

  /** Draws `lines` from the top-left corner, each cut to the terminal's width, as many as fit. */
  draw(lines: readonly string[]): void {
    if (!this.#open) return;
    const columns = this.#out.columns ?? 80;
    const rows = this.#out.rows ?? 24;
    let shown = lines;
    if (lines.length > rows - 1) {
      const hidden = lines.length - (rows - 2);
      shown = [...lines.slice(0, rows - 2), `… ${hidden} more (a taller terminal, or a narrower pattern, shows them)`];
    }
    this.#out.write(HOME + shown.map((line) => fit(line, columns) + CLEAR_LINE_END).join('\n') + '\n' + CLEAR_BELOW);
  }

  /** Leaves the alternate screen, showing the cursor again. Safe to call twice. */
  close(): void {
    if (!this.#open) return;
    this.#open = false;
    this.#out.write(CURSOR_SHOW + ALT_SCREEN_OFF);
  }
}

// An SGR escape sequence (a colour or style), at the start of a string.
const STYLE = new RegExp(`^${String.fromCharCode(27)}\\[[0-9;]*m`);

/** `line` cut to `columns` visible characters (ANSI styles kept, and reset if cut), so nothing wraps. */
export function fit(line: string, columns: number): string {
  let out = '';
  let visible = 0;
  for (let i = 0; i < line.length; ) {
    const style = STYLE.exec(line.slice(i, i + 16));
    if (style !== null) {
      out += style[0];
      i += style[0].length;
      continue;
    }
    const char = String.fromCodePoint(line.codePointAt(i) ?? 0);
    if (visible + 1 > columns - 1) return `${out}\x1b[0m`;
    out += char;
    visible++;
    i += char.length;
  }
  return out;
}

/** Aborted when the connection is lost for good; {@link LostSignal.error} says how. */
export interface LostSignal {
  readonly signal: AbortSignal;
  error(): CliError;
}

export function lostSignal(connection: Connection): LostSignal {
  const controller = new AbortController();
  let cause: Error | undefined;
  connection.onLost((error) => {
    cause = error;
    controller.abort(error);
  });
  return {
    signal: controller.signal,
    error: () => redisFailure(cause ?? new Error('the connection was closed'), connection),
  };
}

/** Resolves after `ms`, or as soon as one of `signals` aborts. */
export function pause(ms: number, signals: readonly AbortSignal[]): Promise<void> {
  if (ms <= 0 || signals.some((s) => s.aborted)) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      for (const s of signals) s.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    for (const s of signals) s.addEventListener('abort', done, { once: true });
  });
}
