/**
 * One pub/sub connection per Padlock, opened on first need. Channels are reference-counted: the
 * first watcher subscribes; when the last leaves, the subscription lingers briefly (so a process
 * that waits again soon does not pay SUBSCRIBE/UNSUBSCRIBE each time) and is then dropped.
 *
 * Messages are addressed, `"<owner> …"` (a wake-up or a handoff for one waiter): each goes to the
 * sleeper waiting under that owner, or to a mailbox it reads before sleeping, so that a message
 * arriving while its waiter's attempt is in flight is never lost. After a reconnect every sleeper
 * is woken (messages sent meanwhile are gone), and asks Redis again.
 *
 * Beside them, a channel may be listened to for the Padlock's life ({@link Subscriber.listen}: the
 * force-release channel), outside the counts and the linger.
 */
import type { Abortable } from '../../interrupt.js';
import type { SubscriberConnection } from './adapters/connection.js';
import { wrap } from './adapters/script-runner.js';

/** How long an unused subscription is kept. */
const LINGER_MS = 2_000;

interface Sleeper {
  readonly owner: string;
  readonly wake: (message: string | null) => void;
}

interface Channel {
  refs: number;
  ready: Promise<void>;
  linger: NodeJS.Timeout | undefined;
  readonly sleepers: Sleeper[];
  readonly mailbox: Map<string, string>;
}

/** A waiter's registration on one channel. */
export interface Watch {
  /** Resolves once the channel is subscribed (messages published after that are seen). */
  readonly ready: Promise<void>;
  /**
   * Sleeps until a message addressed to `owner` comes or `ms` pass; rejects with `stop.reason` once
   * `stop` aborts. Resolves with the message, or `null` on time-out or reconnect.
   */
  sleep(ms: number, stop: Abortable, owner: string): Promise<string | null>;
  /** Takes (and removes) the message addressed to `owner` that came while it was not sleeping. */
  take(owner: string): string | undefined;
  /** Leaves the channel (unsubscribes after a linger when last). Safe to call twice. */
  close(): void;
}

export class Subscriber {
  #connection: SubscriberConnection | undefined;
  /** After close(), what the dropped connection still reports (its queued commands failing) is noise. */
  #closed = false;
  readonly #channels = new Map<string, Channel>();
  /** Channels listened to for the Padlock's life, and what each message is given to. */
  readonly #lifelong = new Map<string, (message: string) => void>();

  constructor(
    private readonly open: () => SubscriberConnection,
    private readonly onError: (error: unknown) => void,
  ) {}

  /** Number of channels currently subscribed (for tests and stats). */
  get channelCount(): number {
    return this.#channels.size;
  }

  /** Whether `name` is subscribed (or being subscribed) now. */
  isSubscribed(name: string): boolean {
    return this.#channels.has(name);
  }

