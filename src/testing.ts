/**
 * @internal The one documented test hook (docs/design.md, "Testing"): what a test may read of a
 * Padlock beyond its public API, and nothing more. Not exported from the package.
 */
import type { Observer } from './observability/observer.js';
import type { Padlock } from './padlock.js';
import type { Runtime } from './runtime.js';
import type { Store } from './store.js';
import { RedisStore } from './stores/redis/redis-store.js';
import type { Watchdog } from './watchdog.js';

/** The store-neutral parts of a Padlock. */
export interface PadlockInternals {
  readonly store: Store;
  /** The registry of holds and the async context. */
  readonly runtime: Runtime;
  readonly watchdog: Watchdog;
  /** The metrics (and timings) observer, while one records. */
  readonly observer: Observer | undefined;
}

/** The store-neutral parts of `padlock`. */
export function internals(padlock: Padlock): PadlockInternals {
  return padlock.shared;
}

/** The Redis store of `padlock` (its topology, subscriber, client id, liveness); throws on another store. */
export function redisInternals(padlock: Padlock): RedisStore {
  const { store } = padlock.shared;
  if (store instanceof RedisStore) return store;
  throw new TypeError(`this Padlock's store is ${store.description}, not Redis`);
}
