/**
 * The I/O-bound rows of `npm run bench`: the lock guards a critical section that waits on I/O, as
 * most locks in services do. W worker processes (4, 8, 16, 32 by default) on one key; each loops
 * acquire → GET the counter → `ioMs` of I/O (a timer, standing for a call to another service) →
 * SET the counter + 1 → release → think (`thinkMs`, uniform ±50 %). The lock is then busy for
 * the GET, the I/O and the SET: its ceiling is 1 / hold acquisitions per second, whatever the lock;
 * what a lock adds shows as the share of that ceiling it reaches and as the wait.
 * `npm run bench -- --io-only` runs these rows alone.
 */
import { runContended, type ContendedOptions, type ContendedResult } from './contended.js';
import type { ContenderSpec, Servers } from './contenders.js';
import { PADLOCKS, PEERS } from './lineup.js';
import { bestPeers, fixed, rate, ratio, table } from './report.js';

export interface IoBoundOptions {
  /** Worker processes of each row (one worker each). */
  readonly processes: readonly number[];
  /** I/O inside the lock (ms), one table each. */
  readonly ioMs: readonly number[];
  /** Mean think time between a worker's acquisitions (ms). */
  readonly thinkMs: number;
  /** Measured length of each row (s). */
  readonly seconds: number;
  /** Unmeasured seconds each row's processes run first (see bench/README.md, "Warm processes"). */
  readonly warmUpSeconds: number;
  /** Length of each tuning run (s). */
  readonly tuneSeconds: number;
  /** Workers of the tuning runs (in one process). */
  readonly tuneWorkers: number;
}

/** How one peer was tuned for one I/O length: every candidate's rate, and the fastest. */
export interface IoTuning {
  readonly peer: string;
  readonly ioMs: number;
  readonly tried: ReadonlyArray<{ readonly label: string; readonly perSecond: number; readonly waitP99: number }>;
  readonly chosen: ContenderSpec;
}

export interface IoBoundRow {
  readonly processes: number;
  readonly ioMs: number;
  readonly result: ContendedResult;
  /** 1 / held p50: the acquisitions per second a lock that cost nothing would allow with this hold. */
  readonly ceiling: number;
}

export interface IoBoundBench {
  readonly definition: string;
  readonly options: IoBoundOptions;
  readonly tuning: readonly IoTuning[];
  readonly rows: readonly IoBoundRow[];
}

/**
 * Tunes each peer for each I/O length (its candidates in one process, the fastest kept), then runs
 * padlock's kinds and the tuned peers in every row, one OS process per worker.
 */
export async function ioBoundBench(servers: Servers, options: IoBoundOptions, log: (line: string) => void): Promise<IoBoundBench> {
  const tuning: IoTuning[] = [];
  const rows: IoBoundRow[] = [];
  for (const ioMs of options.ioMs) {
    log(`I/O-bound, ${ioMs} ms of I/O inside: tuning the peers (${options.tuneWorkers} workers in one process)…`);
    const tuneRun: ContendedOptions = { workers: options.tuneWorkers, seconds: options.tuneSeconds, thinkMs: options.thinkMs, ioMs };
    for (const peer of PEERS) {
      const tried: Array<{ spec: ContenderSpec; result: ContendedResult }> = [];
      for (const spec of peer.candidates) {
        const result = await runContended(spec, servers, 'in-process', tuneRun);
        log(`  ${spec.label}: ${rate(result.perSecond)} acq/s`);
        tried.push({ spec, result });
      }
      const best = [...tried].sort((a, b) => b.result.perSecond - a.result.perSecond)[0];
      if (best === undefined) throw new Error(`no tuning candidates for ${peer.name}`);
      tuning.push({ peer: peer.name, ioMs, tried: tried.map((t) => ({ label: t.spec.label, perSecond: t.result.perSecond, waitP99: t.result.waitP99 })), chosen: best.spec });
    }
    const lineup = [...PADLOCKS, ...tuning.filter((t) => t.ioMs === ioMs).map((t) => t.chosen)];
    for (const processes of options.processes) {
      log(`I/O-bound, ${ioMs} ms of I/O inside, ${processes} processes…`);
      const run: ContendedOptions = { workers: processes, seconds: options.seconds, thinkMs: options.thinkMs, ioMs, warmUpSeconds: options.warmUpSeconds };
      for (const spec of lineup) {
        const result = await runContended(spec, servers, 'processes', run);
        log(`  ${spec.label}: ${rate(result.perSecond)} acq/s, held p50 ${fixed(result.holdP50, 2)} ms, wait p99 ${fixed(result.waitP99, 1)} ms, lost ${result.lostUpdates}`);
        rows.push({ processes, ioMs, result, ceiling: 1000 / result.holdP50 });
      }
    }
  }
  const definition =
    `one OS process per worker (${options.processes.join(', ')}), one key; each worker: acquire, GET the counter, I/O (a timer of ${options.ioMs.join(' or ')} ms), ` +
    `SET the counter + 1, release, think ~${options.thinkMs} ms (uniform ±50 %); ${options.seconds} s measured after ${options.warmUpSeconds} s unmeasured; ` +
    `peers tuned for each I/O length in one process of ${options.tuneWorkers} workers; ceiling = 1 / held p50`;
  return { definition, options, tuning, rows };
}

/** One table per I/O length: each row count's contenders, padlock first, with their ratios to the best peer of the same row count. */
export function ioBoundSections(bench: IoBoundBench): string[] {
  const { options } = bench;
  const out: string[] = [];
  for (const ioMs of options.ioMs) {
    out.push(
      '',
      `## I/O-bound: ${ioMs} ms of I/O inside the lock (GET, ${ioMs} ms timer, SET), ~${options.thinkMs} ms think, one OS process per worker, ${options.seconds} s after ${options.warmUpSeconds} s unmeasured`,
      '',
    );
    const lines: string[][] = [];
    for (const processes of options.processes) {
      const rows = bench.rows.filter((r) => r.ioMs === ioMs && r.processes === processes);
      const best = bestPeers(rows.map((r) => r.result));
      for (const row of rows) {
        const r = row.result;
        lines.push([
          String(processes),
          r.label,
          rate(r.perSecond),
          ratio(best.rate === undefined ? NaN : r.perSecond / best.rate.perSecond),
          rate(row.ceiling),
          fixed(r.perSecond / row.ceiling, 2),
          fixed(r.holdP50, 2),
          fixed(r.waitP50, 1),
          fixed(r.waitP99, 1),
          ratio(best.p99 === undefined ? NaN : r.waitP99 / best.p99.waitP99),
          fixed(r.jain, 3),
          String(r.lostUpdates),
          fixed(r.clientCpuMsPerAcquisition, 3),
          fixed(r.redisCpuMsPerAcquisition, 3),
        ]);
      }
    }
    out.push(
      table(
        ['processes', 'contender', 'acq/s', '× best peer', 'ceiling 1/held', '× ceiling', 'held p50 ms', 'wait p50 ms', 'wait p99 ms', 'p99 × lowest peer p99', 'Jain', 'lost', 'client CPU ms/acq', 'redis CPU ms/acq'],
        lines,
      ),
    );
  }
  out.push('', `Peer tuning for the I/O-bound rows (${options.tuneWorkers} workers in one process, ${options.tuneSeconds} s each; the fastest is used above):`, '');
  out.push(table(['I/O ms', 'candidate', 'acq/s', 'wait p99 ms'], bench.tuning.flatMap((t) => t.tried.map((c) => [String(t.ioMs), c.label, rate(c.perSecond), fixed(c.waitP99, 1)]))));
  return out;
}
