/**
 * The Padlock behind a facade. The peers (redlock, redis-semaphore) take the user's clients and
 * have no close() of their own: users end them with `redis.quit()`. So a facade's Padlock lives as
 * long as its clients do: it closes (and with it the pub/sub connection it opened) when one of them
 * ends, and a program that quits its clients still exits by itself, as it did with the peer.
 */
import { Padlock } from '../padlock.js';
import type { RedisClient } from '../stores/redis/adapters/clients.js';

/** What a client offers to hear of its end: ioredis and node-redis both emit `end`. */
interface EndingClient {
  once(event: 'end', listener: () => void): unknown;
}

/** Per client, what to do when it ends: one `end` listener per client, however many facades use it. */
const onEnd = new WeakMap<object, Set<() => void>>();

/** Runs `then` once when `client` ends; returns a function that cancels it. */
function whenEnded(client: RedisClient, then: () => void): () => void {
  if (typeof (client as Partial<EndingClient>).once !== 'function') return () => undefined;
  let waiting = onEnd.get(client);
  if (waiting === undefined) {
    const callbacks = new Set<() => void>();
    waiting = callbacks;
    onEnd.set(client, callbacks);
    (client as unknown as EndingClient).once('end', () => {
      onEnd.delete(client);
      for (const callback of callbacks) callback();
    });
  }
  const set = waiting;
  set.add(then);
  return () => set.delete(then);
}

/** A Padlock opened for a facade, and how to close it before its clients end. */
export interface FacadePadlock {
  readonly padlock: Padlock;
  /** Closes the Padlock (releasing what it holds) and stops listening to its clients. */
  close(): Promise<void>;
}

/**
 * Opens a Padlock on `clients`: one client is one server (as the peers treat a single client, a
 * quorum of one), several are Redlock's independent masters.
 */
export function openFacadePadlock(clients: readonly RedisClient[]): FacadePadlock {
  const padlock = new Padlock({ redis: clients.length === 1 ? (clients[0]) : clients });
  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    for (const cancel of cancels) cancel();
    // Nothing runs under the facade's holds that close() should wait for: the peers had no drain.
    closing ??= padlock.close({ drainMs: 0 });
    return closing;
  };
  const cancels = clients.map((client) => whenEnded(client, () => void close().catch(() => undefined)));
  return { padlock, close };
}

/** One Padlock per client (or set of clients), shared by every lock object made on it. */
const shared = new WeakMap<RedisClient, { clients: readonly RedisClient[]; opened: FacadePadlock; closed: boolean }[]>();

/**
 * The Padlock that lock objects on `clients` share (redis-semaphore makes one object per lock
 * use, on one long-lived client): opened on first need, forgotten when a client ends.
 */
export function sharedPadlock(clients: readonly RedisClient[]): Padlock {
  const first = clients[0] as RedisClient;
  const entries = shared.get(first) ?? [];
  const found = entries.find((entry) => !entry.closed && entry.clients.length === clients.length && entry.clients.every((client, i) => client === clients[i]));
  if (found !== undefined) return found.opened.padlock;
  const opened = openFacadePadlock([...clients]);
  const entry = { clients: [...clients], opened, closed: false };
  for (const client of clients) {
    whenEnded(client, () => {
      entry.closed = true;
      const list = shared.get(first);
      if (list !== undefined) shared.set(first, list.filter((e) => e !== entry));
    });
  }
  shared.set(first, [...entries, entry]);
  return opened.padlock;
}
