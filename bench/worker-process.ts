/**
 * A worker process (forked by `contended.ts`), running one worker or several: opens its own
 * connections for the contender (one per server its lock lives on, shared by its workers as in an
 * application) and one for the workload, warms up, and on `go` runs the same loop as in-process
 * workers, then reports their records and the commands the process sent; on
 * `close` (once the parent has taken its measurements, so that teardown is not counted) it closes
 * everything and exits.
 */
import { installCommandMeter } from './command-meter.js';
import { openContender, type Contender } from './contenders.js';
import type { FromWorker, ToWorker } from './messages.js';
import { connectData, metered, runWorker, warmUp } from './workload.js';
import type { Redis } from 'ioredis';

installCommandMeter();

let contender: Contender | undefined;
let data: Redis | undefined;
let workers: readonly number[] = [];

/** Resolves once the message is handed to the IPC channel (so that disconnecting loses nothing). */
function send(message: FromWorker): Promise<void> {
  return new Promise((resolve) => {
    if (process.send === undefined) resolve();
    else process.send(message, undefined, {}, () => resolve());
  });
}

let shuttingDown = false;

async function shutdown(code: number): Promise<void> {
  if (shuttingDown) return;
  shuttingDown = true;
  const closing = setTimeout(() => process.exit(code), 5_000);
  await contender?.close().catch(() => undefined);
  await data?.quit().catch(() => undefined);
  clearTimeout(closing);
  process.exitCode = code;
  if (process.connected) process.disconnect();
}

async function handle(message: ToWorker): Promise<void> {
  if (message.type === 'open') {
    workers = message.workers;
    data = connectData(message.servers.single);
    contender = await openContender(message.spec, message.servers);
    await warmUp(contender, data, message.workload);
    await send({ type: 'ready' });
    return;
  }
  if (message.type === 'close') {
    await shutdown(0);
    return;
  }
  if (contender === undefined || data === undefined) throw new Error('go before open');
  const run = { contender, data, plan: message.plan };
  const { result: outcomes, usage } = await metered(() => Promise.all(workers.map((worker) => runWorker(worker, run.contender, run.data, run.plan))));
  await send({ type: 'result', outcomes, usage });
}

// The parent went away: do not outlive it.
process.on('disconnect', () => void shutdown(1));

process.on('message', (message: ToWorker) => {
  handle(message).catch(async (error: unknown) => {
    await send({ type: 'error', message: error instanceof Error ? (error.stack ?? error.message) : String(error) });
    await shutdown(1);
  });
});
