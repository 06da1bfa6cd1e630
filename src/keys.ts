/**
 * The Redis key layout of one lock (see docs/protocol.md). Every key and channel of a lock carries
 * the same hash tag, so that one script touches one Cluster slot.
 */

/** Keys and channel of one lock. */
export interface LockKeys {
  /** The lock's name as the caller gave it. */
  readonly name: string;
  /** Hash: owner token → hold count, plus `:fence` (held exactly while present) and `:log` (see protocol.md). */
  readonly lock: string;
  /** The last fence given (decimal text), kept an hour after each acquisition (see _fence.lua). */
  readonly fence: string;
  /**
   * List of queued waiters' owner tokens, mutex and fair mutex alike, in arrival order (a woken mutex
   * waiter that someone else beat to the lock goes back to the head).
   */
  readonly queue: string;
  /**
   * Hash: queued owner token → `expiry:leaseMs:allowanceMs:kind:clientId`, its heartbeat (`expiry` in
   * ms on the server's clock; `kind` is `mutex` or `fair`).
   */
  readonly waiters: string;
  /**
   * Pub/sub channel on which `released` is published each time a release, leave or force-release
   * frees the lock without handing it over (nothing when a lease runs out). For observers: padlock's
   * waiters listen on their {@link waiterChannel}, named after it.
   */
  readonly released: string;
}

/**
 * Escapes a name for use inside a hash tag: `%`, `{` and `}` become `%25`, `%7B` and `%7D`,
 * so a name with braces can never split one lock's keys over two Cluster slots.
 */
export function hashTag(name: string): string {
  return name.replace(/[%{}]/g, (c) => (c === '%' ? '%25' : c === '{' ? '%7B' : '%7D'));
}

/** Builds the keys of lock `name` under `prefix`. */
export function lockKeys(prefix: string, name: string): LockKeys {
  const base = `${prefix}:{${hashTag(name)}}`;
  return {
    name,
    lock: `${base}:lock`,
    fence: `${base}:fence`,
    queue: `${base}:queue`,
    waiters: `${base}:waiters`,
    released: `${base}:released`,
  };
}

/** The four keys that acquire, release, leave and force-release take, in their `KEYS` order. */
export function scriptKeys(keys: LockKeys): string[] {
  return [keys.lock, keys.fence, keys.queue, keys.waiters];
}

/**
 * The channel of one client (one Padlock) for one lock. A release, leave or force-release that gives
 * the turn to one of that client's queued waiters publishes to it: `<owner> wake` (mutex: the lock
 * is free, try now) or `<owner> <fence> <pttl>` (fair mutex: the lock is yours).
 */
export function waiterChannel(keys: LockKeys, clientId: string): string {
  return `${keys.released}:${clientId}`;
}
