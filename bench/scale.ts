/**
 * The scale rows (issue 10): padlock beside the peers when there are many locks.
 *
 * - **Many locks**: W workers (64) pick one of L distinct locks (1 000) at random per cycle, the
 *   same cycle as the contended runs (acquire, GET+SET of that lock's counter, release, think): in
 *   one process, and in a few OS processes that share the workers (see `runScaleContended`).
 * - **Held leases**: one client holds N leases (10 000) with a short lease that the library renews by
 *   itself, in a process of its own; over a window, the round trips it sends, the lease renewals it
 *   makes, and the commands and CPU time Redis spends on them.
 * - **Memory**: that process's heap after GC, before the leases, with them held, and with M more
 *   acquisitions (1 000) waiting on locks another client holds; then, the leases released, what
 *   the waiters alone cost Redis.
 */
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import type { Redis } from 'ioredis';
import { ChildChannel, withTimeout } from './child.js';
import { diffCounts, parseCommandMicros, parseCommandStats, totalCount, type CommandCounts } from './command-meter.js';
import { runContended, type ContendedResult, type Mode } from './contended.js';
import { openContender, renewalCadence, type Contender, type ContenderSpec, type Held, type Servers } from './contenders.js';
import type { FromHolder, ToHolder } from './messages.js';
import { connectData } from './workload.js';

export interface ScaleOptions {
  /** Distinct locks the many-locks workers pick from. */
  readonly locks: number;
  readonly workers: number;
  /** OS processes sharing the workers in the multi-process many-locks run; 0 skips that run. */
  readonly processes: number;
  /** Length of each many-locks run (s). */
  readonly seconds: number;
  readonly thinkMs: number;
  /** Seconds each multi-process many-locks run runs unmeasured first (see ContendedOptions). */
  readonly warmUpSeconds: number;
  /** Leases held and renewed. */
  readonly leases: number;
  /** Acquisitions left waiting, for their memory. */
  readonly waiters: number;
  /** The held leases' lease (ms). */
  readonly leaseMs: number;
  /** The renewal period asked of libraries that let the caller choose it (ms). */
  readonly renewEveryMs: number;
  /** How long the held leases' renewals are measured (ms). */
  readonly windowMs: number;
}

/** A scale row that could not be measured: the bench goes on without it, and says so. */
export interface ScaleFailure {
  readonly label: string;
  readonly run: string;
  readonly error: string;
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message.split('\n')[0] ?? error.name : String(error);
}

/** Many locks: each contender in one process, then in `processes` OS processes. */
export async function runScaleContended(
  lineup: readonly ContenderSpec[],
  servers: Servers,
  options: ScaleOptions,
  log: (line: string) => void,
  failures: ScaleFailure[],
): Promise<Record<Mode, ContendedResult[]>> {
  const results: Record<Mode, ContendedResult[]> = { 'in-process': [], processes: [] };
  const modes: Mode[] = options.processes > 0 ? ['in-process', 'processes'] : ['in-process'];
  for (const mode of modes) {
    for (const spec of lineup) {
      try {
        const result = await runContended(spec, servers, mode, {
          workers: options.workers,
          seconds: options.seconds,
          thinkMs: options.thinkMs,
          locks: options.locks,
          processes: options.processes,
          warmUpSeconds: options.warmUpSeconds,
        });
        log(`  ${mode}, ${spec.label}: ${Math.round(result.perSecond)} acq/s`);
        results[mode].push(result);
      } catch (error) {
        log(`  ${mode}, ${spec.label}: FAILED: ${describe(error)}`);
        failures.push({ label: spec.label, run: `many locks, ${mode}`, error: describe(error) });
      }
    }
  }
  return results;
}

/** {@link runLeases} for each of `lineup`, going on past a library that fails. */
export async function runAllLeases(lineup: readonly ContenderSpec[], servers: Servers, options: ScaleOptions, log: (line: string) => void, failures: ScaleFailure[]): Promise<LeaseResult[]> {
  const results: LeaseResult[] = [];
  for (const spec of lineup) {
    try {
      const result = await runLeases(spec, servers, options);
      log(
        `  ${spec.label}: ${Math.round(result.renewalsPerSecond)} renewals/s in ${Math.round(result.roundTripsPerSecond)} round trips/s, ` +
          `redis CPU ${result.redisCpuMsPerSecond.toFixed(1)} ms/s; ${Math.round(result.heapPerLease)} B per lease, ${Math.round(result.heapPerWaiter)} B per waiter`,
      );
      results.push(result);
    } catch (error) {
      log(`  ${spec.label}: FAILED: ${describe(error)}`);
      failures.push({ label: spec.label, run: 'held leases and waiters', error: describe(error) });
    }
  }
  return results;
}

