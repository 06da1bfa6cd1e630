/**
 * `npm run bench:postgres`: padlock's mutex on PostgreSQL beside the peer `advisory-lock` on the same
 * server, and beside padlock's mutex on Redis, on servers this bench starts on loopback (a private
 * PostgreSQL, as the tests start it, and one redis-server) and stops at the end (and on SIGINT):
 *
 * 1. uncontended acquire+release, one client each, in paired rounds (the order alternating forward
 *    and backward);
 * 2. across processes: P worker processes on one lock name, each with its own clients
 *    (bench/postgres-child.ts), W ms of simulated work inside each hold, after an unmeasured
 *    warm-up run per contender; rounds interleave the contenders.
 *
 *   --rounds N             uncontended rounds (default 10)
 *   --round-ms MS          one uncontended round per contender (default 1000)
 *   --processes N          worker processes (default 8)
 *   --contended-rounds N   contended rounds per contender (default 3)
 *   --contended-seconds S  one contended round (default 3)
 *   --work-ms MS           simulated work inside the lock (default 1)
 *   --warm-up S            unmeasured run per contender in the worker processes first (default 2)
 *   --out FILE             also write the measurements as JSON (nothing is written otherwise)
 */
import { writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startRedisServer, type RedisServer } from '../src/devserver/redis-server.js';
import { startPostgresServer, type PostgresServer } from '../test/harness/postgres-server.js';
import { ChildChannel, withTimeout } from './child.js';
import { fixed, paired, positive, ratioText, spread, uptime } from './report-format.js';
import { CONTENDER_LABEL, CONTENDERS, LEASE_MS, openContender, type BenchAddresses, type ContenderName } from './postgres-contenders.js';
import type { FromPostgresChild, ToPostgresChild } from './postgres-child.js';
import { measureContended, median, nowMs, type AcquisitionRecord, type ContendedMeasures } from './stats.js';
import type { LoopLock, LoopPlan } from './store-padlocks.js';

const { values: args } = parseArgs({
  options: {
    rounds: { type: 'string', default: '10' },
    'round-ms': { type: 'string', default: '1000' },
    processes: { type: 'string', default: '8' },
    'contended-rounds': { type: 'string', default: '3' },
    'contended-seconds': { type: 'string', default: '3' },
    'work-ms': { type: 'string', default: '1' },
    'warm-up': { type: 'string', default: '2' },
    out: { type: 'string' },
  },
});

const rounds = Math.round(positive('rounds', args.rounds));
const roundMs = positive('round-ms', args['round-ms']);
const processCount = Math.round(positive('processes', args.processes));
const contendedRounds = Math.round(positive('contended-rounds', args['contended-rounds']));
const contendedSeconds = positive('contended-seconds', args['contended-seconds']);
const workMs = positive('work-ms', args['work-ms']);
const warmUpSeconds = positive('warm-up', args['warm-up']);

/** A wait longer than this fails the run: no contender should take it on loopback. */
const WAIT_LIMIT_MS = 30_000;

// ── Servers, clients, and stopping them whatever happens ────────────────────────────────────────

let redis: RedisServer | undefined;
let postgres: PostgresServer | undefined;
const closers: (() => Promise<void>)[] = [];
let stopping: Promise<void> | undefined;

/** Closes every client and worker process (latest first), then stops both servers. Safe to call twice. */
function stopEverything(): Promise<void> {
  stopping ??= (async () => {
    for (const close of closers.reverse()) await withTimeout(close(), 10_000, 'closing a client').catch(() => undefined);
    await Promise.all([redis?.stop(), postgres?.stop()]);
  })();
  return stopping;
}

let interrupted = false;
process.once('SIGINT', () => {
  interrupted = true;
  console.error('\ninterrupted: stopping the servers');
  void withTimeout(stopEverything(), 30_000, 'stopping')
    .catch(() => undefined)
    .finally(() => process.exit(130));
});

// ── 1. Uncontended ──────────────────────────────────────────────────────────────────────────────

