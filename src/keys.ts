/**
 * The Redis key layout of one lock (see docs/protocol.md). Every key and channel of a lock carries
 * the same hash tag, so that one script touches one Cluster slot.
 */

/** Keys and channel of one lock. */
export interface LockKeys {
  /** The lock's name as the caller gave it. */
  readonly name: string;
  /**
   * String: `<fence>|<owner>|<count>|<clients>|<log>`. Held while count ≥ 1, by `owner`, whose
   * clients (Padlocks: the one it was granted to, and any that re-entered it) are listed, comma-
   * separated; once freed, a tombstone (owner and clients empty, count 0) keeps the last fence and
   * the request log for an hour (see docs/protocol.md).
   */
  readonly lock: string;
  /**
   * List of queued waiters' entries, mutex and fair mutex alike, in arrival order (a woken mutex
   * waiter that someone else beat to the lock goes back to the head). An entry is
   * `owner|clientId|leaseMs|allowanceMs|kind|since|expiry` (`since`, `expiry`: ms on the server's
   * clock, `expiry` its heartbeat's; `kind` is `mutex` or `fair`). Nothing else indexes it: a waiter
   * sends back the entry its last call returned (its place) to find it (see docs/protocol.md).
   */
  readonly queue: string;
  /**
   * The prefix of the waiters' channels ({@link waiterChannel}); nothing is published on it itself.
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
    queue: `${base}:queue`,
    released: `${base}:released`,
  };
}

/** The two keys that acquire, enqueue, release, leave, reap, force-release and inspect take, in their `KEYS` order. */
export function scriptKeys(keys: LockKeys): string[] {
  return [keys.lock, keys.queue];
}

/**
 * The channel of one client (one Padlock) for one lock. A release, leave or force-release that gives
 * the turn to one of that client's queued waiters publishes to it: `<owner> wake <expiry>` (mutex:
 * the lock is free, try now) or `<owner> <fence> <pttl> <expiry>` (fair mutex: the lock is yours);
 * `expiry` is that of the waiter's entry the release took out of the queue.
 */
export function waiterChannel(keys: LockKeys, clientId: string): string {
  return `${keys.released}:${clientId}`;
}

/**
 * The channel on which a force-release names the lock it freed, `<prefix>:forced` (one per prefix,
 * no hash tag: on a Cluster, sharded, it lives in its own slot). Every Padlock that has held a lock
 * listens to it for its life; one that holds the lock named checks its holds at once.
 */
export function forcedChannel(prefix: string): string {
  return `${prefix}:forced`;
}

/**
 * The liveness key of one client (one Padlock): `<prefix>:client:<clientId>`. The Padlock keeps it,
 * with a short expiry, while it holds or waits for a lock; a hold whose clients' liveness keys are
 * all gone is reaped (see docs/protocol.md). It has no hash tag: on a Cluster it lives in its own
 * slot, not its locks'.
 */
export function livenessKey(prefix: string, clientId: string): string {
  return `${prefix}:client:${clientId}`;
}

/** Who holds a lock, as its key says (see {@link LockKeys.lock}): the owner token and the clients field. */
export interface Holder {
  readonly owner: string;
  /** The hold's clients field: client ids, comma-separated; `'*'` unknown (too many), `''` none recorded. */
  readonly clients: string;
}

/**
 * The client ids a hold's clients field lists (comma-separated); `undefined` when they are unknown:
 * `''` (none recorded) or `'*'` (more re-entered the hold than the field keeps). Such a hold is
 * never reaped.
 */
export function clientIds(clients: string): string[] | undefined {
  if (clients === '' || clients === '*') return undefined;
  return clients.split(',');
}
