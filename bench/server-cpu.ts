/**
 * What one uncontended acquire+release costs the Redis server as a whole: its process CPU
 * (`INFO cpu`, used_cpu_user + used_cpu_sys: parsing, socket I/O, the event loop and the commands),
 * not only the commands' own time (`INFO commandstats`, given beside it). Measured on a server of
 * its own, for the bare pair (`SET NX PX` + `DEL`), the smallest pairs that keep what a lock needs
 * (compare-and-delete; a fence that outlives the lock), what padlock's scripts cost by parts (the
 * calls alone; the scripts without their request log; the scripts whole, with no padlock code: the
 * floor for padlock's guarantees), padlock's `mutex` and the best peer, with 1
 * client and with 16 at once (each its own connection and key), where the server serves several
 * sockets per turn of its loop and the commands weigh more. Rounds are interleaved (the order
 * alternating), and each ratio to the bare pair is taken round by round, so that a noisy moment on
 * the machine hits both sides of a ratio alike.
 *
 *   node build/bench/server-cpu.js [--rounds N] [--round-ms MS] [--clients 1,16]
 */
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { startRedisServer } from '../src/devserver/redis-server.js';
import { diffCounts, installCommandMeter, parseCommandMicros, readCommandMeter, resetCommandMeter, type CommandCounts } from './command-meter.js';
import { lockKeys } from '../src/keys.js';
import { acquireScript, releaseScript } from '../src/stores/redis/scripts/index.js';
import { newOwnerToken, newRequestId } from '../src/tokens.js';
import { LEASE_MS, acquireRelease, openContender, type Contender, type ContenderSpec } from './contenders.js';
import { fixed, table } from './report.js';
import { median } from './stats.js';

/** A pair to measure: how to open one client of it on `url`. */
interface PairKind {
  readonly label: string;
  /** What it keeps that the bare pair does not. */
  readonly keeps: string;
  open(url: string): Promise<Contender>;
}

/** The smallest fenced acquire: SET NX PX, then INCR a fence counter seeded from the server's clock (µs) when absent, kept an hour. */
const FENCED_ACQUIRE = `if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 0 end
local fence = redis.call('INCR', KEYS[2])
if fence == 1 then
  local t = redis.call('TIME')
  fence = t[1] * 1000000 + t[2]
  redis.call('SET', KEYS[2], fence, 'PX', 3600000)
else
  redis.call('PEXPIRE', KEYS[2], 3600000)
end
return fence`;

/** Compare-and-delete. */
const COMPARE_AND_DELETE = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0";

function connect(url: string): Redis {
  const client = new Redis(url, { maxRetriesPerRequest: 3 });
  client.on('error', () => undefined);
  return client;
}

/** A contender made of two calls on one fresh connection. */
async function pairOn(url: string, pair: (client: Redis, shas: readonly string[]) => Contender['acquire'], scripts: readonly string[]): Promise<Contender> {
  const client = connect(url);
  const shas = await Promise.all(scripts.map(async (source) => String(await client.script('LOAD', source))));
  return { acquire: pair(client, shas), close: async () => void (await client.quit().catch(() => client.disconnect())) };
}

const BARE: PairKind = {
  label: 'bare SET NX PX + DEL',
  keeps: 'nothing (its release may delete another owner’s lock)',
  open: (url) =>
    pairOn(
      url,
      (client) => async (key) => {
        if ((await client.set(key, randomBytes(16).toString('hex'), 'PX', LEASE_MS, 'NX')) !== 'OK') return null;
        return { release: async () => void (await client.del(key)) };
      },
      [],
    ),
};

const FENCED_FLOOR: PairKind = {
  label: 'smallest fenced pair (script: SET NX PX + INCR fence; compare-and-delete)',
  keeps: 'safe release, a fence that outlives the lock',
  open: (url) =>
    pairOn(
      url,
      (client, [acquire = '', release = '']) =>
        async (key) => {
          const token = randomBytes(16).toString('hex');
          if (!(await client.evalsha(acquire, 2, key, `${key}:fence`, token, LEASE_MS))) return null;
          return { release: async () => void (await client.evalsha(release, 1, key, token)) };
        },
      [FENCED_ACQUIRE, COMPARE_AND_DELETE],
    ),
};

/**
 * padlock's own two scripts, sent straight through ioredis with the keys and arguments padlock
 * sends (a fresh owner token, a request id, its client's id): the smallest pair that keeps every
 * guarantee padlock's mutex keeps, with none of its client code. `sources` may replace a script's
 * source, to show what a part of it costs.
 */
