/**
 * padlock's etcd mutex through `Padlock` (`new Padlock({ etcd })`) uncontended, beside `etcd3`'s own
 * `Lock` (a lease granted and revoked per lock), on a 3-member cluster on loopback
 * (`node build/bench/etcd-store.js [rounds] [round-ms]`). Rounds alternate the two (forward, then
 * backward) so a noisy moment hits both; medians of per-round ms per acquire+release, and the median
 * of their paired ratio.
 */
import { Etcd3 } from 'etcd3';
import { Padlock } from '../src/index.js';
import { startCluster } from '../test/harness/etcd-servers.js';
import { median } from './stats.js';

const rounds = Number(process.argv[2] ?? 12);
const roundMs = Number(process.argv[3] ?? 1_500);

/** ms per acquire+release over one round of `roundMs`. */
async function round(pair: () => Promise<void>): Promise<number> {
  const end = performance.now() + roundMs;
  let pairs = 0;
  const start = performance.now();
  while (performance.now() < end) {
    await pair();
    pairs++;
  }
  return (performance.now() - start) / pairs;
}

const cluster = await startCluster(3);
const client = new Etcd3({ hosts: cluster.hosts });
const padlock = new Padlock({ etcd: client, leaseMs: 10_000 });
const mutex = padlock.mutex('bench');

const PADLOCK = "padlock's etcd mutex (Padlock, one lease per Padlock)";
const ETCD3 = "etcd3's Lock (a lease per lock)";
const contenders: Record<string, () => Promise<void>> = {
  [PADLOCK]: async () => {
    const lease = await mutex.acquire();
    await lease.release();
  },
  [ETCD3]: async () => {
    const theirs = client.lock('etcd3-bench');
    await theirs.acquire();
    await theirs.release();
  },
};

const times: Record<string, number[]> = Object.fromEntries(Object.keys(contenders).map((name) => [name, []]));
const ratios: number[] = [];
for (const pair of Object.values(contenders)) await round(pair); // warm-up (the Padlock's lease is granted here)
for (let r = 0; r < rounds; r++) {
  const order = r % 2 === 0 ? Object.entries(contenders) : Object.entries(contenders).reverse();
  const inRound: Record<string, number> = {};
  for (const [name, pair] of order) inRound[name] = await round(pair);
  for (const [name, ms] of Object.entries(inRound)) times[name]?.push(ms);
  ratios.push((inRound[PADLOCK] ?? 0) / (inRound[ETCD3] ?? 1));
}
console.log('| etcd 3.4, 3 members, uncontended | ms per acquire+release (median of rounds) | spread (min–max) |');
console.log('| --- | --- | --- |');
for (const [name, list] of Object.entries(times)) {
  console.log(`| ${name} | ${median(list).toFixed(2)} | ${Math.min(...list).toFixed(2)}–${Math.max(...list).toFixed(2)} |`);
}
console.log(`\npadlock ÷ etcd3's Lock, paired per round: median ${median(ratios).toFixed(2)}× (${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)})`);
await padlock.close();
client.close();
await cluster.stop();