/** One library's held leases (their renewals, and the heap they take) and waiters (their heap, and what they cost Redis). */
export interface LeaseResult {
  readonly label: string;
  readonly library: ContenderSpec['library'];
  readonly spec: ContenderSpec;
  readonly leases: number;
  readonly leaseMs: number;
  /** The renewal period, and how it was set. */
  readonly renewEveryMs: number;
  readonly renewHow: string;
  /** Time to take the leases, 64 acquisitions in flight (s). */
  readonly acquireSeconds: number;
  /** The measurement window (s). */
  readonly windowSeconds: number;
  /** Lease renewals per second: padlock's `extended` events, a peer's script calls (one per renewal). */
  readonly renewalsPerSecond: number;
  /** Commands the holder sent per second (each one its own round trip: none were pipelined). */
  readonly roundTripsPerSecond: number;
  readonly leasesPerRoundTrip: number;
  /** Commands Redis ran per second, inside scripts included (the bench's INFOs excluded). */
  readonly executedPerSecond: number;
  /** Redis CPU time (user + system) per second of the window (ms/s). */
  readonly redisCpuMsPerSecond: number;
  /** Redis CPU time per lease renewal (µs). */
  readonly redisCpuMicrosPerRenewal: number;
  /** Time Redis spent in one renewal call, by `INFO commandstats` (ms): how long one call keeps Redis busy. */
  readonly redisMsPerRoundTrip: number;
  /** CPU time of the holder process per second (ms/s). */
  readonly clientCpuMsPerSecond: number;
  /** Leases the library no longer counted held after the window (a renewal failed or came late). Must be 0. */
  readonly lost: number;
  readonly sent: CommandCounts;
  readonly executed: CommandCounts;
  /** Heap growth (after GC) per held lease (bytes). */
  readonly heapPerLease: number;
  readonly waiters: number;
  /** Heap growth (after GC) per waiting acquisition (bytes). */
  readonly heapPerWaiter: number;
  /** Commands Redis ran per second for the waiters alone (their polling, heartbeats, …), the leases released. */
  readonly waitersExecutedPerSecond: number;
  /** Redis CPU time per second meanwhile (ms/s). */
  readonly waitersRedisCpuMsPerSecond: number;
  /** Commands Redis ran meanwhile, by name. */
  readonly waitersExecuted: CommandCounts;
  /** Waits that ended (acquired, gave up or failed) before the heap was read. Must be 0. */
  readonly waitsEnded: number;
}

/** One snapshot of a server's counters. */
interface Snapshot {
  readonly at: number;
  readonly calls: CommandCounts;
  readonly micros: CommandCounts;
  readonly cpuMs: number;
}

async function snapshot(admin: Redis): Promise<Snapshot> {
  const stats = await admin.info('commandstats');
  const cpu = await admin.info('cpu');
  const field = (name: string): number => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(cpu)?.[1] ?? Number.NaN);
  return { at: performance.now(), calls: parseCommandStats(stats), micros: parseCommandMicros(stats), cpuMs: (field('used_cpu_user') + field('used_cpu_sys')) * 1000 };
}

/** What Redis did between two snapshots: commands (the first snapshot's two INFOs excluded), script time, CPU time. */
function between(before: Snapshot, after: Snapshot): { seconds: number; executed: CommandCounts; scriptCalls: number; scriptMicros: number; cpuMs: number } {
  const executed = diffCounts(diffCounts(after.calls, before.calls), { info: 2 });
  const micros = diffCounts(after.micros, before.micros);
  return {
    seconds: (after.at - before.at) / 1000,
    executed,
    scriptCalls: (executed.evalsha ?? 0) + (executed.eval ?? 0),
    scriptMicros: (micros.evalsha ?? 0) + (micros.eval ?? 0),
    cpuMs: after.cpuMs - before.cpuMs,
  };
}

const HOLDER_SCRIPT = fileURLToPath(new URL('./scale-process.js', import.meta.url));
/** Bound on any one step of the holder process. */
const STEP_TIMEOUT_MS = 120_000;
/** Pause after the leases are taken, and after the waiters start, before measuring. */
const SETTLE_MS = 500;
/** How long the waiters' cost to Redis is measured (ms): two of padlock's waiter heartbeats. */
const WAITING_WINDOW_MS = 2_000;

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function ask<T extends FromHolder['type']>(holder: ChildChannel<ToHolder, FromHolder>, message: ToHolder, expect: T): Promise<Extract<FromHolder, { type: T }>> {
  const reply = await withTimeout(holder.request(message), STEP_TIMEOUT_MS, `the lease holder's '${message.type}'`);
  if (reply.type !== expect) throw new Error(`the lease holder replied '${reply.type}' to '${message.type}'`);
  return reply as Extract<FromHolder, { type: T }>;
}

