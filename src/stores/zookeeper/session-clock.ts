/**
 * How long this client's ZooKeeper session surely lives, by its own clock: the store's counterpart
 * of a Redis lease's conservative deadline.
 *
 * ZooKeeper expires a session `sessionTimeout` after the server last heard from it; every ephemeral
 * child (every hold) goes with it. The session is surely alive until `sent + sessionTimeout − drift`,
 * where `sent` is when this client sent the last request the ensemble answered. `node-zookeeper-client`
 * pings only when its socket is idle and never times a reply out (a frozen server keeps the socket
 * open and answers nothing, while the rest of the ensemble expires the session), so padlock sends its
 * own beat, a read of the root, every third of the session time-out, and counts only answered ones.
 * A session that expired, or whose deadline passed, is lost: every hold made under it is told.
 */
import type { Client } from 'node-zookeeper-client';
import { driftMs, monotonicNow } from '../../clock.js';

/** Why a session's holds are lost. */
export type SessionLoss = 'expired' | 'silent';

export class SessionClock {
  #aliveUntil: number;
  #lost: SessionLoss | undefined;
  readonly #listeners = new Set<(loss: SessionLoss) => void>();
  readonly #beat: NodeJS.Timeout;
  #deadline: NodeJS.Timeout | undefined;
  readonly #onExpired = (): void => this.#lose('expired');

  /** @param client a connected client */
  constructor(private readonly client: Client) {
    this.#aliveUntil = monotonicNow() + this.#validMs;
    client.once('expired', this.#onExpired);
    this.#beat = setInterval(() => void this.beat(), Math.max(50, Math.floor(client.getSessionTimeout() / 3)));
    this.#beat.unref();
    this.#arm();
  }

  /** The session's time-out as the servers granted it, in ms. */
  get sessionTimeoutMs(): number {
    return this.client.getSessionTimeout();
  }

  /** Monotonic time until which the session surely lives (−∞ once lost). */
  get aliveUntil(): number {
    return this.#lost === undefined ? this.#aliveUntil : -Infinity;
  }

  /** Why the session is lost, if it is. */
  get lost(): SessionLoss | undefined {
    return this.#lost;
  }

  /** Calls `listener` once when the session is lost; returns what stops listening. */
  onLost(listener: (loss: SessionLoss) => void): () => void {
    if (this.#lost !== undefined) {
      listener(this.#lost);
      return () => undefined;
    }
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Another call sent at `sentAt` was answered: the session lived then. */
  answered(sentAt: number): void {
    if (this.#lost !== undefined) return;
    this.#aliveUntil = Math.max(this.#aliveUntil, sentAt + this.#validMs);
  }

  /** Sends one beat now; resolves once it is answered (or fails). */
  beat(): Promise<void> {
    if (this.#lost !== undefined) return Promise.resolve();
    const sent = monotonicNow();
    return new Promise((resolve) => {
      this.client.exists('/', (error) => {
        if (error === null && this.#lost === undefined) {
          this.#aliveUntil = Math.max(this.#aliveUntil, sent + this.#validMs);
          this.#arm();
        }
        resolve();
      });
    });
  }

  /** Stops the beat; the session's holds are no longer watched. */
  close(): void {
    clearInterval(this.#beat);
    if (this.#deadline !== undefined) clearTimeout(this.#deadline);
    this.client.removeListener('expired', this.#onExpired);
    this.#listeners.clear();
  }

  get #validMs(): number {
    const timeout = this.client.getSessionTimeout();
    return timeout - driftMs(timeout);
  }

  /** (Re)sets the timer that declares the session lost when no beat was answered before its deadline. */
  #arm(): void {
    if (this.#deadline !== undefined) clearTimeout(this.#deadline);
    this.#deadline = setTimeout(() => {
      if (monotonicNow() >= this.#aliveUntil) this.#lose('silent');
      else this.#arm();
    }, Math.max(1, this.#aliveUntil - monotonicNow()));
    this.#deadline.unref();
  }

  #lose(loss: SessionLoss): void {
    if (this.#lost !== undefined) return;
    this.#lost = loss;
    clearInterval(this.#beat);
    if (this.#deadline !== undefined) clearTimeout(this.#deadline);
    for (const listener of this.#listeners) listener(loss);
    this.#listeners.clear();
  }
}
