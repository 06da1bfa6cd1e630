/**
 * Contended runs: W workers on one key (or on many, picked at random: the scale run), in this
 * process (sharing one client, as an application would) or in OS processes (one per worker unless
 * told fewer; each with its own connections, shared by its workers). Both run the same worker loop
 * (`workload.ts`) and are measured the same way: client timestamps for rates and latencies, the
 * counter for lost updates, the command meter and `INFO commandstats` (summed over every server the
 * lock lives on: one, or each Redlock master) for commands. The counter always lives on the single
 * server.
 */
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import type { Redis } from 'ioredis';
import { addCounts, diffCounts, parseCommandStats, totalCount, type CommandCounts } from './command-meter.js';
import { lockServers, openContender, type ContenderSpec, type Servers } from './contenders.js';
import { ChildChannel, withTimeout } from './child.js';
import type { FromWorker, ToWorker } from './messages.js';
import { measureContended, nowMs, type AcquisitionRecord, type ContendedMeasures } from './stats.js';
import * as padlockScripts from '../src/stores/redis/scripts/index.js';
import { measurePing } from './uncontended.js';
import { connectData, counterKeys, metered, runWorker, warmUp, type ClientUsage, type RunPlan, type WorkerOutcome, type Workload } from './workload.js';

export type Mode = 'in-process' | 'processes';

export interface ContendedOptions {
  readonly workers: number;
  readonly seconds: number;
  /** Mean think time between a worker's acquisitions (ms); 0 for none. */
  readonly thinkMs: number;
  /** Distinct locks the workers pick from at random, each with its own counter (default 1). */
  readonly locks?: number;
  /** In `processes` mode, how many OS processes share the workers (default: one per worker). */
  readonly processes?: number;
  /**
   * In `processes` mode, seconds the workers run the same loop, unmeasured, before the measured run
   * (default 0), so that each process's JavaScript is compiled as in a process that has been serving
   * a while. In one process there is none: that process has run the earlier rows and is compiled.
   */
  readonly warmUpSeconds?: number;
  /** I/O inside the lock, between the GET and the SET (ms; default 0): see `RunPlan.ioMs`. */
  readonly ioMs?: number;
}

export interface ContendedResult extends ContendedMeasures {
  readonly label: string;
  readonly library: ContenderSpec['library'];
  readonly spec: ContenderSpec;
  readonly mode: Mode;
  readonly workers: number;
  /** Distinct locks the workers picked from. */
  readonly locks: number;
  /** OS processes the workers ran in (1 in-process). */
  readonly processes: number;
  readonly seconds: number;
  /** Cycles completed from the start to the end of the drain (the metered period). */
  readonly cycles: number;
  /** Cycles minus the counter's increase: updates lost to a broken exclusion. Must be 0. */
  readonly lostUpdates: number;
  /** Acquire calls the library gave up on (retry limit or acquire timeout) and the worker repeated. */
  readonly giveUps: number;
  /** Workers still waiting at the hard stop. */
  readonly stuck: number;
  /** Ping p50 (ms) measured on the same server just before this run (the machine's load changes). */
  readonly pingP50: number;
  /** Lock commands the clients sent per cycle (the workload's GET and SET excluded). */
  readonly sentPerAcquisition: number;
  /** Commands Redis ran per cycle, including those inside scripts (the workload's GET and SET excluded). */
  readonly executedPerAcquisition: number;
  /** Lock commands sent, by name, over the metered period. */
  readonly sent: CommandCounts;
  /** Commands executed, by name, over the metered period. */
  readonly executed: CommandCounts;
  /** padlock's script calls by script (`acquire`, `raise-fence`, …; others by SHA1), over the metered period. */
  readonly scripts: CommandCounts;
  /** Pub/sub messages the clients received per cycle (a waiter's wake-ups, on every subscribed connection). */
  readonly messagesPerAcquisition: number;
  /** CPU time (user + system) of the lock's Redis servers per cycle, summed over them (ms). */
  readonly redisCpuMsPerAcquisition: number;
  /** CPU time of the client processes (this one in-process, the W workers otherwise) per cycle (ms). */
  readonly clientCpuMsPerAcquisition: number;
}

/** What a set of workers reports back after a run. */
interface Collected {
  readonly outcomes: readonly WorkerOutcome[];
  readonly usage: ClientUsage;
}

/** Workers opened and warmed up, waiting for a plan. */
interface Session {
  run(plan: RunPlan): Promise<Collected>;
  close(): Promise<void>;
}

