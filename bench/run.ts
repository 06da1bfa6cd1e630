/**
 * `npm run bench`: padlock side by side with the peer libraries, in one run, on a private
 * redis-server, and on a Redlock set of private independent masters (padlock's mutex beside each
 * peer's Redlock mode). Prints the tables and the targets, and writes `bench/results.json`.
 *
 *   --workers N       contended workers (default 16)
 *   --seconds S       length of each contended run (default 4)
 *   --tune-seconds S  length of each tuning run (default 1.5)
 *   --think-ms MS     mean think time between acquisitions (default 1)
 *   --rounds N        uncontended rounds per contender (default 20)
 *   --round-ms MS     length of one uncontended round (default 250)
 *   --no-processes    skip the multi-process runs
 *   --warm-up S       seconds each multi-process run runs unmeasured first (default 30)
 *   --masters N       masters of the Redlock set (default 5, at least 3)
 *   --no-redlock      skip the Redlock runs
 *   --no-scale        skip the scale rows
 *   --scale-only      run only the scale rows (peers at their defaults: nothing is tuned)
 *   --scale-locks N, --scale-workers N, --scale-processes N (0: in-process only), --scale-seconds S,
 *   --scale-leases N, --scale-waiters N, --scale-lease-ms MS: see bench/README.md
 *   --no-read-write   skip the read-mostly rows (read/write lock vs mutex)
 *   --read-write-only run only the read-mostly rows
 *   --no-semaphore    skip the semaphore rows (bench/semaphore.ts)
 *   --semaphore-only  run only the semaphore rows (bench/results.json is left as it is)
 *   --no-server-cpu   skip the rows of the server's whole CPU per pair (bench/server-cpu.ts)
 *   --no-io           skip the I/O-bound rows (bench/io-bound.ts)
 *   --io-only         run only the I/O-bound rows (bench/results.json is left as it is)
 *   --io-processes L, --io-ms L, --io-think-ms MS, --io-seconds S, --io-warm-up S, --io-tune-workers N:
 *                     the I/O-bound rows' worker processes and I/O lengths (comma-separated lists), think
 *                     time, measured and unmeasured seconds, and tuning workers: see bench/README.md
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { startRedisServer, type RedisServer } from '../src/devserver/redis-server.js';
import { installCommandMeter } from './command-meter.js';
import { runContended, type ContendedOptions, type ContendedResult, type Mode } from './contended.js';
import type { ContenderSpec, Servers } from './contenders.js';
import { PADLOCKS, PEERS, RAW, SCALE_HOLDERS, padlockVersion, redlockLineup, type Peer } from './lineup.js';
import { redlockAnatomy, type Anatomy } from './redlock-anatomy.js';
import {
  anatomyTable,
  commandsTable,
  contendedTable,
  fixed,
  issue10Targets,
  leasesTable,
  memoryTable,
  rate,
  redlockTargets,
  redlockUncontendedTable,
  scaleContendedTable,
  table,
  targets,
  targetsTable,
  uncontendedTable,
  type Target,
} from './report.js';
import { runAllLeases, runScaleContended, type LeaseResult, type ScaleFailure, type ScaleOptions } from './scale.js';
import { measureColdWake, type ColdWakeResult } from './cold-wake.js';
import { measurePing, runUncontended, type PingResult, type UncontendedResult } from './uncontended.js';
import { readWriteSections, runReadWriteBench } from './read-write.js';
import { semaphoreBench, semaphoreSection } from './semaphore.js';
import { ioBoundBench, ioBoundSections, type IoBoundOptions } from './io-bound.js';
import { runServerCpu, serverCpuTable } from './server-cpu.js';

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
    'warm-up': { type: 'string', default: '30' },
    masters: { type: 'string', default: '5' },
    'no-redlock': { type: 'boolean', default: false },
    'no-scale': { type: 'boolean', default: false },
    'scale-only': { type: 'boolean', default: false },
    'scale-locks': { type: 'string', default: '1000' },
    'scale-workers': { type: 'string', default: '64' },
    'scale-processes': { type: 'string', default: '8' },
    'scale-seconds': { type: 'string', default: '2.5' },
    'scale-leases': { type: 'string', default: '10000' },
    'scale-waiters': { type: 'string', default: '1000' },
    'scale-lease-ms': { type: 'string', default: '3000' },
    'no-read-write': { type: 'boolean', default: false },
    'read-write-only': { type: 'boolean', default: false },
    'no-semaphore': { type: 'boolean', default: false },
    'semaphore-only': { type: 'boolean', default: false },
    'no-io': { type: 'boolean', default: false },
    'no-server-cpu': { type: 'boolean', default: false },
    'io-only': { type: 'boolean', default: false },
    'io-processes': { type: 'string', default: '4,8,16,32' },
    'io-ms': { type: 'string', default: '1,5' },
    'io-think-ms': { type: 'string', default: '3' },
    'io-seconds': { type: 'string', default: '3' },
    'io-warm-up': { type: 'string', default: '5' },
    'io-tune-workers': { type: 'string', default: '8' },
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
// Each worker process compiles its JavaScript as it runs: measured from its first second, a
// multi-process run measures V8 compiling the library (see bench/README.md, "Warm processes").
const warmUpSeconds = positive('warm-up', args['warm-up'], false);
const masterCount = positive('masters', args.masters, true);
if (masterCount < 3) throw new Error(`--masters must be at least 3 (a Redlock set needs a majority that survives the loss of one), got ${masterCount}`);
const readWriteOnly = args['read-write-only'];
const semaphoreOnly = args['semaphore-only'];
const ioOnly = args['io-only'];
if (ioOnly && args['no-io']) throw new Error('--io-only and --no-io leave nothing to run');
const withSemaphore = !args['no-semaphore'] && !args['scale-only'] && !readWriteOnly && !ioOnly;
const scaleOnly = args['scale-only'] || readWriteOnly || semaphoreOnly || ioOnly;
const withIo = !args['no-io'] && (ioOnly || !scaleOnly);

/** A comma-separated list of whole numbers ≥ 1. */
function list(name: string, text: string | undefined): number[] {
  const values = String(text).split(',').map((item) => Math.max(1, positive(name, item.trim(), true)));
  if (values.length === 0) throw new Error(`--${name} needs at least one value`);
  return values;
}

