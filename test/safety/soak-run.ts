/**
 * The soak: round after round of checker runs with random shapes (lock kind, processes, acquirers,
 * lease, stalls) and one random fault injected at a random moment, until the time is up. Every round
 * must be safe and live. A round is replayed from the seed it prints.
 */
import type { Redis } from 'ioredis';
import type { RedisServer } from '../../src/devserver/redis-server.js';
import { Padlock } from '../../src/index.js';
import { describeReport, isLive, isSafe, type SafetyReport } from './checker.js';
import type { Fleet, WorkerHandle } from './fleet.js';
import { hasFairMutex, type LockKind } from './lock-clients.js';
import { RedisProxy } from './proxy.js';
import { Random } from './random.js';
import type { SectionRecord } from './records.js';
import { openServers, runChecked, type Provider, type Servers } from './scenario.js';

export const FAULTS = [
  'none', 'holder-sigkill', 'holder-sigstop', 'holder-stall', 'server-sigstop', 'client-pause',
  'client-kill', 'script-flush', 'lost-replies', 'delayed-replies',
] as const;
export type Fault = (typeof FAULTS)[number];

export interface SoakOptions {
  readonly provider: Provider;
  readonly durationMs: number;
  readonly seed: number;
  /** Upper bound on processes per round. */
  readonly maxWorkers?: number;
  readonly log?: (line: string) => void;
}

export interface SoakResult {
  readonly rounds: number;
  readonly sections: number;
  readonly lostHolds: number;
  readonly staleRefused: number;
  readonly faults: Readonly<Record<string, number>>;
  /** One entry per unsafe or stuck round, with its seed. */
  readonly failures: readonly string[];
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The value of `promise`, or undefined when it takes longer than `ms`. */
async function within<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const result = await Promise.race([promise, new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), ms)))]);
  clearTimeout(timer);
  return result;
}

async function killConnections(admin: Redis): Promise<void> {
  const list = (await admin.call('CLIENT', 'LIST')) as string;
  for (const line of list.split('\n')) {
    const id = /name=safety-w\d+ /.test(line) ? /id=(\d+)/.exec(line)?.[1] : undefined;
    if (id !== undefined) await admin.call('CLIENT', 'KILL', 'ID', id).catch(() => undefined);
  }
}

interface RoundPlan {
  readonly seed: number;
  readonly kind: LockKind;
  readonly workers: number;
  readonly slots: number;
  readonly sections: number;
  readonly leaseMs: number;
  readonly stall: number;
  readonly fault: Fault;
  readonly faultAfterMs: number;
}

function plan(random: Random, seed: number, kinds: readonly LockKind[], maxWorkers: number): RoundPlan {
  return {
    seed,
    kind: random.pick(kinds),
    workers: random.int(2, maxWorkers),
    slots: random.int(1, 3),
    sections: random.int(4, 12),
    leaseMs: random.int(200, 600),
    stall: random.pick([0, 0, 0.02, 0.05]),
    fault: random.pick(FAULTS),
    faultAfterMs: random.int(20, 400),
  };
}

async function inject(round: RoundPlan, fleet: Fleet, servers: Servers, proxy: RedisProxy, killed: Set<number>): Promise<void> {
  const lease = round.leaseMs;
  await sleep(round.faultAfterMs);
  // None when the round ends (every worker gone) before anyone acquires: there is nobody to fault.
  const holder = async (): Promise<[SectionRecord, WorkerHandle] | undefined> => within(fleet.next('acquired').catch(() => undefined), 2_000);
  switch (round.fault) {
    case 'none':
    case 'holder-stall': // injected by the workers themselves (see `stall` in the round's shape)
      return;
    case 'holder-sigkill': {
      const held = await holder();
      if (held === undefined) return;
      killed.add(held[1].id);
      held[1].child.kill('SIGKILL');
      return;
    }
    case 'holder-sigstop': {
      const held = await holder();
      if (held === undefined) return;
      held[1].child.kill('SIGSTOP');
      await sleep(lease * 2);
      held[1].child.kill('SIGCONT');
      return;
    }
    case 'server-sigstop':
      servers.lock.pause();
      await sleep(lease * 2);
      servers.lock.resume();
      return;
    case 'client-pause':
      await servers.admin.call('CLIENT', 'PAUSE', String(lease * 2), 'ALL');
      return;
    case 'client-kill':
      await killConnections(servers.admin);
      return;
    case 'script-flush':
      await servers.admin.script('FLUSH');
      return;
    case 'lost-replies':
      // Set up before the round (the workers talk through the proxy); here it just runs.
      return;
    case 'delayed-replies':
      proxy.delayReplies(lease * 2);
      await sleep(lease * 3);
      proxy.delayReplies(0);
      return;
  }
}

