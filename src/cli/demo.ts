/**
 * `padlock demo`: the ticket sale. N seller processes sell M tickets from one stock in Redis with a
 * read-check-write, first without a lock (they oversell), then under `mutex`, then under
 * `fairMutex` (exactly M sold), and a table compares the phases.
 */
import { randomBytes } from 'node:crypto';
import type { CliClient } from './client-library.js';
import type { Command as CommanderCommand } from 'commander';
import type { CommandContext } from './command.js';
import { PHASES, THINK_MS, WORK_MS, type LockKind, type SellerResult } from './demo-protocol.js';
import { CliError, ExitCode, interruptedError } from './errors.js';
import { plural, verb } from './plural.js';
import { ProgressLine, terminalOutput, type TerminalOutput } from './progress.js';
import { colors, table } from './render.js';
import { connectRedis, resolveRedisTarget, serverVersion } from './redis-target.js';
import { SellerPool } from './sellers.js';
import { jainIndex, percentile } from './stats.js';
import { integerParser } from './values.js';

/** One phase of the sale. */
type PhaseSpec = (typeof PHASES)[number];

/** Prefix of every key the demo writes; all of them are deleted when it ends. */
const KEY_PREFIX = 'padlock-demo';

/** Options of {@link runDemo}. */
export interface DemoOptions {
  /** Redis URL; when absent, `REDIS_URL`, else a private `redis-server`. */
  readonly url: string | undefined;
  /** Seller processes. @default 8 */
  readonly sellers: number;
  /** Tickets in stock. @default 1000 */
  readonly tickets: number;
  /** Print the report as JSON (and nothing else on stdout). */
  readonly json: boolean;
}

/** What one phase did. */
export interface PhaseReport {
  /** The lock guarding the sale. */
  readonly lock: LockKind;
  /** Its display name. */
  readonly label: string;
  /** Tickets sold (the `sold` counter in Redis). */
  readonly sold: number;
  /** Tickets sold beyond the stock. */
  readonly oversold: number;
  /** What the stock key held at the end. */
  readonly stockLeft: number;
  /** Wall-clock duration of the phase. */
  readonly seconds: number;
  /** Locks acquired by all sellers (each seller's last one finds the stock empty); 0 without a lock. */
  readonly acquisitions: number;
  /** `acquisitions / seconds`; `null` without a lock. */
  readonly acquisitionsPerSecond: number | null;
  /** 99th percentile of the time an acquisition waited, in ms; `null` without a lock. */
  readonly waitP99Ms: number | null;
  /** Jain's fairness index over the sellers' sales (1 = all sold the same). */
  readonly fairness: number;
  /** Tickets sold by each seller. */
  readonly salesBySeller: readonly number[];
}

/** What `padlock demo --json` prints. */
export interface DemoReport {
  readonly redis: {
    /** The URL used, without its password. */
    readonly url: string;
    /** Whether the demo started (and stopped) its own `redis-server`. */
    readonly private: boolean;
    /** The server's `redis_version`. */
    readonly version: string;
  };
  readonly sellers: number;
  readonly tickets: number;
  readonly phases: readonly PhaseReport[];
}

/** Declares `padlock demo` on `program`; its action passes its exit code to `exit`. */
export function declareDemo(program: CommanderCommand, context: CommandContext, exit: (code: number) => void): void {
  program
    .command('demo')
    .summary('the ticket sale: N processes oversell without a lock, sell exactly with one')
    .description(
      'The ticket sale. N seller processes sell M tickets from one stock in Redis with a ' +
        'read-check-write (GET stock; if it is above 0, take the payment, SET stock-1, INCR sold): ' +
        "first without a lock, then under padlock's mutex, then under its fairMutex. Without a " +
        'lock the sellers oversell; with one, exactly M tickets are sold.',
    )
    .option('--url <url>', 'the Redis to use (default: $REDIS_URL, else a private redis-server on a free loopback port, stopped when the demo ends)')
    .option('--sellers <n>', 'seller processes, 1 to 64', integerParser('--sellers', 1, 64), 8)
    .option('--tickets <m>', 'tickets in stock, 1 to 100000', integerParser('--tickets', 1, 100_000), 1_000)
    .option('--json', 'print the results as JSON instead of progress bars and a table')
    .addHelpText(
      'after',
      `
Keys are written under ${KEY_PREFIX}:* and deleted when the demo ends.
Exit status: 0 done, 1 failed (Redis unreachable, redis-server missing, or a locked
phase did not sell exactly M), 2 bad command line, 130 interrupted.`,
    )
    .action(async (flags: { url?: string; sellers: number; tickets: number; json?: boolean }) => {
      const report = await runDemo({ url: flags.url, sellers: flags.sellers, tickets: flags.tickets, json: flags.json === true }, context);
      const inexact = report.phases.filter((p) => p.lock !== 'none' && (p.sold !== report.tickets || p.stockLeft !== 0));
      if (inexact.length > 0) {
        const which = inexact.map((p) => `${p.label} sold ${p.sold}`).join(', ');
        throw new CliError(`a locked phase did not sell exactly ${plural(report.tickets, 'ticket')} (${which}): please report this padlock bug`);
      }
      exit(ExitCode.ok);
    });
}

