/**
 * Where an uncontended Redlock acquire's time goes. padlock's mutex on the masters is timed call by
 * call: when each script is handed to ioredis and when its reply arrives (a wrapper around
 * `Redis.prototype.sendCommand`, on top of the command meter), which splits one acquire into
 * - sending: from the call to the last of the N acquire scripts handed to ioredis (padlock's code
 *   path, and ioredis writing N commands one after another on one thread);
 * - majority: from there to the reply that makes a majority of grants;
 * - fence write-back: from there to the last reply of the second round, the fence written back to
 *   the granting masters that gave a lower one (raise-fence.lua); 0 when the majority agreed on the
 *   proposed fence (no second round);
 * - returning: from there to the acquire resolving (masters whose grant came after the majority's
 *   get the fence too: when their reply lands before the acquire returns, that write is sent on
 *   the acquire's path).
 * padlock's acquire on one server is split the same way (sending, its one round trip, returning).
 * Beside them, on the same servers and interleaved with them, the floors this machine sets: one
 * PING to one master, a PING to every master at once (the shape of a peer's Redlock acquire: one
 * parallel round), and the cost of handing N EVALSHAs (of a one-line script, with as many keys and
 * arguments as padlock's acquire.lua: 3 and 4) to ioredis, which writes each to its socket at once;
 * and the same round with a two-command script (GET, then SET … PX of the lock key: the commands
 * acquire.lua runs on an uncontended master) in place of acquire.lua, which tells the time padlock's
 * script logic adds on the masters from the time any script that takes the lock would take. On one
 * core shared by the masters, each master's script time adds to the next one's wait.
 * Last, the time each master spends in one script call (SLOWLOG with no threshold on one master, a
 * short phase after the rounds): acquire.lua with the epoch check (one script on a Redlock master)
 * against that two-command script.
 * Benchmark-only instrumentation: it recognises padlock's scripts by their SHA1.
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { Padlock } from '../src/index.js';
import { acquireScript, raiseFenceScript } from '../src/stores/redis/scripts/index.js';
import { checkedScript } from '../src/stores/redis/topology/master-epoch.js';
import { mean, nowMs, percentile, sorted } from './stats.js';

/** One step of the acquire, or one floor: its p50 and mean (means add up to the total's). */
export interface AnatomyRow {
  readonly step: string;
  readonly p50: number;
  readonly mean: number;
  readonly samples: number;
}

export interface Anatomy {
  readonly masters: number;
  /** padlock mutex acquire on the masters, then its steps. */
  readonly acquire: AnatomyRow;
  readonly steps: readonly AnatomyRow[];
  /** Fence write-backs to masters whose grant came after the majority's, per acquire. */
  readonly stragglersPerAcquire: number;
  /** Of those, the ones sent before the acquire returned (on its path). */
  readonly stragglersOnPathPerAcquire: number;
  /** Acquires that needed the second round (the fence written back to the majority), per acquire. */
  readonly secondRoundsPerAcquire: number;
  /** padlock mutex acquire on one server, then its steps. */
  readonly single: AnatomyRow;
  readonly singleSteps: readonly AnatomyRow[];
  readonly floors: readonly AnatomyRow[];
  /** µs one master spends in one call (SLOWLOG): acquire.lua with the epoch check, and the two-command floor script. */
  readonly serverMicros: { readonly acquire: number; readonly twoCommands: number; readonly samples: number };
}

export interface AnatomyOptions {
  readonly rounds: number;
  /** Acquires per contender per round. */
  readonly perRound: number;
}

/** A script call seen on the wire. */
interface Traced {
  readonly sha: string;
  readonly node: string;
  readonly sent: number;
  replied: number;
}

let trace: Traced[] | undefined;
/** What a Redlock master runs for an acquire: acquire.lua followed by the epoch check, as one script. */
const checkedAcquireSha = checkedScript(acquireScript).sha;
let installed = false;

function installTracer(): void {
  if (installed) return;
  installed = true;
  // eslint-disable-next-line @typescript-eslint/unbound-method -- called with `apply(this, …)` below
  const original = Redis.prototype.sendCommand;
  Redis.prototype.sendCommand = function (this: Redis, ...args: Parameters<Redis['sendCommand']>): unknown {
    const command = args[0];
    if (trace !== undefined && command.name === 'evalsha') {
      const entry: Traced = { sha: String(command.args[0]), node: `${String(this.options.host)}:${String(this.options.port)}`, sent: nowMs(), replied: Number.NaN };
      trace.push(entry);
      const replied = (): void => void (entry.replied = nowMs());
      command.promise.then(replied, replied);
    }
    return original.apply(this, args);
  };
}

