/**
 * `npm run bench:stores`: padlock's mutex on each of its three stores, in one run, on servers this
 * bench starts on loopback and stops at the end (and on SIGINT): one redis-server, a 3-server
 * ZooKeeper ensemble, a 3-member etcd cluster. Three parts:
 *
 * 1. uncontended acquire+release, one client each, in paired rounds (the order alternating forward
 *    and backward), beside the bare ZooKeeper recipe (bench/zookeeper-bare.ts) and etcd3's own `Lock`;
 * 2. contended in one process: W workers sharing one Padlock on one lock name (acquire, simulated
 *    work on a timer, release), rounds interleaving the stores;
 * 3. across processes: P worker processes, one worker each, each with its own clients
 *    (bench/stores-child.ts), the same workload, after an unmeasured warm-up run per store.
 *
 * etcd3's `Lock` has no contended rows: it is try-once (`acquire()` fails when the lock is taken),
 * so it has no wait to measure; a retry loop around it would measure the loop.
 *
 *   --rounds N             uncontended rounds (default 10)
 *   --round-ms MS          one uncontended round per contender (default 1000)
 *   --workers N            workers in one process (default 8)
 *   --processes N          worker processes (default 4)
 *   --contended-rounds N   contended rounds per store, each mode (default 3)
 *   --contended-seconds S  one contended round (default 3)
 *   --work-ms MS           simulated work inside the lock (default 1)
 *   --warm-up S            unmeasured run per store in the worker processes first (default 3)
 *   --out FILE             also write the measurements as JSON (nothing is written otherwise)
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Etcd3 } from 'etcd3';
import type { Client } from 'node-zookeeper-client';
import { startRedisServer, type RedisServer } from '../src/devserver/redis-server.js';
import type { Lockable } from '../src/index.js';
import { ZooKeeperOps } from '../src/stores/zookeeper/zookeeper-client.js';
import { startCluster, type Cluster } from '../test/harness/etcd-servers.js';
import { fourLetters, startEnsemble, type Ensemble } from '../test/harness/zookeeper-servers.js';
import { ChildChannel, withTimeout } from './child.js';
import { fixed, paired, positive, ratioText, spread, uptime } from './report-format.js';
import { measureContended, median, nowMs, type AcquisitionRecord, type ContendedMeasures } from './stats.js';
import type { FromStoresChild, ToStoresChild } from './stores-child.js';
import { LEASE_MS, SESSION_TIMEOUT_MS, STORES, lockLoop, openStorePadlock, openZooKeeper, type LoopPlan, type StoreAddresses, type StoreName, type StorePadlock } from './store-padlocks.js';
import { bareRecipe } from './zookeeper-bare.js';

const { values: args } = parseArgs({
  options: {
    rounds: { type: 'string', default: '10' },
    'round-ms': { type: 'string', default: '1000' },
    workers: { type: 'string', default: '8' },
    processes: { type: 'string', default: '4' },
    'contended-rounds': { type: 'string', default: '3' },
    'contended-seconds': { type: 'string', default: '3' },
    'work-ms': { type: 'string', default: '1' },
    'warm-up': { type: 'string', default: '3' },
    out: { type: 'string' },
  },
});

const rounds = Math.round(positive('rounds', args.rounds));
const roundMs = positive('round-ms', args['round-ms']);
const workers = Math.round(positive('workers', args.workers));
const processCount = Math.round(positive('processes', args.processes));
const contendedRounds = Math.round(positive('contended-rounds', args['contended-rounds']));
const contendedSeconds = positive('contended-seconds', args['contended-seconds']);
const workMs = positive('work-ms', args['work-ms']);
const warmUpSeconds = positive('warm-up', args['warm-up']);

/** A wait longer than this fails the run: no store should take it on loopback. */
const WAIT_LIMIT_MS = 30_000;
const STORE_LABEL: Record<StoreName, string> = { redis: 'Redis (1 server)', zookeeper: 'ZooKeeper (3 servers)', etcd: 'etcd (3 members)' };

// ── Servers, clients, and stopping them whatever happens ────────────────────────────────────────

