/**
 * What workers tell the checker, and the messages between the parent and its workers. Times are
 * `process.hrtime.bigint()` nanoseconds: one monotonic clock shared by every process on the machine.
 * They cross IPC as decimal strings (JSON has no bigint).
 */

/** One critical section, as its worker saw it. */
export interface SectionRecord {
  readonly worker: number;
  readonly slot: number;
  readonly seq: number;
  readonly owner: string;
  readonly fence: number;
  /** When the worker started waiting for the lock. */
  readonly waitStartedAt: bigint;
  /** When `acquire` resolved. */
  readonly acquiredAt: bigint;
  /**
   * The last instant at which the client still said it held the lock (the stamp is taken before
   * asking, so the hold was valid at least until then); `null` if it never did.
   */
  readonly validUntil: bigint | null;
  /** When the section ended (release settled); `null` when the worker died inside it. */
  readonly releasedAt: bigint | null;
  readonly read: 'ok' | 'refused' | 'error' | 'none';
  readonly write: 'ok' | 'refused' | 'skipped' | 'error' | 'none';
  /** The `LockLostError` reason when the lease's signal fired during the section. */
  readonly lost: string | null;
  /** Name of the error `release()` rejected with, if any. */
  readonly releaseError: string | null;
}

/** An acquire call that rejected (the worker tries again). */
export interface AcquireFailure {
  readonly worker: number;
  readonly error: string;
  readonly message: string;
  /** How long the call took before rejecting, in ms. */
  readonly tookMs: number;
}

type Wire<T> = { readonly [K in keyof T]: T[K] extends bigint ? string : T[K] extends bigint | null ? string | null : T[K] };

/** A section record as it crosses IPC. */
export type WireSection = Wire<SectionRecord>;

export function toWire(record: SectionRecord): WireSection {
  return {
    ...record,
    waitStartedAt: String(record.waitStartedAt),
    acquiredAt: String(record.acquiredAt),
    validUntil: record.validUntil === null ? null : String(record.validUntil),
    releasedAt: record.releasedAt === null ? null : String(record.releasedAt),
  };
}

export function fromWire(wire: WireSection): SectionRecord {
  return {
    ...wire,
    waitStartedAt: BigInt(wire.waitStartedAt),
    acquiredAt: BigInt(wire.acquiredAt),
    validUntil: wire.validUntil === null ? null : BigInt(wire.validUntil),
    releasedAt: wire.releasedAt === null ? null : BigInt(wire.releasedAt),
  };
}

/** Worker → parent. */
export type WorkerMessage =
  | { readonly type: 'ready'; readonly worker: number }
  /** A section is under way (sent after acquire, and again at the linger point as 'holding'). */
  | { readonly type: 'acquired' | 'holding'; readonly record: WireSection }
  | { readonly type: 'section'; readonly record: WireSection }
  | { readonly type: 'acquire-failed'; readonly failure: AcquireFailure }
  | { readonly type: 'done'; readonly worker: number };

/** Parent → worker. */
export type ParentMessage =
  /** Ends a linger (see `WorkerConfig.linger`). */
  | { readonly type: 'continue' }
  /** Starts a worker configured with `waitForGo`. */
  | { readonly type: 'go' }
  /** Finish the sections under way, start no more, and exit. */
  | { readonly type: 'stop' };

export function isWorkerMessage(value: unknown): value is WorkerMessage {
  return typeof value === 'object' && value !== null && typeof (value as { type?: unknown }).type === 'string';
}

/** Nanoseconds to milliseconds, for reports. */
export function ms(ns: bigint): number {
  return Number(ns) / 1e6;
}
