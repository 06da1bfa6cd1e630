/**
 * Uncontended: one client, sequential acquire+release on its own key, and the ping round trip of the
 * same server. Rounds are interleaved across contenders (single-server and Redlock alike) so that a
 * noisy moment on the machine hits every contender alike; each contender's result is its median
 * round, and the latency of each acquire and release call.
 */
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { diffCounts, parseCommandMicros, readCommandMeter, resetCommandMeter, totalCount, type CommandCounts } from './command-meter.js';
import { acquireRelease, lockServers, openContender, topologyOf, type Contender, type ContenderSpec, type Servers, type Topology } from './contenders.js';
import { median, nowMs, percentile, sorted } from './stats.js';
import { connectData } from './workload.js';

export interface UncontendedResult {
  readonly label: string;
  readonly library: ContenderSpec['library'];
  readonly spec: ContenderSpec;
  readonly topology: Topology;
  /** Servers the lock lives on: 1, or the Redlock set's masters. */
  readonly servers: number;
  /** Median over rounds of acquire+release pairs per second. */
  readonly opsPerSecond: number;
  /** Every round's rate, in run order. */
  readonly rounds: readonly number[];
  /** One acquire call (ms), over every round. */
  readonly acquireP50: number;
  readonly acquireP99: number;
  /** Every round's acquire p50 (ms), in run order: for ratios taken round by round. */
  readonly roundAcquireP50s: readonly number[];
  /** One release call (ms), over every round. */
  readonly releaseP50: number;
  /** Commands the client sent per acquire+release. */
  readonly commandsPerOp: number;
  /**
   * Microseconds Redis spent per acquire+release (`INFO commandstats`, summed over the lock's
   * servers): in the commands the client sent, a script counted whole with what it ran inside.
   */
  readonly redisMicrosPerOp: number;
  /** This process's CPU time per acquire+release (µs, `process.cpuUsage`: JavaScript and the kernel's socket work). */
  readonly clientCpuMicrosPerOp: number;
}

export interface UncontendedOptions {
  readonly rounds: number;
  readonly roundMs: number;
}

export interface PingResult {
  readonly p50: number;
  readonly p99: number;
  readonly samples: number;
}

/** Sequential PINGs on a fresh connection; round-trip times in ms. */
export async function measurePing(url: string, samples = 2_000): Promise<PingResult> {
  const client = connectData(url);
  try {
    for (let i = 0; i < Math.min(200, samples); i++) await client.ping();
    const times: number[] = [];
    for (let i = 0; i < samples; i++) {
      const start = nowMs();
      await client.ping();
      times.push(nowMs() - start);
    }
    const ordered = sorted(times);
    return { p50: percentile(ordered, 50), p99: percentile(ordered, 99), samples };
  } finally {
    await client.quit().catch(() => client.disconnect());
  }
}

/** What one round measured. */
interface Round {
  readonly rate: number;
  readonly commands: number;
  readonly ops: number;
  readonly redisMicros: number;
  readonly cpuMicros: number;
  /** Each acquire and release call's duration (ms). */
  readonly acquires: number[];
  readonly releases: number[];
}

/** Each server's `INFO commandstats` microseconds, by command. */
async function commandMicros(admins: readonly Redis[]): Promise<CommandCounts[]> {
  return Promise.all(admins.map(async (admin) => parseCommandMicros(await admin.info('commandstats'))));
}

/**
 * Redis's microseconds between two snapshots in the commands the client sent (by name, from the
 * command meter; the bench's own INFOs left out). A script's time includes the commands it ran, which
 * commandstats also lists under their own names: those are not added again, unless the client also
 * sent a command of that name itself (of the contenders only the raw baseline sends one outside a
 * script, a SET, and its release script runs GET and DEL).
 */
function sentMicros(before: readonly CommandCounts[], after: readonly CommandCounts[], sent: CommandCounts): number {
  let total = 0;
  for (const [i, snapshot] of after.entries()) {
    const delta = diffCounts(snapshot, before[i] ?? {});
    for (const name of Object.keys(sent)) if (name !== 'info') total += delta[name] ?? 0;
  }
  return total;
}