function padlockScripts(label: string, keeps: string, sources: { acquire?: string; release?: string } = {}): PairKind {
  const clientId = randomBytes(8).toString('hex');
  return {
    label,
    keeps,
    open: (url) =>
      pairOn(
        url,
        (client, [acquire = '', release = '']) =>
          async (name) => {
            const keys = lockKeys('padlock', name);
            const owner = newOwnerToken();
            const reply = (await client.evalsha(acquire, 2, keys.lock, keys.queue, owner, LEASE_MS, 'mutex', '0', clientId)) as unknown[];
            if (reply[0] !== 1) return null;
            return { release: async () => void (await client.evalsha(release, 2, keys.lock, keys.queue, owner, 1, newRequestId(), keys.released, 'PUBLISH')) };
          },
        [sources.acquire ?? acquireScript.source, sources.release ?? releaseScript.source],
      ),
  };
}

/** The release script's common case with its request log neither checked nor carried (resends no longer recognised). */
function withoutRequestLog(source: string): string {
  const logged = "'||0||' .. remember(log, req)";
  if (!source.includes(logged) || !source.includes('not seen(log, req)')) throw new Error("release.lua's common case changed: update withoutRequestLog in bench/server-cpu.ts");
  return source.replace(logged, "'||0||' .. log").replace('not seen(log, req)', 'true');
}

/** A contender of the bench's lineup, on this bench's own server. */
function lineup(spec: ContenderSpec, keeps: string): PairKind {
  return { label: spec.label, keeps, open: (url) => openContender(spec, { single: url, masters: [] }) };
}

/** The best peer, whose client CPU per pair the others' is compared with. */
const PEER_LABEL = 'redis-semaphore Mutex';

export const SERVER_CPU_PAIRS: readonly PairKind[] = [
  BARE,
  lineup({ label: 'SET NX PX + compare-and-delete (raw)', library: 'raw' }, 'safe release'),
  FENCED_FLOOR,
  // Two scripts that return at once: what the calls cost before any work.
  padlockScripts("two scripts that return at once, with padlock's keys and arguments", 'nothing (the cost of the calls alone)', { acquire: 'return {1, 1, 1, 1}', release: 'return {1, 0}' }),
  padlockScripts("padlock's scripts without the request log", 'as padlock, but a resent release is not recognised', { release: withoutRequestLog(releaseScript.source) }),
  padlockScripts("padlock's scripts, sent straight (no padlock code)", 'safe release, fence, re-entry, resend safety, the queue, liveness'),
  lineup({ label: PEER_LABEL, library: 'redis-semaphore', settings: {} }, 'safe release'),
  lineup({ label: 'padlock mutex', library: 'padlock', kind: 'mutex' }, 'safe release, fence, re-entry, resend safety, the queue, liveness'),
];

/** What one pair kind measured at one number of clients. */
export interface ServerCpuResult {
  readonly label: string;
  readonly keeps: string;
  readonly clients: number;
  /** Per acquire+release, median over rounds (µs): the server's whole CPU, its commands' time, this process's CPU. */
  readonly serverMicros: number;
  readonly commandMicros: number;
  readonly clientMicros: number;
  readonly pairsPerSecond: number;
  /** Round-by-round ratios to the bare pair's same round: median, min and max. */
  readonly serverRatio: Spread;
  readonly commandRatio: Spread;
  /** Round-by-round ratio of this process's CPU to the best peer's ({@link PEER_LABEL}) in the same round. */
  readonly clientRatio: Spread;
  /** Round-by-round ratio of this pair's rate to the best peer's in the same round. */
  readonly rateRatio: Spread;
  /** Every round's server µs per pair, in run order. */
  readonly serverRounds: readonly number[];
}

export interface Spread {
  readonly median: number;
  readonly min: number;
  readonly max: number;
}

function spread(values: readonly number[]): Spread {
  return { median: median(values), min: Math.min(...values), max: Math.max(...values) };
}

/** The server's whole CPU so far, in µs. */
async function serverCpu(admin: Redis): Promise<number> {
  const info = await admin.info('cpu');
  const read = (field: string): number => Number(new RegExp(`^${field}:([\\d.]+)`, 'm').exec(info)?.[1] ?? Number.NaN);
  return (read('used_cpu_user') + read('used_cpu_sys')) * 1e6;
}

/** Each command's time so far, in µs, by name. */
async function commandTimes(admin: Redis): Promise<CommandCounts> {
  return parseCommandMicros(await admin.info('commandstats'));
}

/**
 * The time Redis spent in the commands the clients sent (by name, from the command meter), between
 * two snapshots: a script counted whole, with the commands it ran inside, which commandstats also
 * lists under their own names and are not added again (as in uncontended.ts).
 */
function sentTime(before: CommandCounts, after: CommandCounts, sent: CommandCounts): number {
  const delta = diffCounts(after, before);
  return Object.keys(sent).reduce((sum, name) => (name === 'info' ? sum : sum + (delta[name] ?? 0)), 0);
}

interface Round {
  readonly server: number;
  readonly commands: number;
  readonly client: number;
  readonly rate: number;
}

