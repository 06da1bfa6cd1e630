/**
 * One ticket seller of `padlock demo`, run as its own OS process by `child_process.fork`.
 *
 * Each sale is a read-check-write on a shared stock: GET stock; if it is above 0, do some work,
 * SET stock to what was read minus one, INCR sold. Without a lock, sellers that read the same stock
 * all sell and the stock ends up oversold; inside a padlock lock, exactly the stock is sold.
 *
 * Not an entry point for users: the demo sends it a `connect` message, then `run` per phase, then
 * `stop` (see `demo-protocol.ts`). It exits when the parent goes away.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Padlock, type Lockable } from '../index.js';
import type { FromSeller, LockKind, RunMessage, SellerResult, ToSeller } from './demo-protocol.js';
import { loadClientLibrary, type CliClient } from './client-library.js';
import { firstLine } from './errors.js';

const PROGRESS_EVERY_MS = 40;

let redis: CliClient | undefined;
let padlock: Padlock | undefined;

function send(message: FromSeller): Promise<void> {
  return new Promise((resolve) => {
    if (!process.connected || process.send === undefined) return resolve();
    process.send(message, undefined, {}, () => resolve());
  });
}

/** The lock a phase sells under; `null` for the unguarded phase. */
function lockFor(kind: LockKind, client: Padlock, name: string): Lockable | null {
  return kind === 'none' ? null : client[kind](name);
}

async function sell(run: RunMessage, client: CliClient, lock: Lockable | null): Promise<SellerResult> {
  let sold = 0;
  let acquisitions = 0;
  const waitsMs: number[] = [];
  let reportedAt = performance.now();
  for (;;) {
    const asked = performance.now();
    const lease = lock === null ? null : await lock.acquire();
    if (lease !== null) {
      waitsMs.push(performance.now() - asked);
      acquisitions++;
    }
    try {
      // The read-check-write that a lock must make atomic.
      const stock = Number(await client.call(['GET', run.stockKey]));
      if (!(stock > 0)) break;
      await sleep(run.workMs); // take the payment
      await client.call(['SET', run.stockKey, stock - 1]);
      await client.call(['INCR', run.soldKey]);
      sold++;
    } finally {
      await lease?.release();
    }
    if (performance.now() - reportedAt >= PROGRESS_EVERY_MS) {
      reportedAt = performance.now();
      void send({ type: 'progress', sold });
    }
    await sleep(Math.random() * run.thinkMs); // the next customer
  }
  return { sold, acquisitions, waitsMs };
}

async function handle(message: ToSeller): Promise<void> {
  switch (message.type) {
    case 'connect': {
      // The parent's library: the seller inherits its environment (PADLOCK_CLIENT) and its node_modules.
      redis = (await loadClientLibrary(process.env)).server(message.url);
      redis.onError(() => undefined); // failures reach the commands, and from there the parent
      await redis.connect();
      padlock = new Padlock({ redis: redis.client, prefix: message.prefix });
      await send({ type: 'ready' });
      return;
    }
    case 'run': {
      if (redis === undefined || padlock === undefined) throw new Error('run before connect');
      const result = await sell(message, redis, lockFor(message.lock, padlock, message.lockName));
      await send({ type: 'done', ...result });
      return;
    }
    case 'stop': {
      await padlock?.close();
      redis?.close();
      process.exit(0);
    }
  }
}

/** One line for the parent to show, saying plainly when Redis went away. */
function describe(error: unknown): string {
  const message = firstLine(error).replace(/\.$/, '');
  return /Connection is closed|ECONNRESET|ECONNREFUSED|EPIPE|max retries/i.test(message) ? `lost the connection to Redis (${message})` : message;
}

async function fail(error: unknown): Promise<never> {
  await send({ type: 'error', message: describe(error) });
  process.exit(1);
}

// Ctrl-C reaches the whole process group: the parent decides, and stops the sellers itself.
process.on('SIGINT', () => undefined);
// The parent went away (or closed the channel): nothing left to do.
process.on('disconnect', () => process.exit(0));
process.on('message', (message: ToSeller) => {
  handle(message).catch(fail);
});
