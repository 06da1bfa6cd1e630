/**
 * `padlock/dashboard`: a live web dashboard of padlock's locks, to mount in an application's own
 * server (`createDashboard`) or run standalone (`padlock dashboard`). See docs/dashboard.md.
 */
export { createDashboard, type Authorize, type Dashboard, type DashboardOptions } from './handler.js';
export { RedisSource, type RedisSourceOptions } from './redis-source.js';
export { CatalogSource, type CatalogSourceOptions } from './catalog-source.js';
export type { DashboardSource, ForceReleaseOutcome, SourceLock, SourceReading } from './source.js';
export type { AuditEntry, HolderView, Liveness, LockView, Snapshot, TimingsView } from './snapshot.js';
export type { Distribution, Timings } from '../timings.js';
export type { LockKind } from '../lock-state.js';
