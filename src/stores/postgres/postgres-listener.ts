/**
 * The one `LISTEN` connection of a Padlock on PostgreSQL: a client checked out of the pool on the
 * first hold or wait and kept until `close()`, listening on a channel of this Padlock's own. The
 * server's `wake` sends one `NOTIFY` per waiter that may hold now, on its Padlock's channel, naming
 * its owner: a release wakes the waiter it lets in, no other Padlock hears of it, and here only that
 * owner's wait looks again. A force-release sends `forced <name>` on each holder's channel: the
 * Padlock checks its holds of that name at once (a hint only: owner tokens have no space, so the two
 * never mix).
 *
 * A wake-up is never lost: a notification that comes before its waiter sleeps is kept (`pending`);
 * a connection that drops wakes every waiter (a notification may have been lost with it), and each
 * looks again once a new connection listens. Each connection first proves that `NOTIFY` reaches it
 * (a pooler in transaction mode, such as PgBouncer's, takes `LISTEN` and never delivers).
 */
import { randomBytes } from 'node:crypto';
import type { Notification, Pool, PoolClient } from 'pg';
import { bound } from '../../clock.js';
import { PostgresUnavailableError } from '../../errors.js';
import { passing } from './postgres-errors.js';
import type { WaitScope } from '../../wait-scope.js';
import type { PostgresOps } from './postgres-ops.js';

/** One waiting owner's wake-up. */
export interface Waker {
  /** Resolves when woken (a notification for its owner, the connection dropped) or after `ms`; rejects with the scope's reason when it stops. */
  sleep(ms: number, scope: WaitScope): Promise<void>;
  /** Stops listening for this owner. */
  dispose(): void;
}

interface WakerState {
  pending: boolean;
  wake: (() => void) | undefined;
}

export class PostgresListener {
  /** This Padlock's channel (quoted where it is an identifier: it is case-sensitive). */
  readonly channel = `padlock_${randomBytes(8).toString('hex')}`;
  /** Goes up each time a listening connection is lost: a waiter that saw it change looks again. */
  generation = 0;
  #client: PoolClient | undefined;
  #connecting: Promise<void> | undefined;
  #closed = false;
  readonly #wakers = new Map<string, Set<WakerState>>();
  readonly #probes = new Map<string, () => void>();

  constructor(
    private readonly pool: Pool,
    private readonly ops: PostgresOps,
    private readonly replyTimeoutMs: number,
    /** Told when the listening connection is lost. */
    private readonly report: (error: unknown) => void,
    /** Told the name of a lock a force-release freed of this Padlock's holds. */
    private readonly forced: (name: string) => void,
  ) {}

  /** Whether a connection listens now (a waiter may queue: its wake-up will reach it). */
  get listening(): boolean {
    return this.#client !== undefined;
  }

