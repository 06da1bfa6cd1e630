/**
 * A worker process of bench/stores.ts: one Padlock per store, each with its own client, opened once;
 * on `go` it runs one worker's loop (store-padlocks.ts) on the store named and sends back its
 * records; on `close`, or when the parent goes away, it closes everything and exits.
 */
import { lockLoop, openStorePadlock, STORES, type LoopPlan, type StoreAddresses, type StoreName, type StorePadlock } from './store-padlocks.js';
import type { AcquisitionRecord } from './stats.js';

/** What bench/stores.ts sends its worker processes. */
export type ToStoresChild =
  | { readonly type: 'open'; readonly addresses: StoreAddresses; readonly worker: number }
  | { readonly type: 'go'; readonly store: StoreName; readonly plan: LoopPlan }
  | { readonly type: 'close' };

/** What they answer. */
export type FromStoresChild =
  | { readonly type: 'ready' }
  | { readonly type: 'result'; readonly records: readonly AcquisitionRecord[] }
  | { readonly type: 'error'; readonly message: string };

const opened = new Map<StoreName, StorePadlock>();
let worker = 0;

function reply(message: FromStoresChild): void {
  process.send?.(message);
}

async function closeAll(): Promise<void> {
  await Promise.all([...opened.values()].map((store) => store.close().catch(() => undefined)));
  opened.clear();
}

async function handle(message: ToStoresChild): Promise<void> {
  switch (message.type) {
    case 'open':
      worker = message.worker;
      for (const store of STORES) opened.set(store, await openStorePadlock(store, message.addresses));
      reply({ type: 'ready' });
      return;
    case 'go': {
      const store = opened.get(message.store);
      if (store === undefined) throw new Error(`store ${message.store} is not open`);
      const records = await lockLoop(store.padlock.mutex(message.plan.name), worker, message.plan);
      reply({ type: 'result', records });
      return;
    }
    case 'close':
      await closeAll();
      process.disconnect();
      return;
  }
}

process.on('message', (message: ToStoresChild) => {
  handle(message).catch((error: unknown) => reply({ type: 'error', message: error instanceof Error ? error.message : String(error) }));
});
// The parent gone (ended, or interrupted): close what is open and go.
process.once('disconnect', () => {
  void closeAll().finally(() => process.exit(0));
});
process.once('SIGINT', () => undefined);
