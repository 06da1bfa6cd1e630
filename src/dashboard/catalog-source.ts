/**
 * The dashboard's data from a store with a catalog (ZooKeeper, etcd, PostgreSQL: catalog.ts), read
 * through a Padlock on that store: each refresh is one read of the catalog (the store's own, as
 * `padlock list` makes it), each lock turned into the same LockState the CLI prints
 * ({@link lockStateOf}); force-release goes through the kind's own `forceRelease()`
 * (src/force-release.ts), so the holder is told as on that store.
 *
 * What these stores do not keep is not shown: no hold/wait distributions (`recordTimings` writes
 * them to Redis), and the audit log is this dashboard's own, in its memory (the newest
 * {@link AUDIT_KEPT}, gone when it stops), not a structure in the store. Every holder is shown
 * alive: a participant lives only while its client keeps its session, lease or row alive, so a dead
 * one is gone from the catalog at its end (there is no reaper to offer).
 */
import { lockStateOf, type LockCatalog } from '../catalog.js';
import { forceRelease } from '../force-release.js';
import { kindLabel, type LockKind, type LockState } from '../lock-state.js';
import type { Padlock } from '../padlock.js';
import { AUDIT_SHOWN, shortOwner, type AuditEntry } from './snapshot.js';
import type { DashboardSource, ForceReleaseOutcome, SourceLock, SourceReading } from './source.js';

/** Options of a {@link CatalogSource}. */
export interface CatalogSourceOptions {
  /** The application's Padlock on ZooKeeper, etcd or PostgreSQL: its prefix is read, and force-releases go through it. Never closed here. */
  readonly padlock: Padlock;
  /** What to call the store in the page's header. @default the catalog's own, e.g. `etcd (prefix padlock)` */
  readonly description?: string | undefined;
}

/** Queued waiters listed per lock (all are counted). */
const WAITERS_READ = 20;
/** Force-releases this dashboard remembers. */
const AUDIT_KEPT = AUDIT_SHOWN;

/** Reads locks through a store's catalog for a dashboard. */
export class CatalogSource implements DashboardSource {
  /** What the store is, for the page's header. */
  readonly description: string;
  readonly #padlock: Padlock;
  readonly #catalog: LockCatalog;
  readonly #audit: AuditEntry[] = [];

  /** @throws TypeError when the Padlock's store has no catalog (Redis: use `RedisSource`, or `createDashboard({ redis })`) */
  constructor(options: CatalogSourceOptions) {
    const catalog = options.padlock.shared.store.catalog?.();
    if (catalog === undefined) throw new TypeError(`${options.padlock.shared.store.description} has no catalog: on Redis, give createDashboard { redis } (or a RedisSource)`);
    this.#padlock = options.padlock;
    this.#catalog = catalog;
    this.description = options.description ?? catalog.description;
  }

  /** Reads the locks in use (one read of the catalog); no distributions; this dashboard's own audit entries. */
  async read(): Promise<SourceReading> {
    const locks = (await this.#catalog.locks()).map((lock) => view(lockStateOf(lock, WAITERS_READ)));
    return { locks, timings: [], audit: [...this.#audit] };
  }

  /** Frees `name` of family `kind` whoever holds it, through its kind's `forceRelease()`. */
  async forceRelease(name: string, kind: LockKind): Promise<ForceReleaseOutcome> {
    const found = (await this.#catalog.locks()).find((lock) => lock.name === name && lock.kind === kind);
    const before = found === undefined ? undefined : lockStateOf(found, 0);
    if (before === undefined || !before.held) return { released: false, fence: null };
    return { released: await forceRelease(this.#padlock, before, undefined), fence: before.fence };
  }

  /** Remembers a force-release, newest first, in this dashboard's memory. */
  audit(entry: AuditEntry): Promise<void> {
    this.#audit.unshift(entry);
    this.#audit.length = Math.min(this.#audit.length, AUDIT_KEPT);
    return Promise.resolve();
  }

  /** Closes the catalog (never the application's Padlock). */
  close(): Promise<void> {
    return this.#catalog.close();
  }
}

/** The page's view of one lock read through a catalog. */
function view(state: LockState): SourceLock {
  return {
    name: state.name,
    kind: state.kind,
    kindLabel: kindLabel(state),
    held: state.held,
    fence: state.fence,
    leaseMs: state.leaseMs,
    holders: state.holders.map((h) => ({
      owner: shortOwner(h.owner),
      holdCount: h.holdCount,
      liveness: 'alive' as const,
      ...(h.side === undefined ? {} : { side: h.side }),
      ...(h.permits === undefined ? {} : { permits: h.permits }),
    })),
    ...(state.permits === undefined ? {} : { permits: state.permits }),
    waiting: state.waiting,
    oldestWaitMs: state.oldestWaitMs,
  };
}