/** ms per acquire+release over one round of `roundMs`. */
async function uncontendedRound(lock: LoopLock): Promise<number> {
  const start = nowMs();
  const end = start + roundMs;
  let pairs = 0;
  while (nowMs() < end) {
    const lease = await lock.acquire({ waitMs: WAIT_LIMIT_MS });
    await lease.release();
    pairs++;
  }
  return (nowMs() - start) / pairs;
}

async function uncontended(addresses: BenchAddresses): Promise<Record<ContenderName, number[]>> {
  const locks = CONTENDERS.map((contender) => {
    const opened = openContender(contender, addresses);
    closers.push(() => opened.close());
    return [contender, opened.lock('uncontended')] as const;
  });
  const times = Object.fromEntries(CONTENDERS.map((name) => [name, [] as number[]])) as Record<ContenderName, number[]>;
  for (const [, lock] of locks) await uncontendedRound(lock); // warm-up: JIT, connections, padlock's schema
  for (let r = 0; r < rounds; r++) {
    for (const [name, lock] of r % 2 === 0 ? locks : [...locks].reverse()) times[name].push(await uncontendedRound(lock));
  }
  return times;
}

function printUncontended(times: Record<ContenderName, number[]>): void {
  console.log(`\n### Uncontended: one client each, ${rounds} paired rounds × ${roundMs} ms\n`);
  console.log('| contender | ms per acquire+release (median of rounds) | spread (min–max) | pairs/s (median) |');
  console.log('| --- | --- | --- | --- |');
  for (const name of CONTENDERS) console.log(`| ${CONTENDER_LABEL[name]} | ${fixed(median(times[name]))} | ${spread(times[name])} | ${fixed(1000 / median(times[name]), 0)} |`);
  console.log('\nPaired per round (pairs/s ÷ pairs/s: above 1 is faster), median (min–max):\n');
  console.log(`- padlock PostgreSQL ÷ advisory-lock: ${ratioText(paired(times['advisory-lock'], times['padlock-postgres']))}`);
  console.log(`- padlock PostgreSQL ÷ padlock Redis: ${ratioText(paired(times['padlock-redis'], times['padlock-postgres']))}`);
}

// ── 2. Across processes ─────────────────────────────────────────────────────────────────────────

type ContendedRuns = Record<ContenderName, ContendedMeasures[]>;
let runNumber = 0;

const CHILD_SCRIPT = fileURLToPath(new URL('./postgres-child.js', import.meta.url));

async function acrossProcesses(addresses: BenchAddresses): Promise<ContendedRuns> {
  const children = Array.from({ length: processCount }, () => new ChildChannel<ToPostgresChild, FromPostgresChild>(CHILD_SCRIPT));
  closers.push(async () => {
    for (const child of children) child.tell({ type: 'close' });
    await Promise.all(children.map((child) => child.stop(10_000)));
  });
  await withTimeout(
    Promise.all(children.map((child, worker) => child.request({ type: 'open', addresses, worker }))),
    60_000,
    'opening the worker processes',
  );
  const run = async (contender: ContenderName, seconds: number): Promise<{ plan: LoopPlan; records: AcquisitionRecord[] }> => {
    const startAt = nowMs() + 300;
    const plan: LoopPlan = { name: `contended-${contender}-${++runNumber}`, startAt, deadline: startAt + seconds * 1000, workMs, waitMs: WAIT_LIMIT_MS };
    const replies = await withTimeout(
      Promise.all(children.map((child) => child.request({ type: 'go', contender, plan }))),
      seconds * 1000 + 2 * WAIT_LIMIT_MS,
      `${contender} across processes`,
    );
    return { plan, records: replies.flatMap((reply) => (reply.type === 'result' ? reply.records : [])) };
  };
  for (const contender of CONTENDERS) await run(contender, warmUpSeconds);
  const runs = Object.fromEntries(CONTENDERS.map((name) => [name, [] as ContendedMeasures[]])) as ContendedRuns;
  for (let r = 0; r < contendedRounds; r++) {
    for (const contender of r % 2 === 0 ? CONTENDERS : [...CONTENDERS].reverse()) {
      const { plan, records } = await run(contender, contendedSeconds);
      const measures = measureContended(records, processCount, plan.startAt, plan.deadline);
      if (measures.overlaps > 0) throw new Error(`${measures.overlaps} overlapping holds of ${plan.name}: ${contender} failed to exclude`);
      runs[contender].push(measures);
    }
  }
  return runs;
}