const io: IoBoundOptions = {
  processes: list('io-processes', args['io-processes']),
  ioMs: list('io-ms', args['io-ms']),
  thinkMs: positive('io-think-ms', args['io-think-ms'], false),
  seconds: positive('io-seconds', args['io-seconds'], false),
  warmUpSeconds: positive('io-warm-up', args['io-warm-up'], false),
  tuneSeconds,
  tuneWorkers: Math.max(1, positive('io-tune-workers', args['io-tune-workers'], true)),
};
if (args['scale-only'] && args['no-scale']) throw new Error('--scale-only and --no-scale leave nothing to run');
const withRedlock = !args['no-redlock'] && !scaleOnly;
const withScale = !args['no-scale'] && !readWriteOnly && !semaphoreOnly && !ioOnly;
const scaleLeaseMs = positive('scale-lease-ms', args['scale-lease-ms'], true);
if (scaleLeaseMs < 300) throw new Error(`--scale-lease-ms must be at least 300 (renewals a third of it apart), got ${scaleLeaseMs}`);
const scale: ScaleOptions = {
  locks: Math.max(1, positive('scale-locks', args['scale-locks'], true)),
  workers: Math.max(1, positive('scale-workers', args['scale-workers'], true)),
  processes: withProcesses ? positive('scale-processes', args['scale-processes'], true) : 0,
  seconds: positive('scale-seconds', args['scale-seconds'], false),
  thinkMs,
  warmUpSeconds,
  leases: Math.max(1, positive('scale-leases', args['scale-leases'], true)),
  waiters: Math.max(1, positive('scale-waiters', args['scale-waiters'], true)),
  leaseMs: scaleLeaseMs,
  renewEveryMs: Math.round(scaleLeaseMs / 3),
  windowMs: scaleLeaseMs,
};
const modes = withProcesses ? (['in-process', 'processes'] as const) : (['in-process'] as const);

const log = (line: string): void => void process.stderr.write(`${line}\n`);

