/**
 * What one uncontended Redlock acquire+release costs the client, on 5 private masters: padlock's
 * mutex beside `redlock` and redis-semaphore's `RedlockMutex`, and beside the floor, the smallest
 * round that keeps padlock's guarantees sent straight through ioredis (padlock's own scripts: the
 * acquire with the epoch check and a proposed fence on every master, counted only from masters whose
 * epoch is ready, a majority, the fence written back where a granting master gave less, the release
 * with its request id on every master; no padlock code). Rounds are interleaved (the order
 * alternating) and each ratio taken round by round, so that a noisy moment hits both sides alike.
 * Per pair: this process's CPU (`process.cpuUsage`, steadier than rates on a shared machine), pairs/s,
 * and the masters' whole CPU (`INFO cpu`, summed over the 5).
 *
 *   node build/bench/redlock-pair.js [--rounds N] [--round-ms MS] [--baseline path/to/other/build/src/index.js]
 *
 * `--baseline` adds a second padlock, loaded from another build of padlock (an A/B of two builds in
 * one process, on the same masters).
 */
import { randomBytes } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import * as thisBuild from '../src/index.js';
import { startRedisServer, type RedisServer } from '../src/devserver/redis-server.js';
import { lockKeys, scriptKeys } from '../src/keys.js';
import { newOwnerToken, newRequestId } from '../src/tokens.js';
import { acquireScript, raiseFenceScript, releaseScript } from '../src/stores/redis/scripts/index.js';
import { checkArgs, checkedScript, epochScript, resolveArgs } from '../src/stores/redis/topology/master-epoch.js';
import { driftMs } from '../src/clock.js';
import { LEASE_MS, acquireRelease, openContender, type Contender, type Held } from './contenders.js';
import { fixed, paired, positive, ratioText, spread, uptime } from './report-format.js';
import { table } from './report.js';
import { median } from './stats.js';

const MASTERS = 5;
const QUORUM = Math.floor(MASTERS / 2) + 1;

type PadlockModule = typeof thisBuild;

function connect(url: string): Redis {
  const client = new Redis(url, { maxRetriesPerRequest: 3 });
  client.on('error', () => undefined);
  return client;
}

async function quitAll(clients: readonly Redis[]): Promise<void> {
  await Promise.all(clients.map((c) => c.quit().catch(() => c.disconnect())));
}

/** padlock's mutex on the masters, from `build` (this one or a baseline). */
export function openPadlock(build: PadlockModule, masters: readonly string[]): Contender {
  const clients = masters.map(connect);
  const padlock = new build.Padlock({ redis: clients });
  const locks = new Map<string, ReturnType<typeof padlock.mutex>>();
  return {
    async acquire(key, maxWaitMs) {
      let lock = locks.get(key);
      if (lock === undefined) locks.set(key, (lock = padlock.mutex(key)));
      const lease = await lock.acquire({ waitMs: maxWaitMs });
      return { release: () => lease.release() };
    },
    async close() {
      await padlock.close();
      await quitAll(clients);
    },
  };
}

/**
 * The floor: padlock's scripts on every master, added up with nothing but what the guarantees need
 * (see the header). Its own prefix, so its epoch markers are its own; they are resolved once here (a
 * first use), so every round after counts them ready.
 */