/**
 * Runs the ticket sale and prints it: progress lines and a table, or (with `json`) the report as
 * JSON. Everything it started (seller processes, a private redis-server) is stopped and every key it
 * wrote is deleted before it returns or throws.
 * @throws CliError when Redis is unreachable or cannot be started, a seller fails, or `context.signal` aborts
 */
export async function runDemo(options: DemoOptions, context: CommandContext): Promise<DemoReport> {
  const term = terminalOutput(context.stdout, context.env);
  const s = colors(term);
  const say = (text = ''): void => void (options.json ? undefined : context.stdout.write(`${text}\n`));
  const checkInterrupt = (): void => {
    if (context.signal.aborted) throw interruptedError(context.signal);
  };

  const target = await resolveRedisTarget({ url: options.url, env: context.env, allowPrivate: true });
  let client: CliClient | undefined;
  let pool: SellerPool | undefined;
  let line: ProgressLine | undefined;
  const runId = randomBytes(4).toString('hex');
  try {
    checkInterrupt();
    client = await connectRedis(target, context.env);
    const version = await serverVersion(client);
    checkInterrupt();
    const where = target.server !== undefined ? `a private redis-server ${version} at ${target.displayUrl} (stopped on exit)` : `redis ${version} at ${target.displayUrl} (${target.source})`;
    const sellers = `${plural(options.sellers, 'seller process', 'seller processes')} ${verb(options.sellers, 'sells', 'sell')}`;
    say(`${s.bold('padlock demo')}: ${sellers} ${plural(options.tickets, 'ticket')}, on ${where}`);
    say();

    pool = await SellerPool.start(options.sellers, target.url, KEY_PREFIX, context.signal);
    const phases: PhaseReport[] = [];
    const labelWidth = Math.max(...PHASES.map((p) => p.label.length));
    for (const [i, spec] of PHASES.entries()) {
      const label = ` ${i + 1}/${PHASES.length}  ${spec.label.padEnd(labelWidth)}`;
      line = options.json ? undefined : new ProgressLine(term, label, options.tickets);
      const report = await runPhase(spec, options, { client, pool, runId, line, term });
      line = undefined;
      phases.push(report);
    }
    const report: DemoReport = {
      redis: { url: target.displayUrl, private: target.server !== undefined, version },
      sellers: options.sellers,
      tickets: options.tickets,
      phases,
    };
    if (options.json) context.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    else printSummary(report, term, say);
    return report;
  } finally {
    line?.abandon();
    await pool?.stop();
    if (client !== undefined) {
      if (target.server === undefined) await deleteKeys(client, runId).catch(() => undefined);
      client.close();
    }
    await target.stop();
  }
}