/** The cold wake-up in one line: each round trip after sleeping, then back to back, wall (CPU). */
function coldWakeLine(cold: ColdWakeResult): string {
  const trips = (list: ColdWakeResult['afterSleep']): string => list.map((t) => `${fixed(t.wallP50, 3)} (${fixed(t.cpuP50, 3)})`).join(', ');
  return (
    `cold wake-up: GETs right after this process slept ${String(cold.sleepMs)} ms, p50 ms wall (CPU): ${trips(cold.afterSleep)}; ` +
    `back to back: ${trips(cold.backToBack)} (${String(cold.bursts)} bursts of each, interleaved)`
  );
}

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

interface Tuning {
  readonly peer: string;
  readonly tried: Array<{ label: string; perSecond: number; waitP99: number }>;
  readonly chosen: ContenderSpec;
}

/** Runs each peer's candidates in a short in-process contended run; the fastest is its "tuned" spec. */
async function tune(peers: readonly Peer[], servers: Servers, options: ContendedOptions): Promise<Tuning[]> {
  const tuning: Tuning[] = [];
  for (const peer of peers) {
    const tried: Array<{ spec: ContenderSpec; result: ContendedResult }> = [];
    for (const spec of peer.candidates) {
      const result = await runContended(spec, servers, 'in-process', options);
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
  return tuning;
}

/** Runs `lineup` contended in every mode. */
async function contend(lineup: readonly ContenderSpec[], servers: Servers, options: ContendedOptions, what: string): Promise<Record<Mode, ContendedResult[]>> {
  const results: Record<Mode, ContendedResult[]> = { 'in-process': [], processes: [] };
  for (const mode of modes) {
    log(`contended${what}, ${mode}…`);
    for (const spec of lineup) {
      const result = await runContended(spec, servers, mode, options);
      log(`  ${spec.label}: ${rate(result.perSecond)} acq/s, wait p99 ${fixed(result.waitP99, 1)} ms`);
      results[mode].push(result);
    }
  }
  return results;
}

function tuningTable(tuning: readonly Tuning[]): string {
  return table(['candidate', 'acq/s', 'wait p99 ms'], tuning.flatMap((t) => t.tried.map((c) => [c.label, rate(c.perSecond), fixed(c.waitP99, 1)])));
}

function contendedSections(results: Record<Mode, ContendedResult[]>, where: string): string[] {
  const out: string[] = [];
  for (const mode of Object.keys(results) as Mode[]) {
    if (results[mode].length === 0) continue;
    const title = mode === 'in-process' ? 'one process, workers share one client' : 'one OS process per worker';
    const length = mode === 'in-process' ? `${seconds} s` : `${seconds} s after ${warmUpSeconds} s unmeasured`;
    out.push('', `## Contended${where}, ${title}: ${workers} workers, one key, ~${thinkMs} ms think, GET+SET inside, ${length}`, '');
    out.push(contendedTable(results[mode]));
    out.push('', commandsTable(results[mode]));
  }
  return out;
}

/** Everything but the scale rows: uncontended, the sequential ceiling, tuning, contended, Redlock, the targets. */
interface CoreRuns {
  readonly uncontended: UncontendedResult[];
  readonly anatomy: Anatomy | undefined;
  readonly ceiling: ContendedResult;
  readonly tuning: Tuning[];
  readonly results: Record<Mode, ContendedResult[]>;
  readonly redlockTuning: Tuning[];
  readonly redlockResults: Record<Mode, ContendedResult[]>;
  readonly goals: Target[];
}

async function coreRuns(servers: Servers, ping: PingResult): Promise<CoreRuns> {
  const contended: ContendedOptions = { workers, seconds, thinkMs, warmUpSeconds };
  const tuneRun: ContendedOptions = { ...contended, seconds: tuneSeconds };
  const redlock = withRedlock ? redlockLineup(masterCount) : undefined;

  log('uncontended…');
  const redlockUncontended = redlock === undefined ? [] : [redlock.padlock, ...redlock.peers.map((p) => p.defaults)];
  const uncontended = await runUncontended([RAW, ...PADLOCKS, ...PEERS.map((p) => p.defaults), ...redlockUncontended], servers, { rounds, roundMs });

  let anatomy: Anatomy | undefined;
  if (withRedlock) {
    log('where a Redlock acquire spends its time…');
    anatomy = await redlockAnatomy(servers.single, servers.masters, { rounds: Math.max(2, Math.ceil(rounds / 2)), perRound: 200 });
  }

  log('sequential ceiling…');
  const ceiling = await runContended(RAW, servers, 'in-process', { workers: 1, seconds: Math.min(seconds, 2), thinkMs: 0 });

  log('tuning the peers…');
  const tuning = await tune(PEERS, servers, tuneRun);
  const results = await contend([...PADLOCKS, ...PEERS.map((p) => p.defaults), ...tuning.map((t) => t.chosen)], servers, contended, '');

  let redlockTuning: Tuning[] = [];
  let redlockResults: Record<Mode, ContendedResult[]> = { 'in-process': [], processes: [] };
  if (redlock !== undefined) {
    log(`tuning the peers' Redlock modes on ${masterCount} masters…`);
    redlockTuning = await tune(redlock.peers, servers, tuneRun);
    const lineup = [redlock.padlock, ...redlock.peers.map((p) => p.defaults), ...redlockTuning.map((t) => t.chosen)];
    redlockResults = await contend(lineup, servers, contended, ` on ${masterCount} masters`);
  }

  const goals = [
    ...targets(uncontended, results, ping),
    ...issue10Targets(uncontended, results),
    ...(redlock === undefined ? [] : redlockTargets({ padlockLabel: redlock.padlock.label, uncontended, contended: redlockResults })),
  ];
  return { uncontended, anatomy, ceiling, tuning, results, redlockTuning, redlockResults, goals };
}

function coreSections(core: CoreRuns): string[] {
  const out: string[] = [];
  out.push('', '## Uncontended (one client, sequential acquire+release, interleaved rounds)', '', uncontendedTable(core.uncontended));
  out.push('', `Sequential ceiling (one worker, raw lock + GET+SET, no think time): ${rate(core.ceiling.perSecond)} cycles/s`);
  out.push(...contendedSections(core.results, ''));
  out.push('', '## Peer tuning (in-process, ' + `${tuneSeconds} s each; the fastest is the "tuned" row)`, '');
  out.push(tuningTable(core.tuning));
  if (withRedlock) {
    out.push('', `## Redlock on ${masterCount} masters: uncontended (same interleaved rounds as above)`, '', redlockUncontendedTable(core.uncontended));
    const anatomy = core.anatomy;
    if (anatomy !== undefined) {
      out.push('', `Where padlock's uncontended acquire on ${masterCount} masters spends its time (timed call by call; interleaved with the floors below):`, '');
      out.push(
        anatomyTable(anatomy),
        '',
        `Acquires that needed the fence written back to the majority (a second round): ${fixed(anatomy.secondRoundsPerAcquire * 100, 1)} %; ` +
          `fence write-backs to masters that granted after the majority, per acquire: ${fixed(anatomy.stragglersPerAcquire, 2)} ` +
          `(${fixed(anatomy.stragglersOnPathPerAcquire, 2)} sent before the acquire returned, on its path)`,
        '',
        `Time one master spends in one call (SLOWLOG p50 over ${anatomy.serverMicros.samples} calls each): acquire.lua ${anatomy.serverMicros.acquire} µs, ` +
          `the GET + SET PX floor script ${anatomy.serverMicros.twoCommands} µs (the ${masterCount} masters share the cores the client leaves them)`,
      );
    }
    out.push(...contendedSections(core.redlockResults, ` on ${masterCount} Redlock masters`));
    out.push('', `## Redlock peer tuning (in-process on ${masterCount} masters, ${tuneSeconds} s each)`, '', tuningTable(core.redlockTuning));
  }
  return out;
}

/** The scale rows (see `scale.ts`). */
interface ScaleRuns {
  /** Which peer settings the many-locks rows use. */
  readonly peerSettings: 'tuned' | 'defaults';
  readonly contended: Record<Mode, ContendedResult[]>;
  readonly leases: LeaseResult[];
  /** Rows that failed (the bench goes on without them). */
  readonly failures: ScaleFailure[];
}

/** The many-locks rows with the peers as this run tuned them (at their defaults when nothing was tuned), then the held leases and waiters. */
async function scaleRuns(servers: Servers, tuning: readonly Tuning[] | undefined): Promise<ScaleRuns> {
  const peers = tuning === undefined ? PEERS.map((p) => p.defaults) : tuning.map((t) => t.chosen);
  const where = scale.processes > 0 ? `in one process, then in ${scale.processes} processes` : 'in one process';
  log(`scale: ${scale.locks} locks, ${scale.workers} workers, ${where}…`);
  const failures: ScaleFailure[] = [];
  const contended = await runScaleContended([...PADLOCKS, ...peers], servers, scale, log, failures);
  log(`scale: ${scale.leases} leases held (${scale.leaseMs} ms, renewed), ${scale.waiters} waiters…`);
  const leases = await runAllLeases(SCALE_HOLDERS, servers, scale, log, failures);
  return { peerSettings: tuning === undefined ? 'defaults' : 'tuned', contended, leases, failures };
}

function scaleSections(scaled: ScaleRuns): string[] {
  const out: string[] = [];
  const peers = scaled.peerSettings === 'tuned' ? 'peers as tuned above' : 'peers at their defaults';
  const cycle = `${scale.workers} workers picking one of ${scale.locks} locks at random, ~${thinkMs} ms think, GET+SET of that lock's counter inside, ${scale.seconds} s; ${peers}`;
  out.push('', `## Scale: many locks, one process: ${cycle}`, '', scaleContendedTable(scaled.contended['in-process']), '', commandsTable(scaled.contended['in-process']));
  if (scaled.contended.processes.length > 0) {
    const perProcess = Math.ceil(scale.workers / scale.processes);
    out.push('', `## Scale: many locks, ${scale.processes} OS processes of ${perProcess} workers, after ${warmUpSeconds} s unmeasured: ${cycle}`, '', scaleContendedTable(scaled.contended.processes), '', commandsTable(scaled.contended.processes));
  }
  out.push(
    '',
    `## Scale: ${rate(scale.leases)} leases held by one client, ${fixed(scale.leaseMs / 1000, 1)} s lease renewed by the library, measured for ${fixed(scale.windowMs / 1000, 1)} s`,
    '',
    leasesTable(scaled.leases),
    '',
    `## Scale: memory of one client (heap after GC) holding ${rate(scale.leases)} leases, then also waiting on ${rate(scale.waiters)} locks held by another client`,
    '',
    memoryTable(scaled.leases),
  );
  if (scaled.failures.length > 0) {
    out.push('', '**Scale rows that failed** (left out of the tables above):', '', table(['contender', 'run', 'error'], scaled.failures.map((f) => [f.label, f.run, f.error.replaceAll('|', '\\|')])));
  }
  return out;
}

async function main(): Promise<void> {
  const started = Date.now();
  const starting = [startRedisServer(), ...Array.from({ length: withRedlock ? masterCount : 0 }, () => startRedisServer())];
  const settled = await Promise.allSettled(starting);
  const running = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  try {
    const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failed !== undefined) throw failed.reason;
    const [server, ...masters]: RedisServer[] = running;
    if (server === undefined) throw new Error('no redis-server started');
    const url = server.url;
    const servers: Servers = { single: url, masters: masters.map((m) => m.url) };
    log(`redis-server ${server.url}; ${workers} workers, ${seconds} s per contended run`);
    if (withRedlock) log(`Redlock masters: ${servers.masters.join(', ')}`);

    const ping = await measurePing(url);
    log(`ping p50 ${fixed(ping.p50, 3)} ms`);
    const coldWake = await measureColdWake(url);
    log(coldWakeLine(coldWake));
    const core = scaleOnly ? undefined : await coreRuns(servers, ping);
    // On a server of its own: its whole CPU then counts only the pairs measured.
    const serverCpu = scaleOnly || args['no-server-cpu'] ? undefined : await runServerCpu({ rounds: Math.max(5, Math.ceil(rounds / 2)), roundMs: Math.max(roundMs, 400), clients: [1, 16] }, log);
    const readWrite = args['no-read-write'] || semaphoreOnly || ioOnly ? undefined : await runReadWriteBench(url, { workers, seconds }, log);
    const semaphore = withSemaphore ? await semaphoreBench(url, seconds, thinkMs, log) : undefined;
    const ioBound = withIo ? await ioBoundBench(servers, io, log) : undefined;
    // Last: the lease runs flush the server between libraries.
    const scaled = withScale ? await scaleRuns(servers, core?.tuning) : undefined;

    const info = machine();
    const out: string[] = [];
    out.push(
      `machine: ${String(info.nproc)} × ${String(info.cpu)}, node ${String(info.node)}, redis ${String(info.redis)}; ` +
        `load average (1 min) ${String(info.loadAverage1mAtStart)} at start, ${String(info.loadAverage1mAtEnd)} at end`,
    );
    out.push(`peers: ${PEERS.map((p) => `${p.name}@${p.version}`).join(', ')}`);
    out.push(`ping p50 ${fixed(ping.p50, 3)} ms, p99 ${fixed(ping.p99, 3)} ms (${ping.samples} sequential PINGs, idle server)`);
    out.push(coldWakeLine(coldWake));
    if (core !== undefined) out.push(...coreSections(core));
    if (serverCpu !== undefined) {
      out.push('', "## The server's whole CPU per uncontended acquire+release (INFO cpu; its own server, 1 and 16 clients at once, ratios to the bare pair round by round)", '', serverCpuTable(serverCpu));
    }
    if (readWrite !== undefined) out.push(...readWriteSections(readWrite));
    if (scaled !== undefined) out.push(...scaleSections(scaled));
    if (semaphore !== undefined) out.push(...semaphoreSection(semaphore));
    if (ioBound !== undefined) out.push(...ioBoundSections(ioBound));
    if (core !== undefined) out.push('', '## Targets', '', targetsTable(core.goals));
    out.push('', `total bench time ${fixed((Date.now() - started) / 1000, 0)} s`);
    process.stdout.write(`${out.join('\n')}\n`);

    const json = {
      date: new Date().toISOString(),
      machine: info,
      peers: Object.fromEntries(PEERS.map((p) => [p.name, p.version])),
      padlock: padlockVersion(),
      options: { workers, seconds, tuneSeconds, thinkMs, warmUpSeconds, rounds, roundMs, masters: withRedlock ? masterCount : 0, scale: withScale ? scale : null, scaleOnly },
      ping,
      coldWake,
      uncontended: core?.uncontended ?? null,
      serverCpu: serverCpu ?? null,
      sequentialCeiling:
        core === undefined
          ? null
          : { definition: 'one worker, raw lock (SET NX PX + Lua compare-and-delete), GET+SET inside, no think time', cyclesPerSecond: core.ceiling.perSecond },
      tuning: core?.tuning ?? null,
      contended: core?.results ?? null,
      redlock:
        core === undefined || !withRedlock
          ? null
          : {
              masters: masterCount,
              definition: `padlock mutex and each peer's Redlock mode on ${masterCount} independent masters; the workload's counter on the single server; its uncontended rows are in "uncontended" (topology "redlock")`,
              anatomy: core.anatomy,
              tuning: core.redlockTuning,
              contended: core.redlockResults,
            },
      scale:
        scaled === undefined
          ? null
          : {
              definition:
                `contended: ${scale.workers} workers picking one of ${scale.locks} locks at random per cycle (GET+SET of that lock's counter inside), in one process and in ${scale.processes} OS processes, ` +
                `peers ${scaled.peerSettings}; leases: one client in its own process holding ${scale.leases} leases of ${scale.leaseMs} ms renewed by the library, measured over ${scale.windowMs} ms, ` +
                `then also waiting on ${scale.waiters} locks another client holds; heap after GC (node --expose-gc)`,
              peerSettings: scaled.peerSettings,
              contended: scaled.contended,
              leases: scaled.leases,
              failures: scaled.failures,
            },
      targets: core?.goals ?? null,
      readMostly: readWrite ?? null,
      semaphore: semaphore ?? null,
      ioBound: ioBound ?? null,
    };
    if (semaphoreOnly || ioOnly) return;
    writeFileSync(new URL('../../bench/results.json', import.meta.url), `${JSON.stringify(json, null, 2)}\n`);
    log('wrote bench/results.json');
  } finally {
    await Promise.all(running.map((s) => s.stop()));
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
