/**
 * Redlock under a lost minority, and what the restart rule's check costs, against another build of
 * padlock (issue 22's before/after), on 5 private masters:
 *
 *   node build/bench/redlock-faults.js [--base <dir of another checkout, built>] [--rounds N] [--round-ms MS]
 *
 * - uncontended: acquire+release pairs on a fresh name each, in interleaved rounds of `--round-ms`
 *   (this build, then the base, then this build…), medians of the per-round mean µs per pair;
 * - 2 of 5 frozen (SIGSTOP): 20 acquire+release pairs per build, each call's ms (median, max).
 * Timings are this machine's; run it on a quiet one.
 */
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { startRedisServer, type RedisServer } from '../src/devserver/redis-server.js';
import * as current from '../src/index.js';
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
  let pairs = 0;
  const start = nowMs();
  while (nowMs() - start < ms) {
    const lease = await padlock.mutex(`${prefix}:${pairs}`).acquire();
    await lease.release();
    pairs++;
  }
  return ((nowMs() - start) * 1000) / pairs;
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { base: { type: 'string' }, rounds: { type: 'string', default: '10' }, 'round-ms': { type: 'string', default: '200' } } });
  const rounds = Number(values.rounds);
  const roundMs = Number(values['round-ms']);
  const builds: Build[] = [{ label: 'this build', module: current }];
  if (values.base !== undefined) {
    builds.push({ label: `base (${values.base})`, module: (await import(pathToFileURL(join(values.base, 'build/src/index.js')).href)) as PadlockModule });
  }
  const masters = await Promise.all(Array.from({ length: 5 }, () => startRedisServer()));
  try {
    const opened = await Promise.all(builds.map((b) => openPadlock(b, masters)));
    // Warm up every build (script caches, the JIT).
    for (const [i, { padlock }] of opened.entries()) await uncontendedRound(padlock, roundMs, `warm:${i}`);
    const perRound: number[][] = builds.map(() => []);
    for (let r = 0; r < rounds; r++) {
      for (const [i, { padlock }] of opened.entries()) perRound[i]!.push(await uncontendedRound(padlock, roundMs, `u:${i}:${r}`));
    }
    console.log('uncontended acquire+release on 5 masters (median of round means, µs per pair):');
    for (const [i, b] of builds.entries()) console.log(`  ${b.label.padEnd(40)} ${median(perRound[i]!).toFixed(0)}`);

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
    await Promise.all(masters.map((m) => m.stop()));
  }
}

await main();
