/**
 * A Padlock's liveness key (`<prefix>:client:<clientId>`): proof, to reapers, that the client whose
 * id its holds record is alive. While the Padlock holds a lock or waits for one, a small unref'd
 * timer rewrites the key every fifth of its expiry (`livenessMs`); once it has neither held nor
 * waited for a whole `livenessMs`, the timer stops and the key runs out; `close()` deletes it.
 *
 * Before any call that may grant a hold (which records this client as the holder), the Padlock
 * makes sure the key is written and has most of its time left ({@link Liveness.ensure}): a reaper
 * must never find a hold of this client without its key. That costs one call the first time (or
 * after an idle `livenessMs`), none in the steady state: the timer keeps the key fresh.
 */
import { monotonicNow, settleWithin } from './clock.js';
import { livenessKey } from './keys.js';
import { clientsAliveScript, livenessScript } from './scripts/index.js';
import type { ScriptCall, Topology } from './topology/topology.js';

/** The key is rewritten this many times per `livenessMs`. */
export const LIVENESS_REFRESHES = 5;

/** Keeps (ms > 0) or deletes (0) a liveness key. */
export function livenessCall(key: string, ms: number): ScriptCall<true> {
  return { script: livenessScript, keys: [key], args: [ms], lock: undefined };
}

/** How many of `keys` (liveness keys in one slot) exist. */
export function clientsAliveCall(keys: readonly string[]): ScriptCall<number> {
  return { script: clientsAliveScript, keys, args: [], lock: undefined };
}

/** What a {@link Liveness} needs of its Padlock. */
export interface LivenessHost {
  readonly topology: Topology;
  /** Whether the Padlock holds a lock now (the key must then stay alive). */
  holding(): boolean;
  /** A refresh failed (it is retried at the next tick; the key has time left). */
  failed(error: unknown): void;
}

export class Liveness {
  /** The key in Redis. */
  readonly key: string;
  /** How long the key lives after each write. */
  readonly ms: number;
  readonly #host: LivenessHost;
  /** Monotonic time until which the key surely lives (its last write's send time + `ms`). */
  #until = -Infinity;
  /** Monotonic time of the last acquisition attempt (holds are asked of the host). */
  #usedAt = -Infinity;
  #timer: NodeJS.Timeout | undefined;
  #writing: Promise<void> | undefined;
  #closed = false;

  constructor(host: LivenessHost, prefix: string, clientId: string, ms: number) {
    this.#host = host;
    this.key = livenessKey(prefix, clientId);
    this.ms = ms;
  }

  /** Time between two writes. */
  get refreshMs(): number {
    return this.ms / LIVENESS_REFRESHES;
  }

  /**
   * Called before every call that may grant this Padlock a hold: `undefined` when the key is known
   * to have at least 3/5 of its time left (the steady state: nothing to wait for), else the write
   * that makes it so, which the call must await. Starts the timer.
   */
  ensure(): Promise<void> | undefined {
    if (this.#closed) return undefined;
    const now = monotonicNow();
    this.#usedAt = now;
    this.#start();
    if (this.#until - now >= this.ms - 2 * this.refreshMs) return undefined;
    return this.#write();
  }

  /** Stops the timer and deletes the key (best effort, within `ms`). Safe to call twice. */
  async close(timeoutMs: number): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#stop();
    // Nothing was ever written: nothing to delete (a Padlock that never locked sends nothing).
    if (this.#until === -Infinity && this.#writing === undefined) return;
    const written = this.#writing ?? Promise.resolve();
    await settleWithin(
      written.catch(() => undefined).then(() => this.#host.topology.run(livenessCall(this.key, 0))),
      timeoutMs,
    );
  }

  /** Writes the key now (one write at a time: a second caller shares the first's). */
  #write(): Promise<void> {
    this.#writing ??= this.#send().finally(() => (this.#writing = undefined));
    return this.#writing;
  }

  async #send(): Promise<void> {
    const sentAt = monotonicNow();
    await this.#host.topology.run(livenessCall(this.key, this.ms));
    this.#until = Math.max(this.#until, sentAt + this.ms);
  }

  #start(): void {
    if (this.#timer !== undefined || this.#closed) return;
    this.#timer = setInterval(() => this.#tick(), this.refreshMs);
    // Holds and waits keep the process alive by their own connections; this timer must not.
    this.#timer.unref();
  }

  #stop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  #tick(): void {
    if (!this.#host.holding() && monotonicNow() - this.#usedAt > this.ms) {
      // Idle for a whole expiry: let the key run out; the next acquisition writes it again.
      this.#stop();
      return;
    }
    this.#write().catch((error: unknown) => this.#host.failed(error));
  }
}
