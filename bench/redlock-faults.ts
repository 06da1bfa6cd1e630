/**
 * Redlock under a lost minority, and what the restart rule's check costs, against another build of
 * padlock (issue 22's before/after), on 5 private masters:
 *
 *   node build/bench/redlock-faults.js [--base <dir of another checkout, built>] [--rounds N] [--round-ms MS]
 *
 * - uncontended: acquire+release pairs on a fresh name each, in interleaved rounds of `--round-ms`
 *   (this build, then the base, then the peers' Redlock modes — `redlock` and redis-semaphore's
 *   `RedlockMutex` at their defaults, through the bench's adapters — then padlock's mutex on a sixth
 *   server alone, then this build again…), medians of the per-round mean µs per pair, and each
 *   Redlock row's median of its per-round ratios to padlock on one server (paired);
 * - 2 of 5 frozen (SIGSTOP): 20 acquire+release pairs per build, each call's ms (median, max).
 * Timings are this machine's; run it on a quiet one.
 */
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { startRedisServer, type RedisServer } from '../src/devserver/redis-server.js';
import * as current from '../src/index.js';
import { acquireRelease, openContender, type Contender, type ContenderSpec } from './contenders.js';
import { median, nowMs } from './stats.js';

type PadlockModule = typeof current;

interface Build {
  readonly label: string;
  readonly module: PadlockModule;
}

async function openPadlock(build: Build, masters: readonly RedisServer[]): Promise<{ padlock: current.Padlock; clients: Redis[] }> {
  const clients = masters.map((m) => new Redis({ host: m.host, port: m.port }));
  for (const c of clients) c.on('error', () => undefined);
  await Promise.all(clients.map((c) => c.ping()));
  return { padlock: new build.module.Padlock({ redis: clients }), clients };
}

/** Mean µs per acquire+release pair over one round of `ms`. */
async function uncontendedRound(padlock: current.Padlock, ms: number, prefix: string): Promise<number> {
  return timedPairs(ms, async (pairs) => {
    const lease = await padlock.mutex(`${prefix}:${pairs}`).acquire();
    await lease.release();
  });
}

/** Mean µs per call of `pair` (one acquire+release) over one round of `ms`. */
async function timedPairs(ms: number, pair: (n: number) => Promise<void>): Promise<number> {
  let pairs = 0;
  const start = nowMs();
  while (nowMs() - start < ms) await pair(pairs++);
  return ((nowMs() - start) * 1000) / pairs;
}

/** The same round for a peer, through the bench's adapter. */
async function peerRound(contender: Contender, ms: number, prefix: string): Promise<number> {
  return timedPairs(ms, (n) => acquireRelease(contender, `${prefix}:${n}`));
}

/** The best peers' Redlock modes, at their defaults, and padlock's mutex on one server (the 1.3× target's base). */
const OTHERS: readonly ContenderSpec[] = [
  { label: 'redlock on 5 masters', library: 'redlock', settings: {}, topology: 'redlock' },
  { label: 'redis-semaphore RedlockMutex on 5 masters', library: 'redis-semaphore', settings: {}, topology: 'redlock' },
  { label: 'padlock mutex on one server (this build)', library: 'padlock', kind: 'mutex' },
];

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { base: { type: 'string' }, rounds: { type: 'string', default: '10' }, 'round-ms': { type: 'string', default: '200' } } });
  const rounds = Number(values.rounds);
  const roundMs = Number(values['round-ms']);
  const builds: Build[] = [{ label: 'this build', module: current }];
  if (values.base !== undefined) {
    builds.push({ label: `base (${values.base})`, module: (await import(pathToFileURL(join(values.base, 'build/src/index.js')).href)) as PadlockModule });
  }
  const masters = await Promise.all(Array.from({ length: 5 }, () => startRedisServer()));
  const single = await startRedisServer();
  const url = (m: RedisServer): string => `redis://${m.host}:${m.port}`;
  try {
    const opened = await Promise.all(builds.map((b) => openPadlock(b, masters)));
    const others = await Promise.all(OTHERS.map((spec) => openContender(spec, { single: url(single), masters: masters.map(url) })));
    // Warm up every build and peer (script caches, the JIT).
    for (const [i, { padlock }] of opened.entries()) await uncontendedRound(padlock, roundMs, `warm:${i}`);
    for (const [j, other] of others.entries()) await peerRound(other, roundMs, `warm:p${j}`);
    const perRound: number[][] = builds.map(() => []);
    const otherRounds: number[][] = others.map(() => []);
    for (let r = 0; r < rounds; r++) {
      for (const [i, { padlock }] of opened.entries()) perRound[i]!.push(await uncontendedRound(padlock, roundMs, `u:${i}:${r}`));
      for (const [j, other] of others.entries()) otherRounds[j]!.push(await peerRound(other, roundMs, `u:p${j}:${r}`));
    }
    const base = otherRounds[others.length - 1]!;
    const paired = (xs: readonly number[]): string => `${median(xs.map((x, r) => x / base[r]!)).toFixed(2)}×`;
    console.log('uncontended acquire+release (median of round means, µs per pair; × padlock on one server, paired by round):');
    for (const [i, b] of builds.entries()) console.log(`  ${`padlock ${b.label} on 5 masters`.padEnd(48)} ${median(perRound[i]!).toFixed(0).padStart(6)}   ${paired(perRound[i]!)}`);
    for (const [j, spec] of OTHERS.entries()) console.log(`  ${spec.label.padEnd(48)} ${median(otherRounds[j]!).toFixed(0).padStart(6)}   ${paired(otherRounds[j]!)}`);
    await Promise.all(others.map((o) => o.close()));

    console.log('2 of 5 masters frozen (SIGSTOP), 20 pairs each (ms: acquire median/max, release median/max):');
    for (const [i, b] of builds.entries()) {
      const { padlock } = opened[i]!;
      for (const m of masters.slice(3)) m.pause();
      const acquires: number[] = [];
      const releases: number[] = [];
      try {
        for (let k = 0; k < 20; k++) {
          let t = nowMs();
          const lease = await padlock.mutex(`f:${i}:${k}`).acquire();
          acquires.push(nowMs() - t);
          t = nowMs();
          await lease.release();
          releases.push(nowMs() - t);
        }
      } finally {
        for (const m of masters.slice(3)) m.resume();
      }
      const fmt = (xs: number[]): string => `${median(xs).toFixed(1)} / ${Math.max(...xs).toFixed(1)}`;
      console.log(`  ${b.label.padEnd(40)} acquire ${fmt(acquires)}   release ${fmt(releases)}`);
    }
    for (const { padlock, clients } of opened) {
      await padlock.close();
      for (const c of clients) c.disconnect();
    }
  } finally {
    await Promise.all([...masters, single].map((m) => m.stop()));
  }
}

await main();