let redis: RedisServer | undefined;
let ensemble: Ensemble | undefined;
let cluster: Cluster | undefined;
const closers: (() => Promise<void>)[] = [];
let stopping: Promise<void> | undefined;

/** Closes every client and worker process (latest first), then stops every server. Safe to call twice. */
function stopEverything(): Promise<void> {
  stopping ??= (async () => {
    for (const close of closers.reverse()) await withTimeout(close(), 10_000, 'closing a client').catch(() => undefined);
    await Promise.all([redis?.stop(), ensemble?.stop(), cluster?.stop()]);
  })();
  return stopping;
}

// The etcd harness's own SIGINT handler would exit before the other servers' data is removed.
process.removeAllListeners('SIGINT');
let interrupted = false;
process.once('SIGINT', () => {
  interrupted = true;
  console.error('\ninterrupted: stopping the servers');
  void withTimeout(stopEverything(), 30_000, 'stopping')
    .catch(() => undefined)
    .finally(() => process.exit(130));
});

function version(command: string, argv: readonly string[], pattern: RegExp): string {
  try {
    return pattern.exec(execFileSync(command, argv, { encoding: 'utf8' }))?.[1] ?? '?';
  } catch {
    return '?';
  }
}

// ── 1. Uncontended ──────────────────────────────────────────────────────────────────────────────

/** ms per acquire+release over one round of `roundMs`. */
async function uncontendedRound(pair: () => Promise<void>): Promise<number> {
  const start = nowMs();
  const end = start + roundMs;
  let pairs = 0;
  while (nowMs() < end) {
    await pair();
    pairs++;
  }
  return (nowMs() - start) / pairs;
}

function padlockPair(lock: Lockable): () => Promise<void> {
  return async () => {
    const lease = await lock.acquire({ waitMs: WAIT_LIMIT_MS });
    await lease.release();
  };
}

async function uncontended(padlocks: Record<StoreName, StorePadlock>, zooKeeper: Client, etcd: Etcd3): Promise<Record<string, number[]>> {
  const ops = new ZooKeeperOps(zooKeeper);
  await ops.ensurePath('/bench-bare/uncontended');
  const contenders: Record<string, () => Promise<void>> = {
    'padlock · Redis (1 server)': padlockPair(padlocks.redis.padlock.mutex('uncontended')),
    'padlock · ZooKeeper (3 servers)': padlockPair(padlocks.zookeeper.padlock.mutex('uncontended')),
    'bare recipe · ZooKeeper (create, list, delete)': bareRecipe(ops, '/bench-bare/uncontended'),
    'padlock · etcd (3 members)': padlockPair(padlocks.etcd.padlock.mutex('uncontended')),
    "etcd3's Lock · etcd (3 members)": async () => {
      const theirs = etcd.lock('etcd3-uncontended');
      await theirs.acquire();
      await theirs.release();
    },
  };
  const times: Record<string, number[]> = Object.fromEntries(Object.keys(contenders).map((name) => [name, []]));
  for (const pair of Object.values(contenders)) await uncontendedRound(pair); // warm-up: JIT, connections, etcd lease
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? Object.entries(contenders) : Object.entries(contenders).reverse();
    for (const [name, pair] of order) times[name]?.push(await uncontendedRound(pair));
  }
  return times;
}

function printUncontended(times: Record<string, number[]>): void {
  const [redisMs, zkMs, bareMs, etcdMs, etcd3Ms] = Object.values(times) as [number[], number[], number[], number[], number[]];
  console.log(`\n### Uncontended: one client each, ${rounds} paired rounds × ${roundMs} ms\n`);
  console.log('| contender | ms per acquire+release (median of rounds) | spread (min–max) | pairs/s (median) |');
  console.log('| --- | --- | --- | --- |');
  for (const [name, list] of Object.entries(times)) console.log(`| ${name} | ${fixed(median(list))} | ${spread(list)} | ${fixed(1000 / median(list), 0)} |`);
  console.log('\nPaired per round (ms per pair ÷ ms per pair: above 1 is slower), median (min–max):\n');
  console.log(`- padlock ZooKeeper ÷ padlock Redis: ${ratioText(paired(zkMs, redisMs))}`);
  console.log(`- padlock etcd ÷ padlock Redis: ${ratioText(paired(etcdMs, redisMs))}`);
  console.log(`- padlock ZooKeeper ÷ bare recipe: ${ratioText(paired(zkMs, bareMs))}`);
  console.log(`- padlock etcd ÷ etcd3's Lock: ${ratioText(paired(etcdMs, etcd3Ms))}`);
}

