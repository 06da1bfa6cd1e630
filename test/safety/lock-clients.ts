/**
 * The lock a worker drives, behind one small interface: padlock's own locks through the public
 * API, or one of the deliberately broken clients of broken-locks.ts.
 */
import type { Cluster, Redis } from 'ioredis';
import type { ReplicaOptions } from '../../src/options.js';
import { LockLostError, Padlock, type Lease, type Lockable } from '../../src/index.js';
import { ClientClockLock, NoNxLock, PlainDelLock } from './broken-locks.js';

/** Which lock a run exercises. */
export type LockKind = 'mutex' | 'fairMutex' | 'broken-plain-del' | 'broken-no-nx' | 'broken-client-clock';

/** A hold as the checker needs to see it. */
export interface HeldLock {
  readonly fence: number;
  readonly owner: string;
  /** Whether the client still claims the lock (its own conservative view). */
  isHeld(): boolean;
  /** The reason the client was told the lock was lost, or null. */
  lostReason(): string | null;
  release(): Promise<void>;
}

export interface SafetyLock {
  acquire(waitMs: number): Promise<HeldLock>;
  close(): Promise<void>;
}

export interface LockClientOptions {
  readonly kind: LockKind;
  /** A client of one server, a Sentinel-managed primary, a Cluster, or Redlock's masters (padlock's kinds only). */
  readonly redis: Redis | Cluster | readonly Redis[];
  /** padlock's replica acknowledgement, if the run asks for it. */
  readonly replicas?: ReplicaOptions | undefined;
  readonly name: string;
  readonly leaseMs: number;
}

/** Whether this build of padlock has `fairMutex` (it lands with the contention issue). */
export function hasFairMutex(padlock: Padlock): boolean {
  return typeof (padlock as unknown as { fairMutex?: unknown }).fairMutex === 'function';
}

function fairMutex(padlock: Padlock, name: string): Lockable {
  const factory = (padlock as unknown as { fairMutex?: (name: string) => Lockable }).fairMutex;
  if (factory === undefined) throw new Error('this build of padlock has no fairMutex');
  return factory.call(padlock, name);
}

class PadlockHeld implements HeldLock {
  constructor(private readonly lease: Lease) {}
  get fence(): number {
    return this.lease.fence;
  }
  get owner(): string {
    return this.lease.owner;
  }
  isHeld(): boolean {
    return this.lease.isHeld;
  }
  lostReason(): string | null {
    const reason: unknown = this.lease.signal.reason;
    if (!this.lease.signal.aborted) return null;
    return reason instanceof LockLostError ? reason.reason : String(reason);
  }
  release(): Promise<void> {
    return this.lease.release();
  }
}

class PadlockClient implements SafetyLock {
  readonly padlock: Padlock;
  readonly #lock: Lockable;

  constructor(options: LockClientOptions) {
    this.padlock = new Padlock({ redis: options.redis, leaseMs: options.leaseMs, replicas: options.replicas });
    // Renewal trouble is expected under faults; the checker judges the outcome.
    this.padlock.on('error', () => undefined);
    this.#lock = options.kind === 'fairMutex' ? fairMutex(this.padlock, options.name) : this.padlock.mutex(options.name);
  }

  async acquire(waitMs: number): Promise<HeldLock> {
    return new PadlockHeld(await this.#lock.acquire({ waitMs }));
  }

  close(): Promise<void> {
    return this.padlock.close();
  }
}

export function createLockClient(options: LockClientOptions): SafetyLock {
  switch (options.kind) {
    case 'mutex':
    case 'fairMutex':
      return new PadlockClient(options);
    case 'broken-plain-del':
      return new PlainDelLock(oneServer(options), options.name, options.leaseMs);
    case 'broken-no-nx':
      return new NoNxLock(oneServer(options), options.name, options.leaseMs);
    case 'broken-client-clock':
      return new ClientClockLock(oneServer(options), options.name, options.leaseMs);
  }
}

/** The broken variants are written for one server. */
function oneServer({ redis, kind }: LockClientOptions): Redis {
  if (Array.isArray(redis) || ('isCluster' in redis && redis.isCluster)) throw new Error(`${kind} runs on one server only`);
  return redis as Redis;
}