function printContended(runs: ContendedRuns): void {
  console.log(`\n### Contended across processes: ${processCount} processes × 1 worker on one lock, ${workMs} ms inside, ${contendedRounds} rounds × ${contendedSeconds} s each after ${warmUpSeconds} s unmeasured\n`);
  console.log('| contender | acquisitions/s (median of rounds) | spread | wait p50 ms | wait p99 ms (median of rounds) | p99 spread | Jain |');
  console.log('| --- | --- | --- | --- | --- | --- | --- |');
  for (const name of CONTENDERS) {
    const list = runs[name];
    const rates = list.map((m) => m.perSecond);
    const p99s = list.map((m) => m.waitP99);
    console.log(`| ${CONTENDER_LABEL[name]} | ${fixed(median(rates), 0)} | ${spread(rates, 0)} | ${fixed(median(list.map((m) => m.waitP50)))} | ${fixed(median(p99s))} | ${spread(p99s)} | ${fixed(median(list.map((m) => m.jain)), 3)} |`);
  }
  const rates = (name: ContenderName): number[] => runs[name].map((m) => m.perSecond);
  const p99s = (name: ContenderName): number[] => runs[name].map((m) => m.waitP99);
  console.log('\nPaired per round, median (min–max):\n');
  console.log(`- acquisitions/s, padlock PostgreSQL ÷ advisory-lock (above 1 is more): ${ratioText(paired(rates('padlock-postgres'), rates('advisory-lock')))}`);
  console.log(`- wait p99, padlock PostgreSQL ÷ advisory-lock (below 1 is shorter): ${ratioText(paired(p99s('padlock-postgres'), p99s('advisory-lock')))}`);
  console.log(`- acquisitions/s, padlock PostgreSQL ÷ padlock Redis: ${ratioText(paired(rates('padlock-postgres'), rates('padlock-redis')))}`);
}

// ── The run ─────────────────────────────────────────────────────────────────────────────────────

try {
  const startedLoad = uptime();
  console.log('## padlock on PostgreSQL, beside advisory-lock and padlock on Redis\n');
  console.log(`- started: ${new Date().toISOString()}; \`uptime\`: ${startedLoad}`);
  console.log(`- machine: ${cpus().length} × ${cpus()[0]?.model ?? '?'}; Node ${process.version}`);
  [redis, postgres] = await Promise.all([startRedisServer(), startPostgresServer()]);
  const [shown] = await postgres.query<{ server_version: string }>('SHOW server_version');
  console.log(`- servers on loopback: PostgreSQL ${shown?.server_version ?? '?'} (initdb defaults, fsync on); redis-server (no persistence); leaseMs ${LEASE_MS} for padlock on both`);
  const addresses: BenchAddresses = { postgres: `postgres://postgres@127.0.0.1:${postgres.port}/postgres`, redis: redis.url };
  const times = await uncontended(addresses);
  printUncontended(times);
  const processes = await acrossProcesses(addresses);
  printContended(processes);
  console.log(`\n- finished: ${new Date().toISOString()}; \`uptime\`: ${uptime()}`);
  if (args.out !== undefined) writeFileSync(args.out, `${JSON.stringify({ startedLoad, uncontendedMsPerPair: times, processes }, null, 2)}\n`);
} catch (error) {
  // Interrupted, the runs under way fail as their clients close: that is no result to report.
  if (!interrupted) throw error;
} finally {
  await stopEverything();
}