// ── 2. and 3. Contended ─────────────────────────────────────────────────────────────────────────

type ContendedRuns = Record<StoreName, ContendedMeasures[]>;

const emptyRuns = (): ContendedRuns => ({ redis: [], zookeeper: [], etcd: [] });
let runNumber = 0;

function planFrom(delayMs: number, seconds: number, store: StoreName): LoopPlan {
  const startAt = nowMs() + delayMs;
  return { name: `contended-${store}-${++runNumber}`, startAt, deadline: startAt + seconds * 1000, workMs, waitMs: WAIT_LIMIT_MS };
}

function measured(records: readonly AcquisitionRecord[], count: number, plan: LoopPlan): ContendedMeasures {
  const measures = measureContended(records, count, plan.startAt, plan.deadline);
  if (measures.overlaps > 0) throw new Error(`${measures.overlaps} overlapping holds of ${plan.name}: the mutex failed to exclude`);
  return measures;
}

async function inProcess(padlocks: Record<StoreName, StorePadlock>): Promise<ContendedRuns> {
  const runs = emptyRuns();
  for (let r = 0; r < contendedRounds; r++) {
    for (const store of r % 2 === 0 ? STORES : [...STORES].reverse()) {
      const plan = planFrom(50, contendedSeconds, store);
      const loops = Array.from({ length: workers }, (_, worker) => lockLoop(padlocks[store].padlock.mutex(plan.name), worker, plan));
      const records = (await withTimeout(Promise.all(loops), contendedSeconds * 1000 + 2 * WAIT_LIMIT_MS, `${store} in one process`)).flat();
      runs[store].push(measured(records, workers, plan));
    }
  }
  return runs;
}

const CHILD_SCRIPT = fileURLToPath(new URL('./stores-child.js', import.meta.url));

async function acrossProcesses(addresses: StoreAddresses): Promise<ContendedRuns> {
  const children = Array.from({ length: processCount }, () => new ChildChannel<ToStoresChild, FromStoresChild>(CHILD_SCRIPT));
  closers.push(async () => {
    for (const child of children) child.tell({ type: 'close' });
    await Promise.all(children.map((child) => child.stop(10_000)));
  });
  await withTimeout(
    Promise.all(children.map((child, worker) => child.request({ type: 'open', addresses, worker }))),
    60_000,
    'opening the worker processes',
  );
  const run = async (store: StoreName, seconds: number): Promise<{ plan: LoopPlan; records: AcquisitionRecord[] }> => {
    const plan = planFrom(300, seconds, store);
    const replies = await withTimeout(
      Promise.all(children.map((child) => child.request({ type: 'go', store, plan }))),
      seconds * 1000 + 2 * WAIT_LIMIT_MS,
      `${store} across processes`,
    );
    return { plan, records: replies.flatMap((reply) => (reply.type === 'result' ? reply.records : [])) };
  };
  for (const store of STORES) await run(store, warmUpSeconds);
  const runs = emptyRuns();
  for (let r = 0; r < contendedRounds; r++) {
    for (const store of r % 2 === 0 ? STORES : [...STORES].reverse()) {
      const { plan, records } = await run(store, contendedSeconds);
      runs[store].push(measured(records, processCount, plan));
    }
  }
  return runs;
}

