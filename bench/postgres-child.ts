/**
 * A worker process of bench/postgres.ts: every contender opened once (postgres-contenders.ts); on
 * `go` it runs one worker's loop on the contender named and sends back its records; on `close`, or
 * when the parent goes away, it closes everything and exits.
 */
import { CONTENDERS, openContender, type BenchAddresses, type ContenderName, type OpenContender } from './postgres-contenders.js';
import type { AcquisitionRecord } from './stats.js';
import { lockLoop, type LoopPlan } from './store-padlocks.js';

/** What bench/postgres.ts sends its worker processes. */
export type ToPostgresChild =
  | { readonly type: 'open'; readonly addresses: BenchAddresses; readonly worker: number }
  | { readonly type: 'go'; readonly contender: ContenderName; readonly plan: LoopPlan }
  | { readonly type: 'close' };

/** What they answer. */
export type FromPostgresChild =
  | { readonly type: 'ready' }
  | { readonly type: 'result'; readonly records: readonly AcquisitionRecord[] }
  | { readonly type: 'error'; readonly message: string };

const opened = new Map<ContenderName, OpenContender>();
let worker = 0;

function reply(message: FromPostgresChild): void {
  process.send?.(message);
}

async function closeAll(): Promise<void> {
  await Promise.all([...opened.values()].map((contender) => contender.close().catch(() => undefined)));
  opened.clear();
}

async function handle(message: ToPostgresChild): Promise<void> {
  switch (message.type) {
    case 'open':
      worker = message.worker;
      for (const contender of CONTENDERS) opened.set(contender, openContender(contender, message.addresses));
      reply({ type: 'ready' });
      return;
    case 'go': {
      const contender = opened.get(message.contender);
      if (contender === undefined) throw new Error(`${message.contender} is not open`);
      reply({ type: 'result', records: await lockLoop(contender.lock(message.plan.name), worker, message.plan) });
      return;
    }
    case 'close':
      await closeAll();
      process.disconnect();
      return;
  }
}

process.on('message', (message: ToPostgresChild) => {
  handle(message).catch((error: unknown) => reply({ type: 'error', message: error instanceof Error ? error.message : String(error) }));
});
process.once('disconnect', () => {
  void closeAll().finally(() => process.exit(0));
});
process.once('SIGINT', () => undefined);
