/**
 * What the scripts of one contended acquisition cost one server, timed alone (`INFO commandstats`:
 * the script's own time, the commands it runs included): a waiter joins a queue of 14 behind a held
 * lock, the holder releases (the queue's head is woken), the woken head takes the lock. Two shapes:
 * one server (the waiter knows its place: the entry its last call returned), and one Redlock master
 * (each call followed by the epoch check in the same script; the queue in ticket order; the woken
 * waiter does not know its place there, each master's entry being its own). No client, no other
 * load: the steadiest view of what a change to the contended path's scripts buys, where the
 * contended rows themselves swing by more than that from run to run. Rounds alternate the two
 * shapes; each figure is the median over rounds of µs per call.
 *
 *   node build/bench/contended-scripts.js [--rounds N] [--acquisitions N]
 *
 * To compare two builds, run it in each (farm-bench alternates them).
 */
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { startRedisServer } from '../src/devserver/redis-server.js';
import { lockKeys } from '../src/keys.js';
import { MutexProtocol } from '../src/stores/redis/kinds/mutex-protocol.js';
import type { ScriptCall } from '../src/stores/redis/topology/topology.js';
import { acquireScript, enqueueScript, releaseScript, type AcquireReply } from '../src/stores/redis/scripts/index.js';
import { checkArgs, checkedScript } from '../src/stores/redis/topology/master-epoch.js';
import { fixed, positive, uptime } from './report-format.js';
import { table } from './report.js';
import { median } from './stats.js';

const QUEUED = 14;
const LEASE_MS = 30_000;
const HEARTBEAT_MS = 1_000;

type Shape = 'one server' | 'Redlock master';
interface Costs {
  readonly join: number;
  readonly release: number;
  readonly take: number;
}

/** Script time (µs) the server has counted so far. */
async function scriptMicros(admin: Redis): Promise<number> {
  return Number(/cmdstat_evalsha:calls=\d+,usec=(\d+)/.exec(await admin.info('commandstats'))?.[1] ?? 0);
}

function owner(i: number): string {
  return `owner-${String(i).padStart(16, '0')}`;
}

/** Runs `acquisitions` contended acquisitions of one shape on a lock of its own; µs per call of each kind. */
async function measure(client: Redis, shape: Shape, name: string, acquisitions: number): Promise<Costs> {
  const keys = lockKeys('bench', name);
  const marker = `bench:${name}:redlock-epoch`;
  const protocol = new MutexProtocol(keys, 'mutex', 'client-bench');
  const redlock = shape === 'Redlock master';
  let run = '';
  // Sends a call as its topology does: as is on one server; an attempt with the epoch check on a Redlock master.
  const send = async <R>(call: ScriptCall<R>, check = redlock): Promise<R> => {
    if (!check) return call.script.parse(await client.evalsha(call.script.sha, call.keys.length, ...call.keys, ...call.args));
    const checked = checkedScript(call.script);
    const reply = checked.parse(await client.evalsha(checked.sha, call.keys.length + 1, ...call.keys, marker, ...call.args, ...checkArgs(LEASE_MS, run)));
    run = reply.epoch.run;
    return reply.value;
  };
  const ticket = Date.now();
  // On a Redlock master, an attempt carries its ticket and a proposed fence (any > 0).
  const attempt = (i: number, mode: 'queue' | 'requeue', place: string): ScriptCall<AcquireReply> =>
    redlock ? protocol.attemptProposing(owner(i), LEASE_MS, mode, HEARTBEAT_MS, ticket + i, place, 1) : protocol.attempt(owner(i), LEASE_MS, mode, HEARTBEAT_MS, 0, place);
  for (const source of [acquireScript.source, enqueueScript.source, releaseScript.source, checkedScript(acquireScript).source, checkedScript(enqueueScript).source]) await client.script('LOAD', source);
  await client.del(keys.lock, keys.queue, marker);
  await send(protocol.attempt(owner(0), LEASE_MS, 'try', HEARTBEAT_MS));
  for (let i = 1; i <= QUEUED; i++) await send(attempt(i, 'queue', ''));
  const total = { join: 0, release: 0, take: 0 };
  const timed = async <R>(part: keyof Costs, call: ScriptCall<R>, check = redlock): Promise<R> => {
    const before = await scriptMicros(client);
    const reply = await send(call, check);
    total[part] += (await scriptMicros(client)) - before;
    return reply;
  };
  for (let n = 0; n < acquisitions; n++) {
    const holder = n, head = n + 1;
    await timed('join', attempt(n + QUEUED + 1, 'queue', ''));
    await timed('release', protocol.release(owner(holder), 1), false);
    // The woken head: its wake-up named the entry the release took out, which it knows on one server ('') and not on a master ('?').
    const taken = await timed('take', attempt(head, 'requeue', redlock ? '?' : ''));
    if (taken.status !== 'acquired') throw new Error(`${shape}: the woken waiter did not take the lock (${taken.status})`);
  }
  await client.del(keys.lock, keys.queue, marker);
  return { join: total.join / acquisitions, release: total.release / acquisitions, take: total.take / acquisitions };
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { rounds: { type: 'string', default: '8' }, acquisitions: { type: 'string', default: '600' } } });
  const rounds = positive('rounds', values.rounds);
  const acquisitions = positive('acquisitions', values.acquisitions);
  console.log(`# The scripts of one contended acquisition, on one server, alone (${rounds} rounds of ${acquisitions}; ${uptime()})\n`);
  const server = await startRedisServer();
  const client = new Redis(server.url);
  try {
    const shapes: Shape[] = ['one server', 'Redlock master'];
    const results = new Map<Shape, Costs[]>(shapes.map((s) => [s, []]));
    for (let round = 0; round < rounds; round++) {
      for (const shape of round % 2 === 0 ? shapes : [...shapes].reverse()) results.get(shape)?.push(await measure(client, shape, `contended:${round}:${shape === 'one server' ? 'one' : 'master'}`, acquisitions));
    }
    const rows = shapes.map((shape) => {
      const costs = results.get(shape) ?? [];
      const of = (part: keyof Costs): string => fixed(median(costs.map((c) => c[part])), 1);
      return [shape, of('join'), of('release'), of('take'), fixed(median(costs.map((c) => c.join + c.release + c.take)), 1)];
    });
    console.log(table(['shape', 'a waiter joins (µs)', 'the holder releases, waking the head (µs)', 'the woken head takes it (µs)', 'per acquisition (µs)'], rows));
  } finally {
    client.disconnect();
    await server.stop();
  }
}

await main();
