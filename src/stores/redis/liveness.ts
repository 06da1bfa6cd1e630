/**
 * A Padlock's liveness key (`<prefix>:client:<clientId>`): proof, to reapers, that the client whose
 * id its holds record is alive. While the Padlock holds a lock or waits for one, a small unref'd
 * timer rewrites the key every fifth of its expiry (`livenessMs`); when it does neither, the timer
 * stops and the key runs out by itself; `close()` deletes it.
 *
 * Before any call that may grant a hold (which records this client as the holder), the Padlock
 * makes sure the key exists and will outlive the grant ({@link Liveness.ensure}): a reaper must
 * never find a hold of this client without its key. In the steady state that costs nothing: the
 * timer keeps the key fresh, and a key that has aged (the timer stopped between two holds) is
 * rewritten alongside the call, without waiting for it; only the first grant, or one after an idle
 * spell long enough for the key to be nearly gone, waits for the write.
 */
import { monotonicNow, settleWithin } from '../../clock.js';
import { livenessKey } from '../../keys.js';
import { clientsAliveScript, livenessScript } from './scripts/index.js';
import { majorityQuorum, oneServerOnly } from './topology/quorum.js';
import type { ScriptCall, Topology } from './topology/topology.js';

/** The key is rewritten this many times per `livenessMs`. */
export const LIVENESS_REFRESHES = 5;

/** Keeps (ms > 0) or deletes (0) a liveness key. */
export function livenessCall(key: string, ms: number): ScriptCall<true> {
  return { script: livenessScript, keys: [key], args: [ms], lock: undefined, quorum: majorityQuorum };
}

/**
 * How many of `keys` (liveness keys in one slot) exist. One server's count: where each master keeps
 * its own copy of the keys (Redlock), the reap script reads them there instead (stores/redis/reaping.ts).
 */
export function clientsAliveCall(keys: readonly string[]): ScriptCall<number> {
  return { script: clientsAliveScript, keys, args: [], lock: undefined, quorum: oneServerOnly() };
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
  /** Waits under way (acquisitions that may be granted, or handed the lock, at any moment). */
  #waits = 0;
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
   * Called before every call that may grant this Padlock a hold. `undefined` when nothing need be
   * waited for: the key has at least 3/5 of `ms` left, or at least 2/5 (then it is rewritten now,
   * in the background: it outlives the grant either way). Else the write, which the call must
   * await (the first grant, or after an idle spell). Starts the timer.
   */
  ensure(): Promise<void> | undefined {
    if (this.#closed) return undefined;
    this.#start();
    const left = this.#until - monotonicNow();
    if (left >= this.ms - 2 * this.refreshMs) return undefined;
    if (left >= 2 * this.refreshMs) {
      this.#write().catch((error: unknown) => this.#host.failed(error));
      return undefined;
    }
    return this.#write();
  }

  /** A wait begins (the key must live until it ends: a fair handoff may grant it at any moment); call the function returned when it ends. */
  beginWait(): () => void {
    this.#waits++;
    this.#start();
    let ended = false;
    return () => {
      if (!ended) this.#waits--;
      ended = true;
    };
  }

  /** A hold was registered: keep the key alive while it lasts. */
  held(): void {
    this.#start();
  }

  /** Stops the timer and deletes the key (best effort, within `ms`). Safe to call twice. */
  async close(timeoutMs: number): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#stop();
    // Never written (a Padlock that never locked sends nothing), or never answered (a Redis never
    // reached): nothing to delete. A write still in flight is not waited for: the key it may leave
    // runs out by itself, and no hold names this client (a grant waits for the key's first write).
    if (this.#until === -Infinity) return;
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
    if (!this.#host.holding() && this.#waits === 0) {
      // Nothing held, nothing waited for: let the key age and run out. A hold or a wait starts the
      // timer again (and an attempt rewrites the key first if it is nearly gone).
      this.#stop();
      return;
    }
    this.#write().catch((error: unknown) => this.#host.failed(error));
  }
}
