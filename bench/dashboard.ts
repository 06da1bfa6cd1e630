/**
 * What one dashboard refresh costs Redis, at 1 000 and 10 000 held locks (`npm run bench:dashboard`):
 * the commands the dashboard's client sent (round trips; counted client-side by ./command-meter.ts),
 * and Redis's own CPU for them (INFO commandstats usec, which also counts the commands the scripts
 * call), per refresh, median of 5 refreshes after a warm-up. One server; on a Cluster the SCAN
 * steps are per master and the rest is spread by slot, on Redlock every master does the whole work.
 */
import { Redis } from 'ioredis';
import { startRedisServer } from '../src/devserver/redis-server.js';
import { Padlock } from '../src/index.js';
import { RedisSource } from '../src/dashboard/redis-source.js';
import { installCommandMeter, readCommandMeter, resetCommandMeter, totalCount } from './command-meter.js';

installCommandMeter();

interface Stat {
  readonly calls: number;
  readonly usec: number;
}

async function commandstats(admin: Redis): Promise<Map<string, Stat>> {
  const stats = new Map<string, Stat>();
  for (const line of (await admin.info('commandstats')).split('\n')) {
    const match = /^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/.exec(line);
    if (match !== null) stats.set(match[1] as string, { calls: Number(match[2]), usec: Number(match[3]) });
  }
  return stats;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

const rows: string[] = [];
for (const n of [1_000, 10_000]) {
  const server = await startRedisServer();
  const holderClient = new Redis(server.url);
  const dashboardClient = new Redis(server.url);
  const admin = new Redis(server.url);
  const holder = new Padlock({ redis: holderClient, prefix: 'bench', recordTimings: true });
  // Long fixed leases: no renewal traffic while the refreshes are measured.
  for (let i = 0; i < n; i += 500) await Promise.all(Array.from({ length: Math.min(500, n - i) }, (_, j) => holder.mutex(`job:${i + j}`).acquire({ leaseMs: 600_000 })));
  // 24 names with recorded timings (the most a refresh reads).
  for (let i = 0; i < 24; i++) await holder.withLock(`report:${i}`, () => undefined);
  await new Promise((resolve) => setTimeout(resolve, 2_500));
  const source = new RedisSource({ redis: dashboardClient, prefix: 'bench' });
  await source.read(); // loads the scripts
  const perRefresh: { sent: number; ran: number; usec: number; ms: number; byCommand: Map<string, Stat> }[] = [];
  for (let round = 0; round < 5; round++) {
    await admin.config('RESETSTAT');
    resetCommandMeter();
    const started = performance.now();
    const reading = await source.read();
    const ms = performance.now() - started;
    const sent = totalCount(readCommandMeter());
    const stats = await commandstats(admin);
    stats.delete('config');
    stats.delete('info');
    const ran = [...stats.values()].reduce((sum, s) => sum + s.calls, 0);
    const usec = [...stats.values()].reduce((sum, s) => sum + s.usec, 0);
    if (reading.locks.length !== n) throw new Error(`read ${reading.locks.length} locks, expected ${n}`);
    perRefresh.push({ sent, ran, usec, ms, byCommand: stats });
  }
  const mid = perRefresh.find((r) => r.usec === median(perRefresh.map((p) => p.usec))) ?? perRefresh[0];
  if (mid === undefined) throw new Error('no refresh measured');
  const top = [...mid.byCommand].sort((a, b) => b[1].usec - a[1].usec).slice(0, 5).map(([name, s]) => `${name} ${s.calls}× ${(s.usec / 1000).toFixed(1)} ms`).join(', ');
  rows.push(`| ${n.toLocaleString('en')} | ${median(perRefresh.map((p) => p.sent))} | ${median(perRefresh.map((p) => p.ran))} | ${(median(perRefresh.map((p) => p.usec)) / 1000).toFixed(1)} ms | ${Math.round(median(perRefresh.map((p) => p.ms)))} ms | ${top} |`);
  await source.close();
  holder.removeAllListeners();
  await holder.close({ drainMs: 0 });
  for (const client of [holderClient, dashboardClient, admin]) client.disconnect();
  await server.stop();
}
console.log('| locks held | commands sent (round trips) | commands Redis ran | Redis CPU (commandstats usec) | refresh time (client) | biggest costs |');
console.log('| --- | --- | --- | --- | --- | --- |');
for (const row of rows) console.log(row);
