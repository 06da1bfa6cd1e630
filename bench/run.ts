/**
 * `npm run bench`: padlock side by side with the peer libraries, in one run, on a private
 * redis-server. Prints the tables and the targets, and writes `bench/results.json`.
 *
 *   --workers N       contended workers (default 16)
 *   --seconds S       length of each contended run (default 4)
 *   --tune-seconds S  length of each tuning run (default 1.5)
 *   --think-ms MS     mean think time between acquisitions (default 1)
 *   --rounds N        uncontended rounds per contender (default 20)
 *   --round-ms MS     length of one uncontended round (default 250)
 *   --no-processes    skip the multi-process runs
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { startRedisServer, type RedisServer } from '../src/devserver/redis-server.js';
import { installCommandMeter } from './command-meter.js';
import { runContended, type ContendedOptions, type ContendedResult, type Mode } from './contended.js';
import type { ContenderSpec } from './contenders.js';
import { PADLOCKS, PEERS, RAW, padlockVersion } from './lineup.js';
import { commandsTable, contendedTable, fixed, rate, table, targets, targetsTable, uncontendedTable } from './report.js';
import { measurePing, runUncontended } from './uncontended.js';

installCommandMeter();

const { values: args } = parseArgs({
  options: {
    workers: { type: 'string', default: '16' },
    seconds: { type: 'string', default: '4' },
    'tune-seconds': { type: 'string', default: '1.5' },
    'think-ms': { type: 'string', default: '1' },
    rounds: { type: 'string', default: '20' },
    'round-ms': { type: 'string', default: '250' },
    'no-processes': { type: 'boolean', default: false },
  },
});

function positive(name: string, text: string | undefined, integer: boolean): number {
  const value = Number(text);
  if (!Number.isFinite(value) || value < 0 || (integer && !Number.isInteger(value))) {
    throw new Error(`--${name} must be a ${integer ? 'whole ' : ''}number ≥ 0, got ${String(text)}`);
  }
  return value;
}

const workers = Math.max(1, positive('workers', args.workers, true));
const seconds = positive('seconds', args.seconds, false);
const tuneSeconds = positive('tune-seconds', args['tune-seconds'], false);
const thinkMs = positive('think-ms', args['think-ms'], false);
const rounds = Math.max(1, positive('rounds', args.rounds, true));
const roundMs = positive('round-ms', args['round-ms'], false);
const withProcesses = !args['no-processes'];

const log = (line: string): void => void process.stderr.write(`${line}\n`);

const loadAtStart = loadavg()[0] ?? Number.NaN;

function machine(): Record<string, string | number> {
  const redisVersion = execFileSync('redis-server', ['--version'], { encoding: 'utf8' }).match(/v=(\S+)/)?.[1] ?? '?';
  return {
    nproc: cpus().length,
    cpu: cpus()[0]?.model ?? '?',
    node: process.version,
    redis: redisVersion,
    os: `${process.platform} ${process.arch}`,
    loadAverage1mAtStart: Number(loadAtStart.toFixed(2)),
    loadAverage1mAtEnd: Number((loadavg()[0] ?? Number.NaN).toFixed(2)),
  };
}

async function main(): Promise<void> {
  const started = Date.now();
  const server: RedisServer = await startRedisServer();
  try {
    const url = server.url;
    const contended: ContendedOptions = { workers, seconds, thinkMs };
    log(`redis-server ${server.url}; ${workers} workers, ${seconds} s per contended run`);

    const ping = await measurePing(url);
    log(`ping p50 ${fixed(ping.p50, 3)} ms`);

    log('uncontended…');
    const uncontended = await runUncontended([RAW, ...PADLOCKS, ...PEERS.map((p) => p.defaults)], url, { rounds, roundMs });

    log('sequential ceiling…');
    const ceiling = await runContended(RAW, url, 'in-process', { workers: 1, seconds: Math.min(seconds, 2), thinkMs: 0 });

    log('tuning the peers…');
    const tuning: Array<{ peer: string; tried: Array<{ label: string; perSecond: number; waitP99: number }>; chosen: ContenderSpec }> = [];
    for (const peer of PEERS) {
      const tried: Array<{ spec: ContenderSpec; result: ContendedResult }> = [];
      for (const spec of peer.candidates) {
        const result = await runContended(spec, url, 'in-process', { ...contended, seconds: tuneSeconds });
        log(`  ${spec.label}: ${rate(result.perSecond)} acq/s`);
        tried.push({ spec, result });
      }
      const best = [...tried].sort((a, b) => b.result.perSecond - a.result.perSecond)[0];
      if (best === undefined) throw new Error(`no tuning candidates for ${peer.name}`);
      tuning.push({
        peer: peer.name,
        tried: tried.map((t) => ({ label: t.spec.label, perSecond: t.result.perSecond, waitP99: t.result.waitP99 })),
        chosen: best.spec,
      });
    }

    const lineup: ContenderSpec[] = [...PADLOCKS, ...PEERS.map((p) => p.defaults), ...tuning.map((t) => t.chosen)];
    const results: Record<Mode, ContendedResult[]> = { 'in-process': [], processes: [] };
    for (const mode of withProcesses ? (['in-process', 'processes'] as const) : (['in-process'] as const)) {
      log(`contended, ${mode}…`);
      for (const spec of lineup) {
        const result = await runContended(spec, url, mode, contended);
        log(`  ${spec.label}: ${rate(result.perSecond)} acq/s, wait p99 ${fixed(result.waitP99, 1)} ms`);
        results[mode].push(result);
      }
    }

    const goals = targets(uncontended, results, ping);
    const info = machine();
    const out: string[] = [];
    out.push(
      `machine: ${String(info.nproc)} × ${String(info.cpu)}, node ${String(info.node)}, redis ${String(info.redis)}; ` +
        `load average (1 min) ${String(info.loadAverage1mAtStart)} at start, ${String(info.loadAverage1mAtEnd)} at end`,
    );
    out.push(`peers: ${PEERS.map((p) => `${p.name}@${p.version}`).join(', ')}`);
    out.push(`ping p50 ${fixed(ping.p50, 3)} ms, p99 ${fixed(ping.p99, 3)} ms (${ping.samples} sequential PINGs, idle server)`);
    out.push('', '## Uncontended (one client, sequential acquire+release, interleaved rounds)', '', uncontendedTable(uncontended));
    out.push(
      '',
      `Sequential ceiling (one worker, raw lock + GET+SET, no think time): ${rate(ceiling.perSecond)} cycles/s`,
    );
    for (const mode of Object.keys(results) as Mode[]) {
      if (results[mode].length === 0) continue;
      const title = mode === 'in-process' ? 'one process, workers share one client' : 'one OS process per worker';
      out.push('', `## Contended, ${title}: ${workers} workers, one key, ~${thinkMs} ms think, GET+SET inside, ${seconds} s`, '');
      out.push(contendedTable(results[mode]));
      out.push('', commandsTable(results[mode]));
    }
    out.push('', '## Peer tuning (in-process, ' + `${tuneSeconds} s each; the fastest is the "tuned" row)`, '');
    out.push(table(['candidate', 'acq/s', 'wait p99 ms'], tuning.flatMap((t) => t.tried.map((c) => [c.label, rate(c.perSecond), fixed(c.waitP99, 1)]))));
    out.push('', '## Targets', '', targetsTable(goals));
    out.push('', `total bench time ${fixed((Date.now() - started) / 1000, 0)} s`);
    process.stdout.write(`${out.join('\n')}\n`);

    const json = {
      date: new Date().toISOString(),
      machine: info,
      peers: Object.fromEntries(PEERS.map((p) => [p.name, p.version])),
      padlock: padlockVersion(),
      options: { workers, seconds, tuneSeconds, thinkMs, rounds, roundMs },
      ping,
      uncontended,
      sequentialCeiling: { definition: 'one worker, raw lock (SET NX PX + Lua compare-and-delete), GET+SET inside, no think time', cyclesPerSecond: ceiling.perSecond },
      tuning,
      contended: results,
      targets: goals,
    };
    writeFileSync(new URL('../../bench/results.json', import.meta.url), `${JSON.stringify(json, null, 2)}\n`);
    log('wrote bench/results.json');
  } finally {
    await server.stop();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
