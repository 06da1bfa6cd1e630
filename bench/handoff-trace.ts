/**
 * Where a handoff's time goes when the lock is held over I/O by a few processes
 * (`node build/bench/handoff-trace.js [--processes 8] [--rounds 3] [--seconds 4]`): the I/O-bound
 * row with 8 processes, traced. Each worker process loops acquire → GET → 2 ms → SET → release →
 * think (1.5–4.5 ms), and stamps on the machine's monotonic clock (µs) when `acquire()` returned, when
 * `release()` was called, when its script left for Redis, when `release()` returned, and when the
 * last pub/sub message reached it before its grant. Put together across processes, each handoff
 * (a grant to a worker that was already waiting when the previous holder began to release) splits
 * into: the releaser's JavaScript before its script is sent; the script's round trip; the message
 * reaching the waiter (publish, then the sleeping process woken); the waiter's JavaScript from the
 * message to its caller's code. padlock's `fairMutex` (handed over in the release script) runs
 * beside redis-semaphore's `Mutex` polling every 1 ms (the best peer of that row), in alternated
 * rounds on one private redis-server; medians of each round, then the median and spread of those.
 * Benchmark-only instrumentation: it wraps ioredis's `sendCommand` and `emit` in the workers.
 */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { loadavg } from 'node:os';
import { Redis } from 'ioredis';
import { startRedisServer } from '../src/devserver/redis-server.js';
import { openContender, type ContenderSpec } from './contenders.js';
import { median, nowMs, percentile, sorted } from './stats.js';

/** One acquisition, in µs on the monotonic clock: acquire returned, release called, its script sent, release returned, the last message before the grant (0: none). */
type Stamps = readonly [granted: number, releaseCalled: number, releaseSent: number, released: number, messageAt: number, asked: number];

const CONTENDERS: readonly ContenderSpec[] = [
  { label: 'padlock fairMutex', library: 'padlock', kind: 'fairMutex' },
  { label: 'redis-semaphore Mutex (retryInterval 1)', library: 'redis-semaphore', settings: { retryInterval: 1, acquireTimeout: 60_000 } },
];
const IO_MS = 2;
const KEY = 'trace:lock';

/** µs on CLOCK_MONOTONIC, comparable across the processes of one machine. */
function stamp(): number {
  return Math.round(nowMs() * 1_000);
}

function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A worker process: argv is [url, contender index, warm-up s, measured s]; it sends its stamps over IPC. */
async function worker(url: string, which: number, warmUpSeconds: number, seconds: number): Promise<void> {
  const spec = CONTENDERS[which];
  if (spec === undefined) throw new Error(`no contender ${which}`);
  let releasing = false;
  let sentAt = 0;
  let messageAt = 0;
  /* eslint-disable @typescript-eslint/unbound-method -- called with `apply(this, …)` below */
  const send = Redis.prototype.sendCommand;
  const emit = Redis.prototype.emit;
  /* eslint-enable @typescript-eslint/unbound-method */
  Redis.prototype.sendCommand = function (this: Redis, ...args: Parameters<Redis['sendCommand']>): unknown {
    if (releasing && sentAt === 0) sentAt = stamp();
    return send.apply(this, args);
  };
  Redis.prototype.emit = function (this: Redis, ...args: Parameters<Redis['emit']>): boolean {
    if (args[0] === 'messageBuffer') messageAt = stamp();
    return emit.apply(this, args);
  };
  const contender = await openContender(spec, { single: url, masters: [] });
  const data = new Redis(url);
  const stamps: Stamps[] = [];
  const cycle = async (record: boolean): Promise<void> => {
    const asked = stamp();
    const held = await contender.acquire(KEY, 60_000);
    const granted = stamp();
    const message = messageAt;
    if (held === null) throw new Error('gave up');
    const value = await data.get('trace:counter');
    await pause(IO_MS);
    await data.set('trace:counter', String(Number(value) + 1));
    const releaseCalled = stamp();
    releasing = true;
    sentAt = 0;
    await held.release();
    releasing = false;
    if (record) stamps.push([granted, releaseCalled, sentAt, stamp(), message, asked]);
    await pause(1.5 + Math.random() * 3);
  };
  const warmEnd = Date.now() + warmUpSeconds * 1_000;
  while (Date.now() < warmEnd) await cycle(false);
  process.send?.({ type: 'ready' });
  await new Promise((resolve) => process.once('message', resolve));
  const end = Date.now() + seconds * 1_000;
  while (Date.now() < end) await cycle(true);
  process.send?.({ type: 'stamps', stamps });
  await contender.close();
  data.disconnect();
}

/** The medians of one round's handoffs, µs. */
interface RoundMedians {
  readonly perSecond: number;
  readonly gap: number;
  readonly beforeSend: number;
  readonly roundTrip: number;
  readonly toMessage: number;
  readonly messageToCaller: number;
  readonly held: number;
}

