/**
 * Where a dashboard's data comes from: the seam between the page (store-agnostic) and a store.
 * {@link RedisSource} serves every Redis topology padlock runs on (one server, Sentinel, a Cluster
 * across its masters, Redlock); a store of another kind plugs in by implementing this interface and
 * passing it as `createDashboard({ source })`. {@link CatalogSource} serves the stores with a
 * catalog (ZooKeeper, etcd, PostgreSQL: catalog.ts), without distributions, its audit log in memory.
 */
import type { LockKind } from '../lock-state.js';
import type { AuditEntry, LockView, TimingsView } from './snapshot.js';

/** A lock as a source reads it: everything the page shows but the hold's age (the dashboard tracks that). */
export type SourceLock = Omit<LockView, 'heldForMs' | 'heldSinceStart'>;

/** One read of a store. */
export interface SourceReading {
  /** The locks in use (held, or with live waiters), sorted by name then kind. */
  readonly locks: readonly SourceLock[];
  /** Recorded distributions. */
  readonly timings: readonly TimingsView[];
  /** The newest audit entries first. */
  readonly audit: readonly AuditEntry[];
}

/** What a force-release did. */
export interface ForceReleaseOutcome {
  /** Whether it freed a hold (false: the lock was free already). */
  readonly released: boolean;
  /** The fence of the hold it freed, as read just before. */
  readonly fence: number | null;
}

/** A store a dashboard reads locks from and force-releases them in. */
export interface DashboardSource {
  /** What the store is, for the page's header. */
  readonly description: string;
  /** Reads the locks in use, their holders' liveness, the distributions and the newest audit entries. */
  read(): Promise<SourceReading>;
  /** Frees `name` (of family `kind`) whoever holds it; its holder is told at once (its kind's `forceRelease()`). */
  forceRelease(name: string, kind: LockKind): Promise<ForceReleaseOutcome>;
  /** Records a force-release in the store's bounded audit log. */
  audit(entry: AuditEntry): Promise<void>;
  /** Lets go of what the source opened itself (never the application's client). */
  close(): Promise<void>;
}
