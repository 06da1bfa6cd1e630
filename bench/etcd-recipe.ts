/**
 * The etcd lock recipe (src/stores/etcd/) uncontended, beside `etcd3`'s own `Lock` (a lease granted
 * and revoked per lock), on a 3-member cluster on loopback
 * (`node build/bench/etcd-recipe.js [rounds] [round-ms]`). Rounds alternate the two (forward, then
 * backward) so a noisy moment hits both; medians of per-round ms per acquire+release, and the median
 * of their paired ratio.
 */
import { Etcd3 } from 'etcd3';
import { Interrupt } from '../src/interrupt.js';
import { RedisUnavailableError } from '../src/errors.js';
import { newOwnerToken } from '../src/tokens.js';
import { WaitScope } from '../src/wait-scope.js';
import { EtcdOps } from '../src/stores/etcd/etcd-client.js';
import { EtcdLock, lockPrefix } from '../src/stores/etcd/etcd-lock.js';
import { LeaseClock } from '../src/stores/etcd/lease-clock.js';
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
const ops = new EtcdOps(client);
const lease = await LeaseClock.grant(ops, 10_000);
const never = new Interrupt();
const lock = new EtcdLock(ops, lease, lockPrefix('padlock', 'mutex', 'bench'), 'bench', 1);

const PADLOCK = 'padlock recipe (one lease per client)';
const ETCD3 = "etcd3's Lock (a lease per lock)";
const contenders: Record<string, () => Promise<void>> = {
  [PADLOCK]: async () => {
    const owner = newOwnerToken();
    const scope = new WaitScope('bench', Infinity, undefined, never, 10_000, 0, (name, ms) => new RedisUnavailableError(name, new Error(`${ms} ms`)));
    await lock.take({ role: 'lock', owner, permits: 1 }, scope, true);
    scope.dispose();
    await lock.release(owner, 1);
  },
  [ETCD3]: async () => {
    const theirs = client.lock('etcd3-bench');
    await theirs.acquire();
    await theirs.release();
  },
};

const times: Record<string, number[]> = Object.fromEntries(Object.keys(contenders).map((name) => [name, []]));
const ratios: number[] = [];
for (const pair of Object.values(contenders)) await round(pair); // warm-up
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
console.log(`\npadlock recipe ÷ etcd3's Lock, paired per round: median ${median(ratios).toFixed(2)}× (${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)})`);
await lease.close();
client.close();
await cluster.stop();
