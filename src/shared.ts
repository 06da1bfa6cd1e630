/** What every lock of one Padlock shares: built once by the Padlock, handed to each lock it makes. */
import type { Emit, PadlockEvents } from './events.js';
import type { Liveness } from './liveness.js';
import type { Contact } from './locks/outage.js';
import type { Reaper } from './reaping.js';
import type { Observer } from './observability/observer.js';
import type { Runtime } from './runtime.js';
import type { Subscriber } from './subscriber.js';
import type { Topology } from './topology/topology.js';
import type { Watchdog } from './watchdog.js';

export interface Shared {
  /** Where the locks live: every call to Redis goes through it. */
  readonly topology: Topology;
  /** The one pub/sub connection. */
  readonly subscriber: Subscriber;
  /** The one renewal scheduler. */
  readonly watchdog: Watchdog;
  /** The registry of holds, the async context, close(). */
  readonly runtime: Runtime;
  /** Identifies this Padlock's channel for wake-ups and handoffs. */
  readonly clientId: string;
  readonly prefix: string;
  /** The default lease. */
  readonly leaseMs: number;
  readonly emit: Emit;
  /** Whether `event` has a listener: a payload made for nobody is not made. */
  readonly listens: (event: keyof PadlockEvents) => boolean;
  /** The metrics, while they record: told of every acquisition, refused attempt, hold's end and renewal. */
  readonly observer: Observer | undefined;
  /** The Padlock's liveness key: written before any call that may grant it a hold, kept while it holds or waits. */
  readonly liveness: Liveness;
  /** With `reapDeadHolders`: checks the holders of the locks this Padlock waits for. */
  readonly reaper: Reaper | undefined;
  /** Whether Redis ever answered this Padlock's waits: only then do they ride through an outage. */
  readonly contact: Contact;
}
