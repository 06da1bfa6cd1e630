/**
 * One pub/sub connection per Padlock, opened on first need. Channels are reference-counted: the
 * first watcher subscribes, the last one to leave unsubscribes. A message wakes one local sleeper
 * (no herd inside a process); every message also bumps the channel's generation, so a waiter whose
 * attempt was in flight when the message came can tell that it must try again rather than sleep.
 */
import type { SubscriberConnection } from './redis/connection.js';

interface Channel {
  refs: number;
  generation: number;
  ready: Promise<void>;
  /** Sleepers in arrival order; each is called at most once. */
  readonly sleepers: Array<() => void>;
}

/** A waiter's registration on one channel. */
export interface Watch {
  /** Resolves once the channel is subscribed (messages published after that are seen). */
  readonly ready: Promise<void>;
  /** Messages seen on the channel so far (plus reconnects). */
  readonly generation: number;
  /**
   * Sleeps until a message wakes this waiter or `ms` pass. Rejects with `signal.reason` on abort.
   * Resolves `true` when woken by a message, `false` on time-out.
   */
  sleep(ms: number, signal: AbortSignal | undefined): Promise<boolean>;
  /** Leaves the channel (unsubscribes when last). Safe to call twice. */
  close(): void;
}

export class Subscriber {
  #connection: SubscriberConnection | undefined;
  readonly #channels = new Map<string, Channel>();

  constructor(
    private readonly open: () => SubscriberConnection,
    private readonly onError: (error: unknown) => void,
  ) {}

  /** Number of channels currently subscribed (for tests and stats). */
  get channelCount(): number {
    return this.#channels.size;
  }

  #connect(): SubscriberConnection {
    if (this.#connection !== undefined) return this.#connection;
    const connection = this.open();
    connection.onMessage((channel) => this.#wakeOne(channel));
    // After a reconnect the client resubscribes, but messages sent meanwhile are gone: wake everyone.
    let first = true;
    connection.onReady(() => {
      if (first) first = false;
      else for (const name of this.#channels.keys()) this.#wakeAll(name);
    });
    connection.onError((error) => this.onError(error));
    this.#connection = connection;
    return connection;
  }

  /** Starts watching `channel`. */
  watch(name: string): Watch {
    const connection = this.#connect();
    let channel = this.#channels.get(name);
    if (channel === undefined) {
      const ready = connection.subscribe(name).then(() => undefined);
      channel = { refs: 0, generation: 0, ready, sleepers: [] };
      this.#channels.set(name, channel);
    }
    channel.refs++;
    const state = channel;
    let closed = false;
    return {
      ready: state.ready,
      get generation() {
        return state.generation;
      },
      sleep: (ms, signal) => sleep(state, ms, signal),
      close: () => {
        if (closed) return;
        closed = true;
        if (--state.refs > 0 || this.#channels.get(name) !== state) return;
        this.#channels.delete(name);
        connection.unsubscribe(name).catch((error: unknown) => this.onError(error));
      },
    };
  }

  #wakeOne(name: string): void {
    const channel = this.#channels.get(name);
    if (channel === undefined) return;
    channel.generation++;
    channel.sleepers.shift()?.();
  }

  #wakeAll(name: string): void {
    const channel = this.#channels.get(name);
    if (channel === undefined) return;
    channel.generation++;
    for (const wake of channel.sleepers.splice(0)) wake();
  }

  /** Closes the connection. Watches still open see no more messages. */
  async close(): Promise<void> {
    const connection = this.#connection;
    this.#connection = undefined;
    for (const channel of this.#channels.values()) for (const wake of channel.sleepers.splice(0)) wake();
    this.#channels.clear();
    if (connection !== undefined) await connection.close();
  }
}

function sleep(channel: Channel, ms: number, signal: AbortSignal | undefined): Promise<boolean> {
  return new Promise<boolean>((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const finish = (outcome: () => void): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      const index = channel.sleepers.indexOf(wake);
      if (index >= 0) channel.sleepers.splice(index, 1);
      outcome();
    };
    const wake = (): void => finish(() => resolve(true));
    const onAbort = (): void => finish(() => reject(signal?.reason));
    const timer = setTimeout(() => finish(() => resolve(false)), Math.max(0, ms));
    channel.sleepers.push(wake);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
