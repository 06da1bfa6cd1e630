/**
 * `npm run soak`: the long soak, outside CI. Runs checker rounds with random faults for a few
 * minutes (default 5; `--minutes N`, `--seed S` to replay) and exits non-zero on any unsafe or
 * stuck round. It stops by itself and leaves no server behind.
 */
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { startRedisServer } from '../../src/devserver/redis-server.js';
import { soak, standaloneProvider } from './soak-run.js';

const { values } = parseArgs({ options: { minutes: { type: 'string', default: '5' }, seed: { type: 'string' } } });
const minutes = Number(values.minutes);
if (!Number.isFinite(minutes) || minutes <= 0 || minutes > 120) throw new RangeError(`--minutes must be in (0, 120], got ${values.minutes}`);
const seed = values.seed === undefined ? Date.now() % 2 ** 31 : Number(values.seed);

const provider = standaloneProvider(startRedisServer, (server) => {
  const client = new Redis({ host: server.host, port: server.port });
  client.on('error', () => undefined);
  return client;
});
console.log(`padlock soak: ${minutes} min, seed ${seed}`);
const started = performance.now();
try {
  const result = await soak({ provider, durationMs: minutes * 60_000, seed, log: (line) => console.log(line) });
  console.log(
    `\n${result.rounds} rounds, ${result.sections} checked critical sections, ${result.lostHolds} holds lost to faults, ` +
      `${result.staleRefused} stale operations refused, in ${((performance.now() - started) / 1000).toFixed(0)} s`,
  );
  console.log(`faults: ${JSON.stringify(result.faults)}`);
  if (result.failures.length > 0) {
    console.log(`\n${result.failures.length} FAILED round(s):\n${result.failures.join('\n\n')}`);
    process.exitCode = 1;
  } else {
    console.log('no overlap, no lost update, no stale write accepted, every section served');
  }
} finally {
  await provider.close();
}