/** Runs `processes` workers of one contender and reads its handoffs. */
async function round(url: string, which: number, processes: number, seconds: number): Promise<RoundMedians> {
  const script = fileURLToPath(import.meta.url);
  const children = Array.from({ length: processes }, () => fork(script, ['--worker', url, String(which), '3', String(seconds)]));
  const replies = children.map((child) => {
    const ready = new Promise<void>((resolve, reject) => {
      child.once('message', () => resolve());
      child.once('exit', (code) => reject(new Error(`a worker exited (${String(code)}) before it was ready`)));
    });
    const stamps = ready.then(() => new Promise<Stamps[]>((resolve) => child.once('message', (message: { stamps: Stamps[] }) => resolve(message.stamps))));
    return { ready, stamps };
  });
  await Promise.all(replies.map((r) => r.ready));
  for (const child of children) child.send('go');
  const all = (await Promise.all(replies.map((r) => r.stamps))).flat().sort((a, b) => a[0] - b[0]);
  await Promise.all(children.map((child) => new Promise((resolve) => (child.exitCode !== null ? resolve(null) : child.once('exit', resolve)))));
  const gap: number[] = [];
  const beforeSend: number[] = [];
  const roundTrip: number[] = [];
  const toMessage: number[] = [];
  const messageToCaller: number[] = [];
  for (let i = 1; i < all.length; i++) {
    const [, releaseCalled, releaseSent, released] = all[i - 1] ?? [0, 0, 0, 0];
    const [granted, , , , messageAt, asked] = all[i] ?? [0, 0, 0, 0, 0, 0];
    // A handoff: the next holder was waiting before the previous one began to release.
    if (asked > releaseCalled || releaseSent === 0) continue;
    gap.push(granted - releaseCalled);
    beforeSend.push(releaseSent - releaseCalled);
    roundTrip.push(released - releaseSent);
    if (messageAt > releaseSent) {
      toMessage.push(messageAt - releaseSent);
      messageToCaller.push(granted - messageAt);
    }
  }
  const first = all[0]?.[0] ?? 0;
  const last = all.at(-1)?.[3] ?? first;
  const mid = (values: number[]): number => (values.length === 0 ? Number.NaN : median(values));
  return {
    perSecond: all.length / ((last - first) / 1e6),
    gap: mid(gap),
    beforeSend: mid(beforeSend),
    roundTrip: mid(roundTrip),
    toMessage: mid(toMessage),
    messageToCaller: mid(messageToCaller),
    held: mid(all.map(([granted, releaseCalled]) => releaseCalled - granted)),
  };
}

function spread(values: readonly number[], digits = 0): string {
  const s = sorted(values.filter((v) => !Number.isNaN(v)));
  if (s.length === 0) return '–';
  return `${median(s).toFixed(digits)} [${percentile(s, 0).toFixed(digits)}–${percentile(s, 100).toFixed(digits)}]`;
}

async function main(): Promise<void> {
  const { values: args } = parseArgs({ options: { processes: { type: 'string', default: '8' }, rounds: { type: 'string', default: '3' }, seconds: { type: 'string', default: '4' } } });
  const processes = Number(args.processes);
  const rounds = Number(args.rounds);
  const seconds = Number(args.seconds);
  const server = await startRedisServer();
  console.log(`load ${loadavg().map((l) => l.toFixed(2)).join(' ')}; ${processes} processes, ${rounds} alternated rounds of ${seconds} s after 3 s unmeasured`);
  const results: RoundMedians[][] = CONTENDERS.map(() => []);
  try {
    for (let r = 0; r < rounds; r++) {
      for (let which = 0; which < CONTENDERS.length; which++) results[which]?.push(await round(server.url, which, processes, seconds));
    }
  } finally {
    await server.stop();
  }
  console.log('\n| per handoff, µs (median of round medians [min–max]) | acq/s | release() called → next grant | before the release is sent | release round trip | sent → message at the waiter | message → waiter\'s caller | held |');
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  CONTENDERS.forEach((spec, which) => {
    const rows = results[which] ?? [];
    const column = (pick: (m: RoundMedians) => number): string => spread(rows.map(pick));
    console.log(`| ${spec.label} | ${column((m) => m.perSecond)} | ${column((m) => m.gap)} | ${column((m) => m.beforeSend)} | ${column((m) => m.roundTrip)} | ${column((m) => m.toMessage)} | ${column((m) => m.messageToCaller)} | ${column((m) => m.held)} |`);
  });
}

if (process.argv[2] === '--worker') {
  const [url, which, warmUp, seconds] = process.argv.slice(3);
  worker(url ?? '', Number(which), Number(warmUp), Number(seconds)).then(
    () => process.exit(0),
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
} else {
  await main();
}