/** Takes `count` locks `key:0…` through `contender` (uncontended; 64 in flight). */
async function holdAll(contender: Contender, key: string, count: number): Promise<Held[]> {
  const held: Held[] = [];
  let next = 0;
  const taker = async (): Promise<void> => {
    while (next < count) {
      const name = `${key}:${next++}`;
      const one = await contender.acquire(name, 5_000);
      if (one === null) throw new Error(`could not take ${name} for the waiters to wait on`);
      held.push(one);
    }
  };
  await Promise.all(Array.from({ length: 64 }, taker));
  return held;
}

/**
 * Held leases and waiters of `spec`'s library. The Redis server must serve nothing else meanwhile:
 * its counters are read as this library's, and it is flushed at the end (the holder process exits
 * without releasing, and its leases would otherwise linger until they expire).
 */
export async function runLeases(spec: ContenderSpec, servers: Servers, options: ScaleOptions): Promise<LeaseResult> {
  const admin = connectData(servers.single);
  const holder = new ChildChannel<ToHolder, FromHolder>(HOLDER_SCRIPT, ['--expose-gc']);
  const key = `scale:${randomBytes(4).toString('hex')}`;
  let other: Contender | undefined;
  let blocking: Held[] = [];
  try {
    const cadence = renewalCadence(spec, options.leaseMs, options.renewEveryMs);
    const open: ToHolder = { type: 'open', spec, servers, key: `${key}:lease`, count: options.leases, leaseMs: options.leaseMs, renewEveryMs: options.renewEveryMs };
    const holding = await ask(holder, open, 'holding');
    await sleep(SETTLE_MS);
    const before = await snapshot(admin);
    const measured = await ask(holder, { type: 'measure', ms: options.windowMs }, 'measured');
    const after = await snapshot(admin);
    const withLeases = await ask(holder, { type: 'heap' }, 'heap');

    // Another client (this process, the same library) holds the locks the waiters wait on.
    other = await openContender(spec, servers);
    blocking = await holdAll(other, `${key}:wait`, options.waiters);
    await ask(holder, { type: 'wait', key: `${key}:wait`, count: options.waiters, settleMs: SETTLE_MS }, 'waiting');
    const withWaiters = await ask(holder, { type: 'heap' }, 'heap');
    // What the waiters cost Redis, measured alone: the leases' renewals would blur it (and, on a
    // starved machine, slow down under the waiters' load, so that subtracting them misleads).
    await ask(holder, { type: 'release' }, 'released');
    await sleep(SETTLE_MS);
    const waitBefore = await snapshot(admin);
    await sleep(WAITING_WINDOW_MS);
    const waitAfter = await snapshot(admin);
    const stillWaiting = await ask(holder, { type: 'heap' }, 'heap');

    const window = between(before, after);
    const waiting = between(waitBefore, waitAfter);
    const seconds = measured.ms / 1000;
    const sent = measured.usage.sent;
    const roundTrips = totalCount(sent);
    const renewals = measured.renewals ?? (sent.evalsha ?? 0) + (sent.eval ?? 0);
    return {
      label: spec.label,
      library: spec.library,
      spec,
      leases: options.leases,
      leaseMs: options.leaseMs,
      renewEveryMs: cadence.everyMs,
      renewHow: cadence.how,
      acquireSeconds: holding.acquireMs / 1000,
      windowSeconds: seconds,
      renewalsPerSecond: renewals / seconds,
      roundTripsPerSecond: roundTrips / seconds,
      leasesPerRoundTrip: renewals / roundTrips,
      executedPerSecond: totalCount(window.executed) / window.seconds,
      redisCpuMsPerSecond: window.cpuMs / window.seconds,
      redisCpuMicrosPerRenewal: (window.cpuMs * 1000) / renewals,
      redisMsPerRoundTrip: window.scriptMicros / 1000 / window.scriptCalls,
      clientCpuMsPerSecond: measured.usage.cpuMs / seconds,
      lost: withLeases.lost,
      sent,
      executed: window.executed,
      heapPerLease: (withLeases.heapUsed - holding.heapBefore) / options.leases,
      waiters: options.waiters,
      heapPerWaiter: (withWaiters.heapUsed - withLeases.heapUsed) / options.waiters,
      waitersExecutedPerSecond: totalCount(waiting.executed) / waiting.seconds,
      waitersRedisCpuMsPerSecond: waiting.cpuMs / waiting.seconds,
      waitersExecuted: waiting.executed,
      waitsEnded: stillWaiting.waitsEnded,
    };
  } finally {
    holder.tell({ type: 'close' });
    await holder.stop(5_000);
    await Promise.all(blocking.map((h) => h.release().catch(() => undefined)));
    await other?.close().catch(() => undefined);
    await admin.flushdb().catch(() => undefined);
    await admin.quit().catch(() => admin.disconnect());
  }
}