export async function openFloor(masters: readonly string[]): Promise<Contender> {
  const clients = masters.map(connect);
  const checkedAcquire = checkedScript(acquireScript);
  for (const c of clients) for (const s of [checkedAcquire, releaseScript, raiseFenceScript, epochScript]) await c.script('LOAD', s.source);
  const runs = await Promise.all(clients.map(async (c) => /run_id:(\w+)/.exec(String(await c.info('server')))?.[1] ?? ''));
  const prefix = `bench-floor-${randomBytes(3).toString('hex')}`;
  const marker = `${prefix}:redlock-epoch`;
  const clientId = newOwnerToken();
  for (const c of clients) {
    const epoch = epochScript.parse(await c.evalsha(epochScript.sha, 1, marker, ...checkArgs(LEASE_MS, '')));
    if (epoch.state === 'unresolved') await c.evalsha(epochScript.sha, 1, marker, ...resolveArgs(epoch, 0, LEASE_MS));
  }
  const checks = runs.map((run) => checkArgs(LEASE_MS, run));
  let lastFence = 0;
  const acquire = async (key: string): Promise<Held | null> => {
    const keys = lockKeys(prefix, key);
    const [lock = '', queue = ''] = scriptKeys(keys);
    const owner = newOwnerToken();
    lastFence = Math.max(lastFence + 1, Math.floor((performance.timeOrigin + performance.now()) * 1000));
    const proposed = lastFence;
    const startedAt = performance.now();
    const granted = await new Promise<{ node: number; fence: number; pttl: number }[]>((resolve) => {
      const grants: { node: number; fence: number; pttl: number }[] = [];
      let answered = 0;
      clients.forEach((c, node) => {
        const [, longest = 0, ttl = 0, run = ''] = checks[node] ?? [];
        void c.evalsha(checkedAcquire.sha, 3, lock, queue, marker, owner, LEASE_MS, 'mutex', proposed, clientId, 'check', longest, ttl, run).then(
          (reply) => {
            // {{1, fence, count, pttl}, {resolved, waitMs, ...}}: a grant counts where the epoch is ready.
            const [value, epoch] = reply as [[number, number, number, number], [number, number]];
            if (value[0] === 1 && epoch[0] === 1 && epoch[1] === 0) grants.push({ node, fence: value[1], pttl: value[3] });
            if (++answered === MASTERS || grants.length === QUORUM) resolve(grants);
          },
          () => {
            if (++answered === MASTERS) resolve(grants);
          },
        );
      });
    });
    if (granted.length < QUORUM) throw new Error(`floor: no majority granted ${key}`);
    const fence = Math.max(...granted.map((g) => g.fence));
    // Where a granting master gave less than the hold's fence, it is written back before the grant counts.
    const behind = granted.filter((g) => g.fence < fence);
    if (behind.length > 0) await Promise.all(behind.map(async (g) => clients[g.node]?.evalsha(raiseFenceScript.sha, 1, lock, owner, fence.toFixed(0))));
    const pttl = Math.min(...granted.map((g) => g.pttl));
    if (pttl - (performance.now() - startedAt) - driftMs(pttl) <= 0) throw new Error('floor: the grant came too late');
    return {
      release: () =>
        new Promise<void>((resolve, reject) => {
          const request = newRequestId();
          let released = 0;
          let answered = 0;
          for (const c of clients) {
            const done = (ok: boolean): void => {
              answered++;
              if (ok && ++released === QUORUM) resolve();
              else if (answered === MASTERS && released < QUORUM) reject(new Error('floor: no majority released'));
            };
            void c.evalsha(releaseScript.sha, 2, lock, queue, owner, 1, request, keys.released, 'PUBLISH').then(
              (reply) => done((reply as number[])[0] === 1),
              () => done(false),
            );
          }
        }),
    };
  };
  return { acquire, close: () => quitAll(clients) };
}

/** The masters' whole CPU so far (µs, `INFO cpu`, summed). */
async function mastersCpu(admins: readonly Redis[]): Promise<number> {
  const infos = await Promise.all(admins.map((a) => a.info('cpu')));
  return infos.reduce((sum, info) => {
    const read = (field: string): number => Number(new RegExp(`^${field}:([\\d.]+)`, 'm').exec(info)?.[1] ?? Number.NaN);
    return sum + (read('used_cpu_user') + read('used_cpu_sys')) * 1e6;
  }, 0);
}

interface Round {
  readonly rate: number;
  readonly client: number;
  readonly server: number;
}

/** Sequential pairs on one key for `ms`. */
async function round(contender: Contender, key: string, ms: number, admins: readonly Redis[]): Promise<Round> {
  const server0 = await mastersCpu(admins);
  const own = process.cpuUsage();
  const start = performance.now();
  let pairs = 0;
  while (performance.now() - start < ms) {
    await acquireRelease(contender, key);
    pairs++;
  }
  const elapsed = performance.now() - start;
  const used = process.cpuUsage(own);
  const server1 = await mastersCpu(admins);
  return { rate: pairs / (elapsed / 1000), client: (used.user + used.system) / pairs, server: (server1 - server0) / pairs };
}

export interface PairResult {
  readonly label: string;
  readonly rounds: readonly Round[];
}