  /** Number of channels with at least one watcher. */
  get activeChannelCount(): number {
    let n = 0;
    for (const channel of this.#channels.values()) if (channel.refs > 0) n++;
    return n;
  }

  #connect(): SubscriberConnection {
    if (this.#connection !== undefined) return this.#connection;
    const connection = this.open();
    connection.onMessage((channel, message) => this.#deliver(channel, message));
    // After a reconnect the client resubscribes, but messages sent meanwhile are gone: wake everyone.
    let first = true;
    connection.onReady(() => {
      if (first) first = false;
      else for (const channel of this.#channels.values()) wakeAll(channel);
    });
    connection.onError((error) => this.#report(error, connection));
    this.#connection = connection;
    return connection;
  }

  /** Starts watching `name`. */
  watch(name: string): Watch {
    const connection = this.#connect();
    let channel = this.#channels.get(name);
    if (channel === undefined) {
      const ready = connection.subscribe(name).then(
        () => undefined,
        (error: unknown) => {
          // A refused SUBSCRIBE (e.g. an ACL without the channel) leaves nothing to keep.
          if (this.#channels.get(name) === channel) this.#channels.delete(name);
          throw wrap(error, undefined, (e) => connection.isReplyError(e));
        },
      );
      ready.catch(() => undefined); // a waiter that awaits it sees the error
      channel = { refs: 0, ready, linger: undefined, sleepers: [], mailbox: new Map() };
      this.#channels.set(name, channel);
    }
    if (channel.linger !== undefined) {
      clearTimeout(channel.linger);
      channel.linger = undefined;
    }
    channel.refs++;
    const state = channel;
    let closed = false;
    return {
      ready: state.ready,
      sleep: (ms, stop, owner) => sleep(state, ms, stop, owner),
      take: (owner) => {
        const message = state.mailbox.get(owner);
        state.mailbox.delete(owner);
        return message;
      },
      close: () => {
        if (closed) return;
        closed = true;
        if (--state.refs > 0 || this.#channels.get(name) !== state) return;
        state.mailbox.clear();
        state.linger = setTimeout(() => {
          this.#channels.delete(name);
          connection.unsubscribe(name).catch((error: unknown) => this.#report(error, connection));
        }, LINGER_MS);
        state.linger.unref();
      },
    };
  }

  /**
   * Listens on `name` until close(), outside the reference counts: every message is given to
   * `onMessage`. Resolves once subscribed; rejects (typed) when the subscription is refused.
   */
  listen(name: string, onMessage: (message: string) => void): Promise<void> {
    const connection = this.#connect();
    this.#lifelong.set(name, onMessage);
    return connection.subscribe(name).then(
      () => undefined,
      (error: unknown) => {
        this.#lifelong.delete(name);
        throw wrap(error, undefined, (e) => connection.isReplyError(e));
      },
    );
  }

  /**
   * Reports a connection's trouble, typed as a call's would be (`RedisUnavailableError` with the
   * client's error as its cause, or `RedisCommandError`), so that the Padlock's error reports count
   * a failing connection as the outage it is (stores/redis/adapters/error-reports.ts).
   */
  #report(error: unknown, connection: SubscriberConnection): void {
    if (!this.#closed) this.onError(wrap(error, undefined, (e) => connection.isReplyError(e)));
  }

  #deliver(name: string, message: string): void {
    const lifelong = this.#lifelong.get(name);
    if (lifelong !== undefined) {
      lifelong(message);
      return;
    }
    const channel = this.#channels.get(name);
    const space = message.indexOf(' ');
    if (channel === undefined || space < 0) return;
    const owner = message.slice(0, space);
    const sleeper = channel.sleepers.find((s) => s.owner === owner);
    if (sleeper !== undefined) sleeper.wake(message);
    else if (channel.refs > 0) channel.mailbox.set(owner, message);
  }

  /** Closes the connection. Sleepers are woken; watches still open see no more messages. */
  async close(): Promise<void> {
    this.#closed = true;
    const connection = this.#connection;
    this.#connection = undefined;
    for (const channel of this.#channels.values()) {
      if (channel.linger !== undefined) clearTimeout(channel.linger);
      wakeAll(channel);
    }
    this.#channels.clear();
    this.#lifelong.clear();
    if (connection !== undefined) await connection.close();
  }
}

function wakeAll(channel: Channel): void {
  for (const sleeper of [...channel.sleepers]) sleeper.wake(null);
}

function sleep(channel: Channel, ms: number, stop: Abortable, owner: string): Promise<string | null> {
  return new Promise<string | null>((resolve, reject) => {
    if (stop.aborted) {
      reject(stop.reason);
      return;
    }
    const finish = (outcome: () => void): void => {
      clearTimeout(timer);
      stopListening();
      const index = channel.sleepers.indexOf(sleeper);
      if (index >= 0) channel.sleepers.splice(index, 1);
      outcome();
    };
    const sleeper: Sleeper = { owner, wake: (message) => finish(() => resolve(message)) };
    const timer = setTimeout(() => finish(() => resolve(null)), Math.max(0, ms));
    channel.sleepers.push(sleeper);
    const stopListening = stop.onAbort(() => finish(() => reject(stop.reason)));
  });
}
