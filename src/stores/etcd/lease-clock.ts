/**
 * The one etcd lease a client's holds all live by, kept alive, and how long it surely lives by this
 * client's own clock: the store's counterpart of the batched watchdog and a Redis lease's
 * conservative deadline.
 *
 * etcd expires a lease its TTL after the leader last renewed it; every key attached to it (every
 * hold and every queued waiter of this client) goes with it. The lease is surely alive until
 * `sent + ttl − drift`, where `sent` is when this client sent the last keep-alive that etcd answered
 * with a live TTL (the leader renewed it no earlier than that). Beats go every third of the TTL,
 * each try bounded as any call's is (EtcdOps.tryMs), not by a whole beat: a frozen member keeps its
 * connection open and answers nothing, while the rest of the cluster lets the lease expire; and a
 * renewal a member took during an election may stay unanswered after it (seen: 0.7-1 s after a new
 * leader was elected, while one sent then was answered at once). A lease that etcd says is gone
 * (expired or revoked), or whose deadline passed, is lost: every hold under it is told.
 */
import { driftMs, monotonicNow } from '../../clock.js';
import type { LockLostReason } from '../../errors.js';
import type { EtcdOps } from './etcd-client.js';

/** How soon an unanswered renewal is sent again. */
const RETRY_MS = 150;

/** Why a lease's holds are lost: etcd said the lease is gone, or no renewal was answered in time. */
export type LeaseLoss = 'revoked' | 'silent';

/** The reason a hold lost with its lease reports (errors.ts). */
export function lostReason(loss: LeaseLoss): LockLostReason {
  return loss === 'revoked' ? 'taken' : 'expired';
}

/** One client's lease, renewed, with the deadline its holds live by (see the file's comment). */
export class LeaseClock {
  #aliveUntil: number;
  #ttlMs: number;
  #lost: LeaseLoss | undefined;
  #closed = false;
  readonly #listeners = new Set<(loss: LeaseLoss) => void>();
  #beat: NodeJS.Timeout | undefined;
  #deadline: NodeJS.Timeout | undefined;

  /**
   * Grants a lease of `leaseMs` (etcd counts whole seconds and may raise a short TTL to its minimum:
   * the granted TTL is the one used) and keeps it alive.
   */
  static async grant(ops: EtcdOps, leaseMs: number): Promise<LeaseClock> {
    const sent = monotonicNow();
    const granted = await ops.grantLease(Math.max(1, Math.ceil(leaseMs / 1_000)));
    return new LeaseClock(ops, granted.id, granted.ttlMs, sent);
  }

  private constructor(
    private readonly ops: EtcdOps,
    /** The lease's id (decimal, as `etcd3` gives it). */
    readonly id: string,
    ttlMs: number,
    sent: number,
  ) {
    this.#ttlMs = ttlMs;
    this.#aliveUntil = sent + this.#validMs(ttlMs);
    this.#arm();
    this.#next(this.beatMs);
  }

  /** The lease's TTL as etcd granted it, in ms. */
  get ttlMs(): number {
    return this.#ttlMs;
  }

  /** How often the lease is renewed, in ms. */
  get beatMs(): number {
    return Math.max(50, Math.floor(this.#ttlMs / 3));
  }

  /** Monotonic time until which the lease surely lives (−∞ once lost). */
  get aliveUntil(): number {
    return this.#lost === undefined ? this.#aliveUntil : -Infinity;
  }

  /** Whether the lease surely lives now. */
  get alive(): boolean {
    return monotonicNow() < this.aliveUntil;
  }

  /** Why the lease is lost, if it is. */
  get lost(): LeaseLoss | undefined {
    return this.#lost;
  }

  /** Calls `listener` once when the lease is lost; returns what stops listening. */
  onLost(listener: (loss: LeaseLoss) => void): () => void {
    if (this.#lost !== undefined) {
      listener(this.#lost);
      return () => undefined;
    }
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * Renews the lease once now; resolves with whether etcd answered within one try's bound (a beat,
   * when that is shorter). An unanswered renewal leaves the deadline where the last answer put it.
   */
  async beat(): Promise<boolean> {
    if (this.#lost !== undefined || this.#closed) return false;
    const sent = monotonicNow();
    let ttlMs: number;
    try {
      ttlMs = await this.ops.keepAlive(this.id, Math.min(this.ops.tryMs, this.beatMs));
    } catch {
      return false;
    }
    if (this.#lost !== undefined || this.#closed) return false;
    if (ttlMs <= 0) {
      this.#lose('revoked');
      return false;
    }
    this.#ttlMs = ttlMs;
    this.#aliveUntil = Math.max(this.#aliveUntil, sent + this.#validMs(ttlMs));
    this.#arm();
    return true;
  }

  /** etcd said the lease is gone (a read found its TTL spent): lost now, not at the next renewal. */
  gone(): void {
    this.#lose('revoked');
  }

  /**
   * etcd answered a read of the lease's TTL, sent at `sent` (monotonic), with `remainingMs` left: the
   * lease surely lives until `sent + remainingMs − drift`, as after a renewal, and the deadline moves
   * there if that is later. A waiter reads its lease's TTL as it wakes; after an election the new
   * leader has extended every lease (etcd's lessor promotes them by an election time-out), while
   * this client's renewals may go unanswered for a while longer, so that read is the freshest proof
   * the lease lives. Without it, a wait served just after an election was given a hold that its
   * client's deadline took away a moment later. A lease already lost stays lost.
   */
  confirm(sent: number, remainingMs: number): void {
    if (remainingMs <= 0) return this.gone();
    if (this.#lost !== undefined || this.#closed) return;
    const until = sent + this.#validMs(remainingMs);
    if (until <= this.#aliveUntil) return;
    this.#aliveUntil = until;
    this.#arm();
  }

  /**
   * Stops renewing; with `revoke` (the default) revokes the lease, so every key this client left
   * (holds and waits) is deleted at once rather than at the TTL's end.
   */
  async close(revoke = true): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#beat);
    if (this.#deadline !== undefined) clearTimeout(this.#deadline);
    this.#listeners.clear();
    if (revoke) await this.ops.revokeLease(this.id);
  }

  /**
   * Schedules the next renewal in `ms`. After an unanswered one the next goes soon (a member died, a
   * leader is being elected, the client's pick was a dead host): a lease must not run out for want
   * of asking again while another member can answer.
   */
  #next(ms: number): void {
    if (this.#lost !== undefined || this.#closed) return;
    this.#beat = setTimeout(() => {
      void this.beat().then((answered) => this.#next(answered ? this.beatMs : Math.min(RETRY_MS, this.beatMs)));
    }, ms);
    this.#beat.unref();
  }

  #validMs(ttlMs: number): number {
    return ttlMs - driftMs(ttlMs);
  }

  /** (Re)sets the timer that declares the lease lost when no renewal was answered before its deadline. */
  #arm(): void {
    if (this.#deadline !== undefined) clearTimeout(this.#deadline);
    this.#deadline = setTimeout(() => {
      if (monotonicNow() >= this.#aliveUntil) this.#lose('silent');
      else this.#arm();
    }, Math.max(1, this.#aliveUntil - monotonicNow()));
    this.#deadline.unref();
  }

  #lose(loss: LeaseLoss): void {
    if (this.#lost !== undefined || this.#closed) return;
    this.#lost = loss;
    clearTimeout(this.#beat);
    if (this.#deadline !== undefined) clearTimeout(this.#deadline);
    for (const listener of this.#listeners) listener(loss);
    this.#listeners.clear();
  }
}