/** Opens every contender on the masters and runs the interleaved rounds. */
export async function runRedlockPair(
  masters: readonly string[],
  options: { readonly rounds: number; readonly roundMs: number; readonly baseline?: PadlockModule | undefined },
): Promise<PairResult[]> {
  const servers = { single: masters[0] ?? '', masters };
  const opened: { label: string; contender: Contender; key: string; rounds: Round[] }[] = [];
  const add = (label: string, contender: Contender): void => void opened.push({ label, contender, key: `bench:pair:${randomBytes(4).toString('hex')}`, rounds: [] });
  add('padlock mutex', openPadlock(thisBuild, masters));
  if (options.baseline !== undefined) add('padlock mutex (baseline build)', openPadlock(options.baseline, masters));
  add('redlock', await openContender({ label: 'redlock', library: 'redlock', topology: 'redlock', settings: {} }, servers));
  add('redis-semaphore RedlockMutex', await openContender({ label: 'RedlockMutex', library: 'redis-semaphore', topology: 'redlock', settings: {} }, servers));
  add('floor: padlock’s scripts, a minimal round through ioredis', await openFloor(masters));
  const admins = masters.map(connect);
  try {
    // Warm: the first pairs compile the code, load the scripts and resolve the epochs.
    for (const entry of opened) await round(entry.contender, entry.key, 500, admins);
    for (let r = 0; r < options.rounds; r++) {
      for (const entry of r % 2 === 0 ? opened : [...opened].reverse()) entry.rounds.push(await round(entry.contender, entry.key, options.roundMs, admins));
    }
  } finally {
    for (const entry of opened) await entry.contender.close().catch(() => undefined);
    await quitAll(admins);
  }
  return opened.map(({ label, rounds }) => ({ label, rounds }));
}

const measure = (values: readonly number[], digits: number): string => `${fixed(median(values), digits)} [${spread(values, digits)}]`;

/** The table: each contender's medians [min–max] over rounds, and its ratios to `redlock`'s same rounds. */
export function redlockPairTable(results: readonly PairResult[]): string {
  const peer = results.find((r) => r.label === 'redlock')?.rounds ?? [];
  const rates = (rounds: readonly Round[]): number[] => rounds.map((r) => r.rate);
  const cpu = (rounds: readonly Round[]): number[] => rounds.map((r) => r.client);
  return table(
    ['per acquire+release', 'pairs/s', '× redlock (paired)', 'client CPU µs', '× redlock (paired)', "masters' whole CPU µs"],
    results.map(({ label, rounds }) => [
      label,
      measure(rates(rounds), 0),
      ratioText(paired(rates(rounds), rates(peer))),
      measure(cpu(rounds), 1),
      ratioText(paired(cpu(rounds), cpu(peer))),
      measure(
        rounds.map((r) => r.server),
        0,
      ),
    ]),
  );
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { values } = parseArgs({ options: { rounds: { type: 'string', default: '11' }, 'round-ms': { type: 'string', default: '500' }, baseline: { type: 'string' } } });
  const baseline = values.baseline === undefined ? undefined : ((await import(pathToFileURL(values.baseline).href)) as PadlockModule);
  process.stderr.write(`before: ${uptime()}\n`);
  const servers: RedisServer[] = await Promise.all(Array.from({ length: MASTERS }, () => startRedisServer({ args: ['--save', '', '--appendonly', 'no'] })));
  try {
    const results = await runRedlockPair(
      servers.map((s) => s.url),
      { rounds: positive('rounds', values.rounds), roundMs: positive('round-ms', values['round-ms']), baseline },
    );
    process.stdout.write(`${redlockPairTable(results)}\n`);
    if (baseline !== undefined) {
      const [now, before] = results;
      if (now !== undefined && before !== undefined) {
        process.stdout.write(
          `this build ÷ baseline, round by round: pairs/s ${ratioText(paired(now.rounds.map((r) => r.rate), before.rounds.map((r) => r.rate)))}, ` +
            `client CPU ${ratioText(paired(now.rounds.map((r) => r.client), before.rounds.map((r) => r.client)))}\n`,
        );
      }
    }
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
    process.stderr.write(`after: ${uptime()}\n`);
  }
}