async function runPhase(
  spec: PhaseSpec,
  options: DemoOptions,
  on: { client: CliClient; pool: SellerPool; runId: string; line: ProgressLine | undefined; term: TerminalOutput },
): Promise<PhaseReport> {
  const s = colors(on.term);
  const stockKey = `${KEY_PREFIX}:${on.runId}:stock`;
  const soldKey = `${KEY_PREFIX}:${on.runId}:sold`;
  await on.client.call(['SET', stockKey, options.tickets]);
  await on.client.call(['SET', soldKey, 0]);
  const note = (sold: number): string | undefined => (sold > options.tickets ? s.red(`+${sold - options.tickets} oversold`) : undefined);
  const started = performance.now();
  const results = await on.pool.run(
    { lock: spec.lock, lockName: `${on.runId}:${spec.lock}`, stockKey, soldKey, workMs: WORK_MS, thinkMs: THINK_MS },
    (sold) => on.line?.update(withNote(sold, note(sold))),
  );
  const seconds = (performance.now() - started) / 1000;
  const sold = Number(await on.client.call(['GET', soldKey]));
  const stockLeft = Number(await on.client.call(['GET', stockKey]));
  const report = phaseReport(spec, options.tickets, sold, stockLeft, seconds, results);
  on.line?.finish(withNote(sold, note(sold)), `${seconds.toFixed(2)} s`);
  return report;
}

function withNote(done: number, note: string | undefined): { done: number; note?: string } {
  return note === undefined ? { done } : { done, note };
}

function phaseReport(spec: PhaseSpec, tickets: number, sold: number, stockLeft: number, seconds: number, results: readonly SellerResult[]): PhaseReport {
  const acquisitions = results.reduce((sum, r) => sum + r.acquisitions, 0);
  const waits = results.flatMap((r) => r.waitsMs);
  const salesBySeller = results.map((r) => r.sold);
  const locked = spec.lock !== 'none';
  return {
    lock: spec.lock,
    label: spec.label,
    sold,
    oversold: Math.max(0, sold - tickets),
    stockLeft,
    seconds: round(seconds, 3),
    acquisitions,
    acquisitionsPerSecond: locked ? Math.round(acquisitions / seconds) : null,
    waitP99Ms: locked ? round(percentile(waits, 99) ?? 0, 2) : null,
    fairness: round(jainIndex(salesBySeller) ?? 1, 4),
    salesBySeller,
  };
}

function round(value: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

function printSummary(report: DemoReport, term: TerminalOutput, say: (text?: string) => void): void {
  const s = colors(term);
  const dash = '—';
  const rows = report.phases.map((p) => [
    p.label,
    String(p.sold),
    p.oversold > 0 ? s.red(String(p.oversold)) : s.green('0'),
    p.seconds.toFixed(2),
    p.acquisitionsPerSecond === null ? dash : String(p.acquisitionsPerSecond),
    p.waitP99Ms === null ? dash : `${p.waitP99Ms.toFixed(1)} ms`,
    p.fairness.toFixed(3),
  ]);
  say();
  say(
    table(
      [
        { title: 'phase' },
        { title: 'sold', align: 'right' },
        { title: 'oversold', align: 'right' },
        { title: 'seconds', align: 'right' },
        { title: 'acq/s', align: 'right' },
        { title: 'wait p99', align: 'right' },
        { title: 'fairness', align: 'right' },
      ],
      rows,
    ),
  );
  say();
  const unlocked = report.phases.find((p) => p.lock === 'none');
  const locked = report.phases.filter((p) => p.lock !== 'none');
  if (unlocked !== undefined) {
    const verdict = unlocked.oversold > 0 ? s.red(`${unlocked.oversold} oversold`) : 'none oversold this time (try more --sellers)';
    say(`Without a lock, ${plural(report.sellers, 'seller')} sold ${plural(unlocked.sold, 'ticket')} for ${plural(report.tickets, 'seat')}: ${verdict}.`);
  }
  if (locked.every((p) => p.sold === report.tickets && p.oversold === 0)) {
    say(`With ${locked.map((p) => p.label).join(' and with ')}, ${s.green(`exactly ${report.tickets}`)}.`);
  }
  say(s.dim('acq/s: locks acquired per second, all sellers together; wait p99: 99th percentile of the time to acquire;'));
  say(s.dim("fairness: Jain's index over the sellers' sales (1 = all sold the same)."));
}

/** Deletes the keys of run `runId` (data and lock keys) from a Redis the demo did not start. */
async function deleteKeys(client: CliClient, runId: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = (await client.call(['SCAN', cursor, 'MATCH', `${KEY_PREFIX}:*${runId}*`, 'COUNT', 1000])) as [string, string[]];
    cursor = next;
    if (keys.length > 0) await client.call(['DEL', ...keys]);
  } while (cursor !== '0');
}