/** Samples of one measured thing. */
class Samples {
  readonly values: number[] = [];
  constructor(readonly step: string) {}
  row(): AnatomyRow {
    const ordered = sorted(this.values);
    return { step: this.step, p50: percentile(ordered, 50), mean: mean(this.values), samples: this.values.length };
  }
}

function connect(url: string): Redis {
  const client = new Redis(url);
  client.on('error', () => undefined);
  return client;
}

/** Measures on the single server at `single` and the masters at `masters`. */
export async function redlockAnatomy(single: string, masters: readonly string[], options: AnatomyOptions): Promise<Anatomy> {
  installTracer();
  const quorum = Math.floor(masters.length / 2) + 1;
  const singleClient = connect(single);
  const masterClients = masters.map(connect);
  const pingClients = masters.map(connect);
  const one = new Padlock({ redis: singleClient });
  const many = new Padlock({ redis: masterClients });
  const key = `bench:anatomy:${randomBytes(4).toString('hex')}`;
  const onOne = one.mutex(key);
  const onMany = many.mutex(key);

  const total = new Samples(`padlock mutex acquire on ${masters.length} masters`);
  const sending = new Samples(`sending the ${masters.length} acquire scripts`);
  const majority = new Samples(`waiting for a majority's grants (${quorum} of ${masters.length})`);
  const fence = new Samples('fence write-back to that majority (a second round)');
  const returning = new Samples('returning');
  const singleAcquire = new Samples('padlock mutex acquire on one server');
  const singleSending = new Samples('sending the acquire script');
  const singleRound = new Samples('its round trip');
  const singleReturning = new Samples('returning');
  const ping = new Samples('one PING to one master');
  const pingMajority = new Samples(`PING to all ${masters.length} masters at once, until ${quorum} replied`);
  const pingAll = new Samples(`PING to all ${masters.length} masters at once, until all replied`);
  const handing = new Samples(`handing ${masters.length} EVALSHAs to ioredis, one per master (no padlock)`);
  const twoCommands = new Samples(`GET + SET PX script to all ${masters.length} masters at once, until ${quorum} replied`);
  let stragglers = 0;
  let stragglersOnPath = 0;
  let secondRounds = 0;

  const traceOne = async (): Promise<void> => {
    trace = [];
    const called = nowMs();
    const lease = await onMany.acquire();
    const resolved = nowMs();
    await lease.release();
    const calls = trace;
    trace = undefined;
    const asked = calls.filter((c) => c.sha === checkedAcquireSha);
    const lastSent = Math.max(...asked.map((c) => c.sent));
    const granted = [...asked].sort((a, b) => a.replied - b.replied).slice(0, quorum);
    const majorityAt = granted[granted.length - 1]?.replied ?? Number.NaN;
    const majorityNodes = new Set(granted.map((c) => c.node));
    const raised = calls.filter((c) => c.sha === raiseFenceScript.sha);
    const writeBack = raised.filter((c) => majorityNodes.has(c.node));
    if (writeBack.length > 0) secondRounds++;
    const written = writeBack.length > 0 ? Math.max(...writeBack.map((c) => c.replied)) : majorityAt;
    const late = raised.filter((c) => !majorityNodes.has(c.node));
    stragglers += late.length;
    stragglersOnPath += late.filter((c) => c.sent < resolved).length;
    total.values.push(resolved - called);
    sending.values.push(lastSent - called);
    majority.values.push(majorityAt - lastSent);
    fence.values.push(written - majorityAt);
    returning.values.push(resolved - written);
  };
  const trivial = "return #KEYS + #ARGV";
  const trivialSha = String(await pingClients[0]?.script('LOAD', trivial));
  await Promise.all(pingClients.slice(1).map((c) => c.script('LOAD', trivial)));
  // What acquire.lua does on an uncontended master, and nothing else: read the lock, write it with a lease.
  const getSet = "redis.call('GET', KEYS[1]) redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) return 1";
  const getSetSha = String(await pingClients[0]?.script('LOAD', getSet));
  await Promise.all(pingClients.slice(1).map((c) => c.script('LOAD', getSet)));
  const getSetRound = async (): Promise<void> => {
    const called = nowMs();
    const replies = await Promise.all(
      pingClients.map(async (c) => (await c.evalsha(getSetSha, 2, `${key}:floor`, `${key}:floor:queue`, 'owner', '30000', 'mutex', '0'), nowMs() - called)),
    );
    twoCommands.values.push(sorted(replies)[quorum - 1] ?? Number.NaN);
  };
  const measured: Array<() => Promise<void>> = [
    traceOne,
    async () => {
      trace = [];
      const called = nowMs();
      const lease = await onOne.acquire();
      const resolved = nowMs();
      const call = trace.find((c) => c.sha === acquireScript.sha);
      trace = undefined;
      await lease.release();
      singleAcquire.values.push(resolved - called);
      singleSending.values.push((call?.sent ?? Number.NaN) - called);
      singleRound.values.push((call?.replied ?? Number.NaN) - (call?.sent ?? Number.NaN));
      singleReturning.values.push(resolved - (call?.replied ?? Number.NaN));
    },
    async () => {
      const called = nowMs();
      await pingClients[0]?.ping();
      ping.values.push(nowMs() - called);
    },
    async () => {
      const called = nowMs();
      const replies = await Promise.all(pingClients.map(async (c) => (await c.ping(), nowMs() - called)));
      const ordered = sorted(replies);
      pingMajority.values.push(ordered[quorum - 1] ?? Number.NaN);
      pingAll.values.push(ordered[ordered.length - 1] ?? Number.NaN);
    },
    async () => {
      const called = nowMs();
      const replies = pingClients.map((c) => c.evalsha(trivialSha, 2, key, `${key}:queue`, 'owner', '30000', 'mutex', '0'));
      handing.values.push(nowMs() - called);
      await Promise.all(replies);
    },
    getSetRound,
  ];
  try {
    // Warm up (scripts loaded, connections open, code optimised), then interleave, alternating the order.
    for (let i = 0; i < 200; i++) for (const run of measured) await run();
    for (const s of [total, sending, majority, fence, returning, singleAcquire, singleSending, singleRound, singleReturning, ping, pingMajority, pingAll, handing, twoCommands]) s.values.length = 0;
    stragglers = 0;
    stragglersOnPath = 0;
    secondRounds = 0;
    for (let r = 0; r < options.rounds; r++) {
      const order = r % 2 === 0 ? measured : [...measured].reverse();
      for (const run of order) for (let i = 0; i < options.perRound; i++) await run();
    }
    return {
      masters: masters.length,
      acquire: total.row(),
      steps: [sending, majority, fence, returning].map((s) => s.row()),
      stragglersPerAcquire: stragglers / total.values.length,
      stragglersOnPathPerAcquire: stragglersOnPath / total.values.length,
      secondRoundsPerAcquire: secondRounds / total.values.length,
      single: singleAcquire.row(),
      singleSteps: [singleSending, singleRound, singleReturning].map((s) => s.row()),
      floors: [ping, pingMajority, pingAll, handing, twoCommands].map((s) => s.row()),
      serverMicros: await serverMicros(pingClients[0], [traceOne, getSetRound], checkedAcquireSha, getSetSha),
    };
  } finally {
    trace = undefined;
    await one.close();
    await many.close();
    await Promise.all([singleClient, ...masterClients, ...pingClients].map((c) => c.quit().catch(() => c.disconnect())));
  }
}

