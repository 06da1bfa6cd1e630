/**
 * Follows a client until it first connects, for {@link CommandConnection.firstConnection}: its
 * connection errors until then, and who waits for the outcome. A client that never reached Redis
 * (nothing listening, a wrong host) queues commands and retries quietly; without this, padlock's
 * calls waited out their reply time-out and said only "no reply".
 *
 * It listens to the client's `error` events only until the client is first ready (ioredis then does
 * not print its "Unhandled error event" lines: padlock's errors name the cause instead).
 */
import type { CommandConnection } from './connection.js';

/** Where a client stands: connected, connecting (or retrying), or neither (not yet asked to, or closed: a call goes out as usual). */
export type ClientState = 'ready' | 'connecting' | 'idle';

/** The events of a client's connection (ioredis and node-redis are both EventEmitters). */
export interface ConnectionEvents {
  on(event: string, listener: (...args: never[]) => void): unknown;
  off?(event: string, listener: (...args: never[]) => void): unknown;
}

/** One follower per client, however many Padlocks share it (one listener each, not one per Padlock). */
const followers = new WeakMap<ConnectionEvents, CommandConnection['firstConnection']>();

/** Makes {@link CommandConnection.firstConnection} for `client`, whose state `state` reads (made once per client). */
export function followFirstConnection(client: ConnectionEvents, state: () => ClientState): CommandConnection['firstConnection'] {
  let follower = followers.get(client);
  if (follower === undefined) followers.set(client, (follower = follow(client, state)));
  return follower;
}

function follow(client: ConnectionEvents, state: () => ClientState): CommandConnection['firstConnection'] {
  let connected = false;
  let lastError: Error | undefined;
  let waiting: { readonly promise: Promise<void>; resolve(): void; reject(error: Error): void } | undefined;
  const onError = (error: Error): void => {
    lastError = error;
    waiting?.reject(error);
    waiting = undefined;
  };
  // Closed by its owner (ioredis and node-redis say `end`): the call goes out, and the client fails
  // it at once with its own "closed" error.
  const onEnd = (): void => {
    waiting?.resolve();
    waiting = undefined;
  };
  const onReady = (): void => {
    connected = true;
    client.off?.('error', onError);
    client.off?.('ready', onReady);
    client.off?.('end', onEnd);
    waiting?.resolve();
    waiting = undefined;
  };
  let listening = false;
  const listen = (): void => {
    if (listening) return;
    listening = true;
    client.on('error', onError);
    client.on('ready', onReady);
    client.on('end', onEnd);
  };
  // A client ready when padlock got it has connected: a later outage is ridden out as any other.
  // Otherwise, from the start: an error the client meets before padlock's first call is the one to name.
  if (state() === 'ready') connected = true;
  else listen();
  return () => {
    if (connected) return undefined;
    const now = state();
    if (now === 'ready') {
      onReady();
      return undefined;
    }
    if (now === 'idle') return undefined;
    listen();
    if (lastError !== undefined) return Promise.reject(lastError);
    waiting ??= deferred();
    return waiting.promise;
  };
}

function deferred(): { readonly promise: Promise<void>; resolve(): void; reject(error: Error): void } {
  let resolve!: () => void;
  let reject!: (error: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}