/** How long after the last worker is ready the run starts, so that every worker is waiting for it. */
const START_DELAY_MS = { 'in-process': 50, processes: 300 } as const;
/** How long after the deadline a worker may still wait before it is counted as stuck. */
const DRAIN_LIMIT_MS = 15_000;
/** Bound on starting or stopping a set of worker processes. */
const PROCESS_TIMEOUT_MS = 60_000;

/** Runs `spec` contended in `mode` on `servers`. */
export async function runContended(spec: ContenderSpec, servers: Servers, mode: Mode, options: ContendedOptions): Promise<ContendedResult> {
  const where = lockServers(spec, servers);
  const admin = connectData(servers.single);
  const meters = where.map(connectData);
  const key = `bench:${randomBytes(4).toString('hex')}`;
  const workload: Workload = { key, counterKey: `${key}:counter`, locks: options.locks ?? 1 };
  const processes = mode === 'in-process' ? 1 : Math.min(options.workers, options.processes ?? options.workers);
  const session = mode === 'in-process' ? await openInProcess(spec, servers, options, workload) : await openProcesses(spec, servers, options.workers, processes, workload);
  try {
    // The run that starts `START_DELAY_MS` from now and lasts `seconds`.
    const planFor = (seconds: number): RunPlan => {
      const startAt = nowMs() + START_DELAY_MS[mode];
      const deadline = startAt + seconds * 1000;
      return { ...workload, startAt, deadline, hardStop: deadline + DRAIN_LIMIT_MS, thinkMs: options.thinkMs, ioMs: options.ioMs ?? 0 };
    };
    const warmUpSeconds = mode === 'processes' ? (options.warmUpSeconds ?? 0) : 0;
    if (warmUpSeconds > 0) await session.run(planFor(warmUpSeconds));
    const ping = await measurePing(where[0] ?? servers.single, 300);
    const counterBefore = await counterSum(admin, workload);
    const statsBefore = await commandStats(meters);
    const cpuBefore = await redisCpuMs(meters);
    const plan = planFor(options.seconds);
    const { startAt, deadline } = plan;
    const collected = await session.run(plan);
    const statsAfter = await commandStats(meters);
    const cpuAfter = await redisCpuMs(meters);
    const counterAfter = await counterSum(admin, workload);

    const records: AcquisitionRecord[] = collected.outcomes.flatMap((o) => o.records);
    const cycles = records.length;
    const increments: CommandCounts = { get: cycles, set: cycles };
    const sent = withoutCounts(collected.usage.sent, increments);
    // The two INFOs (commandstats, cpu) that took the first snapshot on each server are counted in
    // the second; the workload's GET and SET only where the counter lives.
    const bench: CommandCounts = { ...(where.includes(servers.single) ? increments : {}), info: 2 * meters.length };
    const executed = withoutCounts(diffCounts(statsAfter, statsBefore), bench);
    return {
      label: spec.label,
      library: spec.library,
      spec,
      mode,
      workers: options.workers,
      locks: workload.locks,
      processes,
      seconds: options.seconds,
      ...measureContended(records, options.workers, startAt, deadline),
      cycles,
      lostUpdates: cycles - (counterAfter - counterBefore),
      giveUps: collected.outcomes.reduce((n, o) => n + o.giveUps, 0),
      stuck: collected.outcomes.filter((o) => o.stuck).length,
      pingP50: ping.p50,
      sentPerAcquisition: totalCount(sent) / cycles,
      executedPerAcquisition: totalCount(executed) / cycles,
      sent,
      executed,
      scripts: byScriptName(collected.usage.scripts),
      messagesPerAcquisition: collected.usage.messages / cycles,
      redisCpuMsPerAcquisition: (cpuAfter - cpuBefore) / cycles,
      clientCpuMsPerAcquisition: collected.usage.cpuMs / cycles,
    };
  } finally {
    await session.close();
    await Promise.all([admin, ...meters].map((c) => c.quit().catch(() => c.disconnect())));
  }
}

/** The sum of every counter of `workload` (MGET in chunks). */
async function counterSum(client: Redis, workload: Workload): Promise<number> {
  const keys = counterKeys(workload);
  let sum = 0;
  for (let i = 0; i < keys.length; i += 1_000) {
    for (const value of await client.mget(keys.slice(i, i + 1_000))) sum += Number(value ?? 0);
  }
  return sum;
}

/** `INFO commandstats` of every server, summed. */
async function commandStats(clients: readonly Redis[]): Promise<CommandCounts> {
  const each = await Promise.all(clients.map(async (c) => parseCommandStats(await c.info('commandstats'))));
  return each.reduce(addCounts, {});
}

