/**
 * padlock's ZooKeeper mutex through `Padlock` (`new Padlock({ zookeeper })`), and its recipe alone
 * (src/stores/zookeeper/), uncontended, beside the bare recipe the issue measured (create an
 * ephemeral sequential child, list the children, delete it), on a 3-server
 * ensemble on loopback (`node build/bench/zookeeper-recipe.js [rounds] [round-ms]`). Rounds alternate
 * the two (forward, then backward) so a noisy moment hits both; medians of per-round ms per
 * acquire+release, and the median of their paired ratio.
 */
import zookeeper from 'node-zookeeper-client';
import type { Client } from 'node-zookeeper-client';
import { Interrupt } from '../src/interrupt.js';
import { RedisUnavailableError } from '../src/errors.js';
import { newOwnerToken } from '../src/tokens.js';
import { WaitScope } from '../src/wait-scope.js';
import { ZooKeeperOps } from '../src/stores/zookeeper/zookeeper-client.js';
import { lockPath, ZooKeeperLock } from '../src/stores/zookeeper/zookeeper-lock.js';
import { startEnsemble } from '../test/harness/zookeeper-servers.js';
import { Padlock } from '../src/index.js';
import { median } from './stats.js';
import { bareRecipe } from './zookeeper-bare.js';

const rounds = Number(process.argv[2] ?? 12);
const roundMs = Number(process.argv[3] ?? 1_500);

function connected(connectString: string): Promise<Client> {
  const client = zookeeper.createClient(connectString, { sessionTimeout: 10_000 });
  const ready = new Promise<Client>((resolve) => client.once('connected', () => resolve(client)));
  client.connect();
  return ready;
}

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

const ensemble = await startEnsemble(3);
const client = await connected(ensemble.connectString);
const ops = new ZooKeeperOps(client);
const never = new Interrupt();

const padlockRecipe = async (): Promise<void> => {
  const lock = new ZooKeeperLock(ops, lockPath('/padlock', 'mutex', 'bench'), 'bench', 1);
  const owner = newOwnerToken();
  const scope = new WaitScope('bench', Infinity, undefined, never, 10_000, 0, (name, ms) => new RedisUnavailableError(name, new Error(`${ms} ms`)));
  await lock.take({ role: 'lock', owner, permits: 1 }, scope, true);
  scope.dispose();
  await lock.release(owner, 1);
};

await ops.ensurePath('/bare/bench');
const bare = bareRecipe(ops, '/bare/bench');

const padlock = new Padlock({ zookeeper: client });
const mutex = padlock.mutex('bench-padlock');
const padlockMutex = async (): Promise<void> => {
  const lease = await mutex.acquire();
  await lease.release();
};

const BARE = 'bare recipe (create, list, delete)';
const contenders = { 'padlock mutex (Padlock)': padlockMutex, 'padlock recipe': padlockRecipe, [BARE]: bare };
const times: Record<string, number[]> = Object.fromEntries(Object.keys(contenders).map((name) => [name, []]));
const ratios: number[] = [];
const padlockRatios: number[] = [];
for (const pair of Object.values(contenders)) await round(pair); // warm-up
for (let r = 0; r < rounds; r++) {
  const order = r % 2 === 0 ? Object.entries(contenders) : Object.entries(contenders).reverse();
  const inRound: Record<string, number> = {};
  for (const [name, pair] of order) inRound[name] = await round(pair);
  for (const [name, ms] of Object.entries(inRound)) times[name]?.push(ms);
  ratios.push((inRound['padlock recipe'] ?? 0) / (inRound[BARE] ?? 1));
  padlockRatios.push((inRound['padlock mutex (Padlock)'] ?? 0) / (inRound[BARE] ?? 1));
}
console.log('| ZooKeeper, 3 servers, uncontended | ms per acquire+release (median of rounds) | spread (min–max) |');
console.log('| --- | --- | --- |');
for (const [name, list] of Object.entries(times)) {
  console.log(`| ${name} | ${median(list).toFixed(2)} | ${Math.min(...list).toFixed(2)}–${Math.max(...list).toFixed(2)} |`);
}
console.log(`\npadlock recipe ÷ bare recipe, paired per round: median ${median(ratios).toFixed(2)}× (${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)})`);
console.log(`padlock mutex (Padlock) ÷ bare recipe, paired per round: median ${median(padlockRatios).toFixed(2)}× (${Math.min(...padlockRatios).toFixed(2)}–${Math.max(...padlockRatios).toFixed(2)})`);
await padlock.close();
client.close();
await ensemble.stop();
