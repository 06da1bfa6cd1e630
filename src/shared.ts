/**
 * What every lock of one Padlock shares, whatever its store: built once by the Padlock, handed to
 * each lock it makes. What only one store's locks share is that store's own (stores/redis/redis-store.ts).
 */
import type { Emit, PadlockEvents } from './events.js';
import type { Observer } from './observability/observer.js';
import type { Runtime } from './runtime.js';
import type { Store } from './store.js';
import type { Watchdog } from './watchdog.js';

export interface Shared {
  /** Where the locks live, and what makes each kind there. */
  readonly store: Store;
  /** The one renewal scheduler. */
  readonly watchdog: Watchdog;
  /** The registry of holds, the async context, close(). */
  readonly runtime: Runtime;
  readonly prefix: string;
  /** The default lease. */
  readonly leaseMs: number;
  readonly emit: Emit;
  /** Whether `event` has a listener: a payload made for nobody is not made. */
  readonly listens: (event: keyof PadlockEvents) => boolean;
  /** The metrics, while they record: told of every acquisition, refused attempt, hold's end and renewal. */
  readonly observer: Observer | undefined;
}
