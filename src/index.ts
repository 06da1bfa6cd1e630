// The public surface of padlock, and nothing else.
export { Padlock } from './padlock.js';
export { Lease } from './lease.js';
export type { Lockable } from './locks/lock.js';
export type { ReadWriteLock } from './locks/read-write-lock.js';
export { MultiLease } from './locks/multi-lease.js';
export type { MultiLockable } from './locks/multi.js';
export type { SemaphoreLock, SemaphoreAcquireOptions } from './locks/semaphore-lock.js';
export type { AcquireOptions, CloseOptions, MetricsOptions, PadlockOptions } from './options.js';
export type { RecordTimingsOptions } from './timings-recorder.js';
export type { AcquiredEvent, HoldEvent, HoldWarningEvent, HoldWarningReason, PadlockEvents } from './events.js';
export type { CounterLike, HistogramLike, InstrumentOptions, MeterLike, MeterProviderLike, MetricAttributes } from './observability/otel-types.js';
export {
  PadlockError,
  LockTimeoutError,
  LockNotHeldError,
  LockLostError,
  QuorumError,
  PadlockOptionError,
  RedisUnavailableError,
  StoreUnavailableError,
  ZooKeeperUnavailableError,
  ZooKeeperSessionExpiredError,
  EtcdUnavailableError,
  PostgresUnavailableError,
  RedisCommandError,
  ReplicaAckError,
  PadlockClosedError,
  LockUpgradeError,
  PermitLimitError,
  type PadlockErrorCode,
  type LockLostReason,
  type NodeOutcome,
} from './errors.js';
export type { RedisClient, IoredisLikeClient, NodeRedisLikeClient } from './stores/redis/adapters/clients.js';
export type { EtcdClientLike } from './stores/etcd/etcd-client-like.js';
export type { PostgresPoolLike } from './stores/postgres/postgres-pool-like.js';
export { postgresSchemaSql } from './stores/postgres/postgres-schema.js';
export type { ZooKeeperClientLike } from './stores/zookeeper/zookeeper-client-like.js';