/** padlock's scripts by SHA1 → name without `.lua`. */
const PADLOCK_SCRIPTS = new Map(
  Object.values(padlockScripts).flatMap((value: unknown) =>
    typeof value === 'object' && value !== null && 'sha' in value && 'name' in value ? [[String(value.sha), String(value.name).replace(/\.lua$/, '')] as const] : [],
  ),
);

/** Script counts keyed by padlock's script names (any other script keeps its SHA1's first 8 characters). */
function byScriptName(scripts: CommandCounts): CommandCounts {
  const named: CommandCounts = {};
  for (const [sha, n] of Object.entries(scripts)) {
    const name = PADLOCK_SCRIPTS.get(sha) ?? `sha ${sha.slice(0, 8)}`;
    named[name] = (named[name] ?? 0) + n;
  }
  return named;
}

/** CPU time (user + system, main thread and children) the servers have used so far, summed (ms). */
async function redisCpuMs(clients: readonly Redis[]): Promise<number> {
  const each = await Promise.all(
    clients.map(async (c) => {
      const info = await c.info('cpu');
      const field = (name: string): number => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? Number.NaN);
      return field('used_cpu_user') + field('used_cpu_sys') + field('used_cpu_user_children') + field('used_cpu_sys_children');
    }),
  );
  return each.reduce((a, b) => a + b, 0) * 1000;
}

/** `counts − minus`, dropping zero entries. */
function withoutCounts(counts: CommandCounts, minus: CommandCounts): CommandCounts {
  return diffCounts(counts, minus);
}

/** W workers in this process sharing one contender client and one workload connection. */
async function openInProcess(spec: ContenderSpec, servers: Servers, options: ContendedOptions, workload: Workload): Promise<Session> {
  const data = connectData(servers.single);
  const contender = await openContender(spec, servers);
  await warmUp(contender, data, workload);
  return {
    async run(plan) {
      const { result: outcomes, usage } = await metered(() => Promise.all(Array.from({ length: options.workers }, (_, worker) => runWorker(worker, contender, data, plan))));
      return { outcomes, usage };
    },
    async close() {
      await contender.close();
      await data.quit().catch(() => data.disconnect());
    },
  };
}

const WORKER_SCRIPT = fileURLToPath(new URL('./worker-process.js', import.meta.url));

/** One worker process: its messages as promises. */
class WorkerProcess extends ChildChannel<ToWorker, FromWorker> {
  constructor() {
    super(WORKER_SCRIPT);
  }
}

/**
 * `count` worker processes, each with its own connections, opened and warmed up; the `workers`
 * worker ids dealt among them in turn (one each when `count` is `workers`).
 */
async function openProcesses(spec: ContenderSpec, servers: Servers, workerCount: number, count: number, workload: Workload): Promise<Session> {
  const workers = Array.from({ length: count }, () => new WorkerProcess());
  const ids = (index: number): number[] => Array.from({ length: workerCount }, (_, id) => id).filter((id) => id % count === index);
  const stopAll = (): Promise<unknown> => Promise.all(workers.map((w) => w.stop(5_000)));
  try {
    // One at a time: a worker's warm-up acquires the lock, and warm-ups racing each other are a
    // contended run of their own (a Redlock split vote among peers that keep partial holds between
    // retries can last until their leases end). The processes themselves start together.
    const open = async (): Promise<void> => {
      for (const [index, w] of workers.entries()) await w.request({ type: 'open', spec, servers, workers: ids(index), workload });
    };
    await withTimeout(open(), PROCESS_TIMEOUT_MS, 'starting the worker processes');
  } catch (error) {
    for (const w of workers) w.child.kill('SIGKILL');
    await stopAll();
    throw error;
  }
  return {
    async run(plan) {
      const replies = await withTimeout(
        Promise.all(workers.map((w) => w.request({ type: 'go', plan }))),
        plan.hardStop - nowMs() + PROCESS_TIMEOUT_MS,
        'the worker processes',
      );
      const outcomes: WorkerOutcome[] = [];
      let usage: ClientUsage = { sent: {}, scripts: {}, messages: 0, cpuMs: 0 };
      for (const reply of replies) {
        if (reply.type !== 'result') throw new Error(`unexpected reply '${reply.type}' from a worker process`);
        outcomes.push(...reply.outcomes);
        usage = {
          sent: addCounts(usage.sent, reply.usage.sent),
          scripts: addCounts(usage.scripts, reply.usage.scripts),
          messages: usage.messages + reply.usage.messages,
          cpuMs: usage.cpuMs + reply.usage.cpuMs,
        };
      }
      return { outcomes, usage };
    },
    async close() {
      for (const w of workers) w.tell({ type: 'close' });
      await stopAll();
    },
  };
}