/** `clients` loops of acquire+release at once, for `ms`, each on its own client and key. */
async function round(clients: readonly Contender[], keys: readonly string[], ms: number, admin: Redis): Promise<Round> {
  const cpu0 = await serverCpu(admin);
  const cmd0 = await commandTimes(admin);
  resetCommandMeter();
  const own = process.cpuUsage();
  const start = performance.now();
  let pairs = 0;
  await Promise.all(
    clients.map(async (client, i) => {
      const key = keys[i] ?? '';
      while (performance.now() - start < ms) {
        await acquireRelease(client, key);
        pairs++;
      }
    }),
  );
  const elapsed = performance.now() - start;
  const used = process.cpuUsage(own);
  const sent = readCommandMeter();
  const cmd1 = await commandTimes(admin);
  const cpu1 = await serverCpu(admin);
  return { server: (cpu1 - cpu0) / pairs, commands: sentTime(cmd0, cmd1, sent) / pairs, client: (used.user + used.system) / pairs, rate: pairs / (elapsed / 1000) };
}

/** Measures every pair kind at each number of clients on a private redis-server. */
export async function runServerCpu(options: { readonly rounds: number; readonly roundMs: number; readonly clients: readonly number[] }, log: (line: string) => void = () => undefined): Promise<ServerCpuResult[]> {
  installCommandMeter();
  const server = await startRedisServer({ args: ['--save', '', '--appendonly', 'no'] });
  const admin = connect(server.url);
  const results: ServerCpuResult[] = [];
  try {
    for (const count of options.clients) {
      log(`server CPU per pair, ${count} client(s) at once…`);
      const opened = [];
      for (const kind of SERVER_CPU_PAIRS) {
        const clients = await Promise.all(Array.from({ length: count }, () => kind.open(server.url)));
        const keys = clients.map(() => `bench:server-cpu:${randomBytes(4).toString('hex')}`);
        opened.push({ kind, clients, keys, rounds: [] as Round[] });
      }
      try {
        // Warm: each client's first pairs compile the code and load the scripts.
        for (const entry of opened) await round(entry.clients, entry.keys, 300, admin);
        for (let r = 0; r < options.rounds; r++) {
          for (const entry of r % 2 === 0 ? opened : [...opened].reverse()) entry.rounds.push(await round(entry.clients, entry.keys, options.roundMs, admin));
        }
      } finally {
        for (const entry of opened) await Promise.all(entry.clients.map((c) => c.close().catch(() => undefined)));
      }
      const bare = opened[0]?.rounds ?? [];
      const peer = opened.find((entry) => entry.kind.label === PEER_LABEL)?.rounds ?? [];
      for (const { kind, rounds } of opened) {
        results.push({
          label: kind.label,
          keeps: kind.keeps,
          clients: count,
          serverMicros: median(rounds.map((r) => r.server)),
          commandMicros: median(rounds.map((r) => r.commands)),
          clientMicros: median(rounds.map((r) => r.client)),
          pairsPerSecond: median(rounds.map((r) => r.rate)),
          serverRatio: spread(rounds.map((r, i) => r.server / (bare[i]?.server ?? Number.NaN))),
          commandRatio: spread(rounds.map((r, i) => r.commands / (bare[i]?.commands ?? Number.NaN))),
          clientRatio: spread(rounds.map((r, i) => r.client / (peer[i]?.client ?? Number.NaN))),
          rateRatio: spread(rounds.map((r, i) => r.rate / (peer[i]?.rate ?? Number.NaN))),
          serverRounds: rounds.map((r) => r.server),
        });
      }
    }
  } finally {
    await admin.quit().catch(() => admin.disconnect());
    await server.stop();
  }
  return results;
}

function ratio(s: Spread): string {
  return `${fixed(s.median, 2)}× (${fixed(s.min, 2)}–${fixed(s.max, 2)})`;
}

/** The table of {@link runServerCpu}'s results. */
export function serverCpuTable(results: readonly ServerCpuResult[]): string {
  return table(
    ['pair', 'clients', "server's whole CPU µs/pair", '× bare (round by round)', 'command time µs/pair', '× bare', 'client CPU µs/pair', `× ${PEER_LABEL}`, 'pairs/s', '× the peer'],
    results.map((r) => [r.label, String(r.clients), fixed(r.serverMicros, 1), ratio(r.serverRatio), fixed(r.commandMicros, 1), ratio(r.commandRatio), fixed(r.clientMicros, 1), ratio(r.clientRatio), fixed(r.pairsPerSecond, 0), ratio(r.rateRatio)]),
  );
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { rounds: { type: 'string', default: '15' }, 'round-ms': { type: 'string', default: '400' }, clients: { type: 'string', default: '1,16' } } });
  const results = await runServerCpu(
    { rounds: Number(values.rounds), roundMs: Number(values['round-ms']), clients: String(values.clients).split(',').map(Number) },
    (line) => process.stderr.write(`${line}\n`),
  );
  process.stdout.write(`${serverCpuTable(results)}\n`);
}
