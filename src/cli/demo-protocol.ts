/**
 * The messages between `padlock demo` and its seller processes (over the `child_process.fork` IPC
 * channel, JSON-serialised), and the work each sale does.
 */

/**
 * The phases of the sale, in order: how each guards the read-check-write (not at all, or with the
 * `Padlock` method of that name) and its display name. A new lock kind is one more line here.
 */
export const PHASES = [
  { lock: 'none', label: 'no lock' },
  { lock: 'mutex', label: 'mutex' },
  { lock: 'fairMutex', label: 'fairMutex' },
] as const satisfies readonly { lock: string; label: string }[];

/** How a phase guards the read-check-write: `'none'`, or the name of a `Padlock` lock factory. */
export type LockKind = (typeof PHASES)[number]['lock'];

/** Parent → seller: connect to Redis, then answer `ready`. Sent once, first. */
export interface ConnectMessage {
  readonly type: 'connect';
  /** Redis URL. */
  readonly url: string;
  /** Key prefix of the Padlock the seller creates. */
  readonly prefix: string;
}

/** Parent → seller: sell until the stock reads 0, then answer `done`. */
export interface RunMessage {
  readonly type: 'run';
  readonly lock: LockKind;
  /** Name of the lock guarding the sale (unused when `lock` is `'none'`). */
  readonly lockName: string;
  /** String key holding the tickets left. */
  readonly stockKey: string;
  /** Counter of tickets sold. */
  readonly soldKey: string;
  /** The simulated work between reading and writing the stock (the "payment"), in ms. */
  readonly workMs: number;
  /** Upper bound of the random pause between two customers, in ms, outside any lock. */
  readonly thinkMs: number;
}

/** Parent → seller: close connections and exit 0. */
export interface StopMessage {
  readonly type: 'stop';
}

/** Everything a seller receives. */
export type ToSeller = ConnectMessage | RunMessage | StopMessage;

/** Seller → parent: what one seller did in one phase. */
export interface SellerResult {
  /** Tickets this seller sold. */
  readonly sold: number;
  /** Locks this seller acquired (0 without a lock). */
  readonly acquisitions: number;
  /** How long each acquisition waited, in ms. */
  readonly waitsMs: readonly number[];
}

/** Everything a seller sends. */
export type FromSeller =
  | { readonly type: 'ready' }
  /** Tickets sold so far in the current phase (sent at most every ~40 ms). */
  | { readonly type: 'progress'; readonly sold: number }
  | ({ readonly type: 'done' } & SellerResult)
  /** The seller failed; it exits 1 after sending this. */
  | { readonly type: 'error'; readonly message: string };

/** Simulated work inside the read-check-write window: long enough to be realistic, short enough to be quick. */
export const WORK_MS = 1;
/** Random pause between two customers, outside the window. */
export const THINK_MS = 2;
