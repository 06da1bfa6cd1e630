/**
 * A checker run from the test's side: a lock server and a separate store server (so faults on the
 * lock's server never touch the protected store), K workers, an optional fault injected while they
 * run, and the checker's report at the end. The parent can also hold the lock itself, recorded like
 * a worker's section (worker -1), to play "the next holder" deterministically.
 */
import type { Redis } from 'ioredis';
import type { RedisServer, RedisServerOptions } from '../../src/devserver/redis-server.js';
import type { Lease, Lockable } from '../../src/index.js';
import { check, type SafetyReport } from './checker.js';
import { FencedStore, type StoreMode } from './fenced-store.js';
import { Fleet, type WorkerExit, type WrapperFor, type WorkerHandle } from './fleet.js';
import type { LockKind } from './lock-clients.js';
import type { SectionRecord } from './records.js';
import type { Endpoint, LockTopology, WorkerConfig } from './worker.js';
import type { ReplicaOptions } from '../../src/options.js';

export interface Servers {
  readonly lock: RedisServer;
  readonly store: RedisServer;
  /** A client of the lock's server, for inspection and fault injection. */
  readonly admin: Redis;
  readonly storeClient: Redis;
}

/** How servers and clients are made: the test harness (cleaned up after the file) or the soak's own. */
export interface Provider {
  startServer(options?: RedisServerOptions): Promise<RedisServer>;
  connect(server: RedisServer): Redis;
}

export async function openServers(provider: Provider, lockOptions: RedisServerOptions = {}): Promise<Servers> {
  const [lock, store] = await Promise.all([provider.startServer(lockOptions), provider.startServer()]);
  return { lock, store, admin: provider.connect(lock), storeClient: provider.connect(store) };
}

let runs = 0;

export interface RunOptions {
  readonly kind?: LockKind;
  readonly workers: number;
  readonly slots?: number;
  readonly sections: number;
  readonly leaseMs?: number;
  readonly waitMs?: number;
  readonly workMs?: readonly [number, number];
  readonly stall?: WorkerConfig['stall'];
  readonly storeMode?: StoreMode;
  readonly name?: string;
  readonly seed?: number;
  /** Per-worker overrides (linger, clock, ...). */
  readonly configure?: (worker: number) => Partial<WorkerConfig>;
  /** Where workers reach the lock's server (e.g. through a proxy); the lock server by default. */
  readonly lockEndpoint?: Endpoint;
  /** A Cluster or Sentinel set holding the lock instead of the lock server. */
  readonly lockTopology?: LockTopology;
  /** padlock's replica acknowledgement in the workers. */
  readonly replicas?: ReplicaOptions;
  readonly storeEndpoint?: Endpoint;
  /** Runs some workers through a wrapper (e.g. inside a network namespace). */
  readonly wrap?: WrapperFor;
  /** Runs alongside the workers: inject faults here. */
  readonly during?: (fleet: Fleet) => Promise<void>;
  /** Sections the parent held itself, added to the check. */
  readonly parentSections?: () => readonly SectionRecord[];
  /** Workers still running after this are killed (and their unfinished sections count as unserved). */
  readonly timeoutMs?: number;
  /** Workers the run killed on purpose: their sections not done are not counted as unserved. */
  readonly killed?: ReadonlySet<number>;
}

export interface RunResult {
  readonly report: SafetyReport;
  readonly fleet: Fleet;
  readonly exits: readonly WorkerExit[];
  readonly store: FencedStore;
}