/** Acquire+release pairs per second over `ms`, each call's duration, the commands they sent, and what they cost Redis and this process. */
async function round(contender: Contender, key: string, ms: number, admins: readonly Redis[]): Promise<Round> {
  const micros = await commandMicros(admins);
  resetCommandMeter();
  const acquires: number[] = [];
  const releases: number[] = [];
  const cpu = process.cpuUsage();
  const start = nowMs();
  const end = start + ms;
  while (nowMs() < end) {
    const called = nowMs();
    const held = await contender.acquire(key, 1_000);
    const acquired = nowMs();
    if (held === null) throw new Error(`uncontended acquire of ${key} failed`);
    await held.release();
    releases.push(nowMs() - acquired);
    acquires.push(acquired - called);
  }
  const elapsed = nowMs() - start;
  const used = process.cpuUsage(cpu);
  const sent = readCommandMeter();
  const redisMicros = sentMicros(micros, await commandMicros(admins), sent);
  return { rate: acquires.length / (elapsed / 1000), commands: totalCount(sent), ops: acquires.length, redisMicros, cpuMicros: used.user + used.system, acquires, releases };
}

/** Measures every spec on `servers`, interleaving their rounds. */
export async function runUncontended(specs: readonly ContenderSpec[], servers: Servers, options: UncontendedOptions): Promise<UncontendedResult[]> {
  interface Entry {
    readonly spec: ContenderSpec;
    readonly contender: Contender;
    readonly key: string;
    readonly rates: number[];
    readonly acquires: number[];
    readonly releases: number[];
    readonly roundAcquireP50s: number[];
    /** Connections to the lock's servers for their INFO, apart from the contender's own. */
    readonly admins: readonly Redis[];
    commands: number;
    ops: number;
    redisMicros: number;
    cpuMicros: number;
  }
  const opened: Entry[] = [];
  try {
    for (const spec of specs) {
      const contender = await openContender(spec, servers);
      const key = `bench:uncontended:${randomBytes(4).toString('hex')}`;
      const admins = lockServers(spec, servers).map(connectData);
      opened.push({ spec, contender, key, rates: [], acquires: [], releases: [], roundAcquireP50s: [], admins, commands: 0, ops: 0, redisMicros: 0, cpuMicros: 0 });
      for (let i = 0; i < 200; i++) await acquireRelease(contender, key);
    }
    for (let r = 0; r < options.rounds; r++) {
      // Alternate the order so that no contender always runs right after the same one.
      const order = r % 2 === 0 ? opened : [...opened].reverse();
      for (const entry of order) {
        const result = await round(entry.contender, entry.key, options.roundMs, entry.admins);
        entry.rates.push(result.rate);
        entry.roundAcquireP50s.push(median(result.acquires));
        entry.acquires.push(...result.acquires);
        entry.releases.push(...result.releases);
        entry.commands += result.commands;
        entry.ops += result.ops;
        entry.redisMicros += result.redisMicros;
        entry.cpuMicros += result.cpuMicros;
      }
    }
    return opened.map((e) => {
      const acquires = sorted(e.acquires);
      return {
        label: e.spec.label,
        library: e.spec.library,
        spec: e.spec,
        topology: topologyOf(e.spec),
        servers: lockServers(e.spec, servers).length,
        opsPerSecond: median(e.rates),
        rounds: e.rates,
        acquireP50: percentile(acquires, 50),
        acquireP99: percentile(acquires, 99),
        roundAcquireP50s: e.roundAcquireP50s,
        releaseP50: median(e.releases),
        commandsPerOp: e.commands / e.ops,
        redisMicrosPerOp: e.redisMicros / e.ops,
        clientCpuMicrosPerOp: e.cpuMicros / e.ops,
      };
    });
  } finally {
    for (const entry of opened) {
      await entry.contender.close().catch(() => undefined);
      await Promise.all(entry.admins.map((admin) => admin.quit().catch(() => admin.disconnect())));
    }
  }
}