/**
 * The µs one master spends in one call of acquire.lua with the epoch check and of the floor script (p50 of SLOWLOG
 * entries, logged with no threshold while `runs` alternate 300 times). The master's SLOWLOG
 * settings are put back after.
 */
async function serverMicros(master: Redis | undefined, runs: readonly (() => Promise<void>)[], acquireSha: string, floorSha: string): Promise<{ acquire: number; twoCommands: number; samples: number }> {
  if (master === undefined) return { acquire: Number.NaN, twoCommands: Number.NaN, samples: 0 };
  const [, threshold = '10000'] = (await master.config('GET', 'slowlog-log-slower-than')) as string[];
  const [, length = '128'] = (await master.config('GET', 'slowlog-max-len')) as string[];
  const acquire: number[] = [];
  const floor: number[] = [];
  try {
    await master.config('SET', 'slowlog-max-len', '1024');
    for (let batch = 0; batch < 3; batch++) {
      await master.slowlog('RESET');
      await master.config('SET', 'slowlog-log-slower-than', '0');
      for (let i = 0; i < 100; i++) for (const run of runs) await run();
      await master.config('SET', 'slowlog-log-slower-than', threshold);
      for (const entry of (await master.slowlog('GET', 1024)) as [number, number, number, string[]][]) {
        const [, , micros, args] = entry;
        if (String(args[0]).toLowerCase() !== 'evalsha') continue;
        if (args[1] === acquireSha) acquire.push(micros);
        else if (args[1] === floorSha) floor.push(micros);
      }
    }
  } finally {
    await master.config('SET', 'slowlog-log-slower-than', threshold);
    await master.config('SET', 'slowlog-max-len', length);
    await master.slowlog('RESET');
  }
  return { acquire: percentile(sorted(acquire), 50), twoCommands: percentile(sorted(floor), 50), samples: Math.min(acquire.length, floor.length) };
}