function printContended(title: string, runs: ContendedRuns): void {
  console.log(`\n### ${title}\n`);
  console.log('| padlock mutex on | acquisitions/s (median of rounds) | spread | wait p50 ms | wait p99 ms (median of rounds) | p99 spread | Jain |');
  console.log('| --- | --- | --- | --- | --- | --- | --- |');
  for (const store of STORES) {
    const list = runs[store];
    const rates = list.map((m) => m.perSecond);
    const p99s = list.map((m) => m.waitP99);
    console.log(
      `| ${STORE_LABEL[store]} | ${fixed(median(rates), 0)} | ${spread(rates, 0)} | ${fixed(median(list.map((m) => m.waitP50)))} | ${fixed(median(p99s))} | ${spread(p99s)} | ${fixed(median(list.map((m) => m.jain)), 3)} |`,
    );
  }
  console.log("| etcd3's Lock (etcd) | — try-once: `acquire()` fails when the lock is taken; no wait to measure | | | | | |");
  const rates = (store: StoreName): number[] => runs[store].map((m) => m.perSecond);
  console.log('\nPaired per round (acquisitions/s ÷ acquisitions/s: below 1 is fewer), median (min–max):\n');
  console.log(`- ZooKeeper ÷ Redis: ${ratioText(paired(rates('zookeeper'), rates('redis')))}`);
  console.log(`- etcd ÷ Redis: ${ratioText(paired(rates('etcd'), rates('redis')))}`);
}

// ── The run ─────────────────────────────────────────────────────────────────────────────────────

try {
  const startedLoad = uptime();
  console.log('## padlock on its three stores\n');
  console.log(`- started: ${new Date().toISOString()}; \`uptime\`: ${startedLoad}`);
  console.log(`- machine: ${cpus().length} × ${cpus()[0]?.model ?? '?'}; Node ${process.version}`);
  [redis, ensemble, cluster] = await Promise.all([startRedisServer(), startEnsemble(3), startCluster(3)]);
  const zkPort = ensemble.servers[0]?.port ?? 0;
  console.log(
    `- servers on loopback: redis-server ${version('redis-server', ['--version'], /v=(\S+)/)} (no persistence); ZooKeeper ${/version: ([^-,\s]+)/.exec((await fourLetters(zkPort, 'srvr')) ?? '')?.[1] ?? '?'} × 3 (forceSync); etcd ${version('etcd', ['--version'], /etcd Version: (\S+)/)} × 3`,
  );
  console.log(`- leaseMs ${LEASE_MS} on every store; ZooKeeper session time-out ${SESSION_TIMEOUT_MS} ms; ${workMs} ms of simulated work (a timer) inside each contended hold`);
  const addresses: StoreAddresses = { redis: redis.url, zookeeper: ensemble.connectString, etcd: cluster.hosts };

  const padlocks = {} as Record<StoreName, StorePadlock>;
  for (const store of STORES) {
    padlocks[store] = await openStorePadlock(store, addresses);
    closers.push(() => padlocks[store].close());
  }
  const bareClient = await openZooKeeper(addresses.zookeeper);
  closers.push(() => Promise.resolve(bareClient.close()));
  const etcd3 = new Etcd3({ hosts: cluster.hosts, dialTimeout: 2_000 });
  closers.push(() => Promise.resolve(etcd3.close()));

  const times = await uncontended(padlocks, bareClient, etcd3);
  printUncontended(times);
  const oneProcess = await inProcess(padlocks);
  printContended(`Contended in one process: ${workers} workers, one Padlock, one lock name, ${contendedRounds} rounds × ${contendedSeconds} s per store`, oneProcess);
  const processes = await acrossProcesses(addresses);
  printContended(
    `Contended across processes: ${processCount} processes × 1 worker, each its own clients, ${contendedRounds} rounds × ${contendedSeconds} s per store after ${warmUpSeconds} s unmeasured`,
    processes,
  );
  console.log(`\n- finished: ${new Date().toISOString()}; \`uptime\`: ${uptime()}`);
  if (args.out !== undefined) {
    writeFileSync(args.out, `${JSON.stringify({ startedLoad, uncontendedMsPerPair: times, oneProcess, processes }, null, 2)}\n`);
  }
} catch (error) {
  // Interrupted, the runs under way fail as their clients close: that is no result to report.
  if (!interrupted) throw error;
} finally {
  await stopEverything();
}
