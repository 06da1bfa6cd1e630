/**
 * The scale run's lease holder, one OS process per library (forked by `scale.ts` with
 * `--expose-gc`, so that its heap can be read after a full collection): it opens the library's
 * client, holds N leases that the library renews by itself, reports what the renewals cost this
 * process, and its heap with the leases held and again with M more acquisitions waiting on locks
 * another client holds; then releases the leases, so that the waiters alone can be measured.
 * Nothing else runs in it, so its heap is the library's (and this small harness's) alone.
 */
import { installCommandMeter } from './command-meter.js';
import { openContender, type Contender, type HeldLease } from './contenders.js';
import type { FromHolder, ToHolder } from './messages.js';
import { metered } from './workload.js';

installCommandMeter();

/** Acquisitions in flight while taking the leases. */
const CONCURRENCY = 64;
/** The warm-up lease: every library renews it within 90 % of it (redlock-universal at 80 %). */
const WARM_LEASE_MS = 300;
/** Bound on one waiting acquire: far past any scale run, so a wait ends only when the process does. */
const WAIT_BOUND_MS = 600_000;

let contender: Contender | undefined;
const leases: HeldLease[] = [];
let waitsEnded = 0;

function send(message: FromHolder): Promise<void> {
  return new Promise((resolve) => {
    if (process.send === undefined) resolve();
    else process.send(message, undefined, {}, () => resolve());
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Heap used after full collections (twice: the first may leave what finalizers free). */
function heapAfterGc(): number {
  if (global.gc === undefined) throw new Error('scale-process needs node --expose-gc');
  global.gc();
  global.gc();
  return process.memoryUsage().heapUsed;
}

async function handle(message: ToHolder): Promise<void> {
  switch (message.type) {
    case 'open': {
      const opened = await openContender(message.spec, message.servers);
      contender = opened;
      const hold = opened.hold;
      if (hold === undefined) throw new Error(`${message.spec.label} cannot hold a renewed lease`);
      // Warm-up outside the measurement, so that no script is loaded inside it: a short lease held
      // until the library renewed it at least once, released, then an acquire and a release.
      const warm = await hold(`${message.key}:warm`, WARM_LEASE_MS, WARM_LEASE_MS / 3);
      await sleep(WARM_LEASE_MS * 0.9);
      await warm.release();
      await (await opened.acquire(`${message.key}:warm`, 1_000))?.release();
      const heapBefore = heapAfterGc();
      const started = performance.now();
      let next = 0;
      const taker = async (): Promise<void> => {
        while (next < message.count) leases.push(await hold(`${message.key}:${next++}`, message.leaseMs, message.renewEveryMs));
      };
      await Promise.all(Array.from({ length: CONCURRENCY }, taker));
      await send({ type: 'holding', heapBefore, acquireMs: performance.now() - started });
      return;
    }
    case 'measure': {
      const renewalsBefore = contender?.renewals?.();
      const started = performance.now();
      const { usage } = await metered(() => sleep(message.ms));
      const ms = performance.now() - started;
      const renewalsAfter = contender?.renewals?.();
      const renewals = renewalsBefore === undefined || renewalsAfter === undefined ? null : renewalsAfter - renewalsBefore;
      await send({ type: 'measured', ms, usage, renewals });
      return;
    }
    case 'heap':
      await send({ type: 'heap', heapUsed: heapAfterGc(), lost: leases.filter((l) => !l.held).length, waitsEnded });
      return;
    case 'wait': {
      const waiting = contender;
      if (waiting === undefined) throw new Error('wait before open');
      for (let i = 0; i < message.count; i++) {
        waiting.acquire(`${message.key}:${i}`, WAIT_BOUND_MS).then(
          () => void waitsEnded++,
          () => void waitsEnded++,
        );
      }
      await sleep(message.settleMs);
      await send({ type: 'waiting' });
      return;
    }
    case 'release': {
      const started = performance.now();
      const releasing = leases.splice(0);
      const releaser = async (): Promise<void> => {
        for (let lease = releasing.pop(); lease !== undefined; lease = releasing.pop()) await lease.release();
      };
      await Promise.all(Array.from({ length: CONCURRENCY }, releaser));
      await send({ type: 'released', ms: performance.now() - started });
      return;
    }
    case 'close':
      process.exit(0);
  }
}

// The parent went away: do not outlive it.
process.on('disconnect', () => process.exit(1));

process.on('message', (message: ToHolder) => {
  handle(message).catch(async (error: unknown) => {
    await send({ type: 'error', message: error instanceof Error ? (error.stack ?? error.message) : String(error) });
    process.exit(1);
  });
});