export async function runChecked(servers: Servers, options: RunOptions): Promise<RunResult> {
  const name = options.name ?? `safety-${process.pid}-${++runs}`;
  const store = new FencedStore(servers.storeClient, name);
  await store.reset(options.storeMode ?? 'checked');
  const slots = options.slots ?? 1;
  const configs = Array.from({ length: options.workers }, (_, worker): WorkerConfig => ({
    worker,
    kind: options.kind ?? 'mutex',
    lockServer: options.lockEndpoint ?? { host: servers.lock.host, port: servers.lock.port },
    ...(options.lockTopology === undefined ? {} : { lockTopology: options.lockTopology }),
    ...(options.replicas === undefined ? {} : { replicas: options.replicas }),
    storeServer: options.storeEndpoint ?? { host: servers.store.host, port: servers.store.port },
    name,
    sections: options.sections,
    slots,
    leaseMs: options.leaseMs ?? 1_000,
    waitMs: options.waitMs ?? 60_000,
    workMs: options.workMs ?? [0, 3],
    ...(options.stall === undefined ? {} : { stall: options.stall }),
    seed: (options.seed ?? 1) * 1_000 + worker,
    ...options.configure?.(worker),
  }));
  const fleet = new Fleet(configs, options.wrap);
  const during = (options.during?.(fleet) ?? Promise.resolve()).then(
    () => ({ failed: false as const }),
    (error: unknown) => {
      void fleet.finish(0); // a failed injection ends the run at once
      return { failed: true as const, error };
    },
  );
  const exits = await fleet.finish(options.timeoutMs ?? 60_000);
  const outcome = await during;
  if (outcome.failed) throw outcome.error instanceof Error ? outcome.error : new Error(String(outcome.error));
  const sections = [...fleet.sections, ...(options.parentSections?.() ?? [])];
  const killed = options.killed ?? new Set<number>();
  const expectedSections =
    (options.workers - killed.size) * slots * options.sections +
    sections.filter((s) => s.worker < 0 || killed.has(s.worker)).length;
  const report = check({
    sections,
    store: await store.log(),
    finalValue: await store.value(),
    expectedSections,
    failures: fleet.failures,
  });
  return { report, fleet, exits, store };
}

/** The parent holding the lock through the public API, recorded like a worker's section. */
export class ParentHolder {
  #validUntil: bigint | null = null;
  #read: SectionRecord['read'] = 'none';
  #write: SectionRecord['write'] = 'none';
  #releasedAt: bigint | null = null;
  #releaseError: string | null = null;

  private constructor(
    readonly lease: Lease,
    private readonly store: FencedStore,
    private readonly waitStartedAt: bigint,
    private readonly acquiredAt: bigint,
  ) {
    this.confirm();
  }

  static async acquire(lock: Lockable, store: FencedStore, waitMs: number): Promise<ParentHolder> {
    const waitStartedAt = process.hrtime.bigint();
    const lease = await lock.acquire({ waitMs });
    return new ParentHolder(lease, store, waitStartedAt, process.hrtime.bigint());
  }

  confirm(): void {
    const t = process.hrtime.bigint();
    if (this.lease.isHeld) this.#validUntil = t;
  }

  /** Fenced read-modify-write; true when both were accepted. */
  async readModifyWrite(): Promise<boolean> {
    const read = await this.store.read(this.lease.fence, this.lease.owner);
    this.#read = read.accepted ? 'ok' : 'refused';
    this.confirm();
    if (!read.accepted) return false;
    const write = await this.store.write(this.lease.fence, this.lease.owner, read.value);
    this.#write = write.accepted ? 'ok' : 'refused';
    this.confirm();
    return write.accepted;
  }

  async release(): Promise<void> {
    this.confirm();
    try {
      await this.lease.release();
    } catch (error) {
      this.#releaseError = error instanceof Error ? error.name : String(error);
    }
    this.#releasedAt = process.hrtime.bigint();
  }

  get record(): SectionRecord {
    return {
      worker: -1, slot: 0, seq: 0, owner: this.lease.owner, fence: this.lease.fence,
      waitStartedAt: this.waitStartedAt, acquiredAt: this.acquiredAt, validUntil: this.#validUntil,
      releasedAt: this.#releasedAt, read: this.#read, write: this.#write,
      lost: this.lease.signal.aborted ? 'lost' : null, releaseError: this.#releaseError,
    };
  }
}

/**
 * A run in which worker 0 takes the lock first (a fresh lock; the others wait for it), reads the
 * store, and holds while `inject` runs; the other workers then contend, and worker 0 resumes when
 * `inject` returns (it gets 'continue').
 */
export function runWithHeldFault(
  servers: Servers,
  options: Omit<RunOptions, 'during' | 'configure'> & {
    readonly configure?: RunOptions['configure'];
    readonly inject: (held: SectionRecord, holder: WorkerHandle, fleet: Fleet) => Promise<void>;
  },
): Promise<RunResult> {
  return runChecked(servers, {
    ...options,
    configure: (worker) => ({
      ...(worker === 0 ? { linger: { seq: 0 } } : { waitForGo: true }),
      ...options.configure?.(worker),
    }),
    during: async (fleet) => {
      const [held, holder] = await fleet.next('holding');
      await options.inject(held, holder, fleet);
      holder.send({ type: 'continue' });
    },
  });
}
