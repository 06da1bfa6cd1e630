/**
 * One subscriber over several independent servers (Redlock's masters): a channel is subscribed on
 * every one, and a message from any reaches the listener. A release runs on every master, so its
 * wake-up comes from whichever answers first; one subscribed master is enough to hear it.
 */
import type { SubscriberConnection } from './connection.js';

export function fanInSubscriber(connections: readonly SubscriberConnection[]): SubscriberConnection {
  const each = <T>(act: (c: SubscriberConnection) => Promise<T>): Promise<PromiseSettledResult<T>[]> => Promise.allSettled(connections.map(act));
  return {
    // Ready once any master has subscribed (a silent one must not hold the waiter up); refused only
    // when every one refuses.
    subscribe: (channel) =>
      new Promise<void>((resolve, reject) => {
        let refused = 0;
        for (const c of connections) {
          c.subscribe(channel).then(
            () => resolve(),
            (error: unknown) => {
              if (++refused === connections.length) reject(error instanceof Error ? error : new Error(String(error)));
            },
          );
        }
      }),
    unsubscribe: async (channel) => {
      await each((c) => c.unsubscribe(channel));
    },
    onMessage: (listener) => connections.forEach((c) => c.onMessage(listener)),
    // One first "ready" for the whole; after that, each master's reconnect (whose messages sent
    // meanwhile are gone) is passed on, but not the other masters' first connections.
    onReady: (listener) => {
      let announced = false;
      for (const c of connections) {
        let connected = false;
        c.onReady(() => {
          if (!connected) {
            connected = true;
            if (announced) return;
            announced = true;
          }
          listener();
        });
      }
    },
    onError: (listener) => connections.forEach((c) => c.onError(listener)),
    isReplyError: (error) => connections.some((c) => c.isReplyError(error)),
    close: async () => {
      await each((c) => c.close());
    },
  };
}