  /** Makes sure a connection listens (connects, `LISTEN`s and proves it hears a `NOTIFY`). */
  listen(): Promise<void> {
    if (this.#client !== undefined) return Promise.resolve();
    if (this.#closed) return Promise.reject(new PostgresUnavailableError(undefined, undefined, 'the Padlock is closing'));
    this.#connecting ??= this.#connect().finally(() => (this.#connecting = undefined));
    return this.#connecting;
  }

  /** A wake-up for `owner`'s wait, registered before its take (so no notification comes unseen). */
  waker(owner: string): Waker {
    const state: WakerState = { pending: false, wake: undefined };
    const set = this.#wakers.get(owner) ?? new Set<WakerState>();
    set.add(state);
    this.#wakers.set(owner, set);
    return {
      sleep: (ms, scope) => sleep(state, ms, scope),
      dispose: () => {
        set.delete(state);
        if (set.size === 0 && this.#wakers.get(owner) === set) this.#wakers.delete(owner);
      },
    };
  }

  /** Lets the connection go (destroyed, not returned to the pool: it listens) and wakes every waiter. */
  close(): void {
    this.#closed = true;
    const client = this.#client;
    this.#client = undefined;
    if (client !== undefined) destroy(client);
    this.#wakeAll();
  }

  async #connect(): Promise<void> {
    const client = await bound(this.pool.connect(), {
      ms: this.replyTimeoutMs,
      timeout: () => passing(new PostgresUnavailableError(undefined, undefined, `no connection from the pool within ${this.replyTimeoutMs} ms`)),
      late: (late) => late.release(),
    });
    const dropped = (error?: unknown): void => this.#dropped(client, error);
    client.on('error', dropped);
    client.on('end', dropped);
    client.on('notification', (message) => this.#notified(message));
    try {
      await bound(client.query(`LISTEN "${this.channel}"`), { ms: this.replyTimeoutMs, timeout: () => passing(new PostgresUnavailableError(undefined, undefined, `no answer to LISTEN within ${this.replyTimeoutMs} ms`)) });
      await this.#probe();
    } catch (error) {
      destroy(client);
      throw error;
    }
    if (this.#closed) {
      destroy(client);
      throw new PostgresUnavailableError(undefined, undefined, 'the Padlock is closing');
    }
    this.#client = client;
  }

  /** Sends a `NOTIFY` through the pool and waits for it here: a pooler that breaks `LISTEN` is told apart from a slow server. */
  async #probe(): Promise<void> {
    const payload = `probe ${randomBytes(8).toString('hex')}`;
    const heard = new Promise<void>((resolve) => this.#probes.set(payload, resolve));
    // Half the reply time-out: the connection, LISTEN and this probe together fit in the waiter's bound on one call.
    const ms = Math.ceil(this.replyTimeoutMs / 2);
    try {
      await this.ops.notify(this.channel, payload);
      await bound(heard, {
        ms,
        timeout: () =>
          new PostgresUnavailableError(
            undefined,
            undefined,
            `LISTEN received no NOTIFY within ${ms} ms: a pooler in transaction or statement mode (PgBouncer's) does not keep LISTEN; give padlock a pool that reaches PostgreSQL directly or through session pooling`,
          ),
      });
    } finally {
      this.#probes.delete(payload);
    }
  }

  #notified(message: Notification): void {
    if (message.channel !== this.channel) return;
    const payload = message.payload ?? '';
    const probe = this.#probes.get(payload);
    if (probe !== undefined) return probe();
    if (payload.startsWith(FORCED)) return this.forced(payload.slice(FORCED.length));
    for (const state of this.#wakers.get(payload) ?? []) wake(state);
  }

  #dropped(client: PoolClient, error?: unknown): void {
    if (client !== this.#client) return;
    this.#client = undefined;
    this.generation++;
    destroy(client);
    if (!this.#closed) this.report(new PostgresUnavailableError(undefined, error, 'the LISTEN connection was lost; waiters look again on a new one'));
    this.#wakeAll();
  }

  #wakeAll(): void {
    for (const set of this.#wakers.values()) for (const state of set) wake(state);
  }
}

/** The start of a force-release's notice (postgres-schema.ts's `force_release`), before the lock's name. */
const FORCED = 'forced ';

function wake(state: WakerState): void {
  state.pending = true;
  state.wake?.();
}

/** Releases a listening client to the pool as broken (the pool closes it). */
function destroy(client: PoolClient): void {
  try {
    client.release(true);
  } catch {
    // Released already (a second 'end' or 'error'): nothing left to do.
  }
}

function sleep(state: WakerState, ms: number, scope: WaitScope): Promise<void> {
  scope.check();
  if (state.pending) {
    state.pending = false;
    return Promise.resolve();
  }
  return new Promise<void>((resolve, reject) => {
    const finish = (settle: () => void): void => {
      clearTimeout(timer);
      stopWatching();
      state.wake = undefined;
      state.pending = false;
      settle();
    };
    const timer = setTimeout(() => finish(resolve), Math.max(1, ms));
    const stopWatching = scope.stop.onAbort(() => finish(() => reject(scope.stop.reason)));
    state.wake = () => finish(resolve);
  });
}