export async function soak(options: SoakOptions): Promise<SoakResult> {
  const log = options.log ?? (() => undefined);
  const servers = await openServers(options.provider);
  const proxy = await RedisProxy.start(servers.lock);
  const probe = new Padlock({ redis: options.provider.connect(servers.lock) });
  const kinds: LockKind[] = hasFairMutex(probe) ? ['mutex', 'fairMutex'] : ['mutex'];
  await probe.close();
  const master = new Random(options.seed);
  const started = performance.now();
  const faults: Record<string, number> = {};
  const failures: string[] = [];
  let rounds = 0;
  let sections = 0;
  let lostHolds = 0;
  let staleRefused = 0;
  try {
    while (performance.now() - started < options.durationMs) {
      const seed = master.int(1, 2 ** 31);
      const round = plan(new Random(seed), seed, kinds, options.maxWorkers ?? 5);
      const throughProxy = round.fault === 'lost-replies' || round.fault === 'delayed-replies';
      proxy.loseReplies(round.fault === 'lost-replies' ? 0.03 : 0, new Random(seed));
      const killed = new Set<number>();
      let report: SafetyReport | undefined;
      try {
        ({ report } = await runChecked(servers, {
          kind: round.kind, workers: round.workers, slots: round.slots, sections: round.sections,
          leaseMs: round.leaseMs, workMs: [0, 5], seed,
          ...(round.stall > 0 ? { stall: { probability: round.stall, ms: round.leaseMs * 2 } } : {}),
          ...(throughProxy ? { lockEndpoint: { host: proxy.host, port: proxy.port } } : {}),
          killed,
          timeoutMs: 90_000,
          during: (fleet) => inject(round, fleet, servers, proxy, killed),
        }));
      } catch (error) {
        failures.push(`round seed ${seed} (${JSON.stringify(round)}) failed to run: ${String(error)}`);
        continue;
      } finally {
        proxy.loseReplies(0, new Random(0));
        proxy.delayReplies(0);
      }
      rounds++;
      sections += report.sections;
      lostHolds += report.lostHolds;
      staleRefused += report.staleRefused;
      faults[round.fault] = (faults[round.fault] ?? 0) + 1;
      const ok = isSafe(report) && isLive(report);
      log(`${ok ? 'ok  ' : 'FAIL'} seed ${seed} ${round.kind} ${round.workers}×${round.slots}×${round.sections} lease ${round.leaseMs} stall ${round.stall} fault ${round.fault}: ${report.sections} sections, ${report.lostHolds} lost, ${report.staleRefused} stale refused`);
      if (!ok) failures.push(`round seed ${seed} (${JSON.stringify(round)}):\n${describeReport(report)}`);
    }
  } finally {
    await proxy.close();
  }
  return { rounds, sections, lostHolds, staleRefused, faults, failures };
}

/** Servers and clients for a soak run outside the test runner; `close` stops them all. */
export function standaloneProvider(start: Provider['startServer'], client: (server: RedisServer) => Redis): Provider & { close(): Promise<void> } {
  const servers: RedisServer[] = [];
  const clients: Redis[] = [];
  return {
    startServer: async (options) => {
      const server = await start(options);
      servers.push(server);
      return server;
    },
    connect: (server) => {
      const c = client(server);
      clients.push(c);
      return c;
    },
    close: async () => {
      for (const c of clients) c.disconnect();
      await Promise.allSettled(servers.map((s) => s.stop()));
    },
  };
}
