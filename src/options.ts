/**
 * Options and their validation. Every check runs before any Redis command, and every failure is a
 * {@link PadlockOptionError} that names the option and the refused value.
 */
import { PadlockOptionError } from './errors.js';
import type { ResolvedMetricsOptions } from './observability/metrics.js';
import type { MeterProviderLike } from './observability/otel-types.js';
import { connectionFor, type RedisClient } from './stores/redis/adapters/clients.js';
import { checkEtcdClient, type EtcdClientLike } from './stores/etcd/etcd-client-like.js';
import type { CommandConnection } from './stores/redis/adapters/connection.js';
import { checkZooKeeperClient, type ZooKeeperClientLike } from './stores/zookeeper/zookeeper-client-like.js';
import { checkPostgresPool, type PostgresPoolLike } from './stores/postgres/postgres-pool-like.js';
import { SCHEMA_PATTERN } from './stores/postgres/postgres-schema.js';
import { resolveRecordTimings, type RecordTimingsOptions, type ResolvedRecordTimings } from './timings-recorder.js';

/** Longest timer Node can schedule; longer leases and waits are refused rather than silently cut. */
export const MAX_MS = 2_147_483_647;
/** Shortest reply time-out: below this, an ordinary busy moment of Redis would read as an outage. */
export const MIN_REPLY_TIMEOUT_MS = 100;
/** How long close() lets running `withLock` functions finish by default (`drainMs`). */
export const DEFAULT_DRAIN_MS = 10_000;
/** Shortest lease: below this, network jitter alone would lose the lock. */
export const MIN_LEASE_MS = 10;
/** Shortest liveness expiry: below this, a busy moment of the event loop would read as a death. */
export const MIN_LIVENESS_MS = 1_000;
/** Longest lock name, in UTF-16 code units. */
export const MAX_NAME_LENGTH = 1_000;
/** Owner tokens: 16 to 128 characters of `A–Z a–z 0–9 _ -`. Generated ones are 32 hex digits (128 bits). */
export const OWNER_PATTERN = /^[A-Za-z0-9_-]{16,128}$/;
const PREFIX_PATTERN = /^[A-Za-z0-9_.:-]{1,64}$/;

/**
 * Options of `new Padlock(options)`. An optional property set to `undefined` means the default, so
 * `{ prefix: process.env.PREFIX }` type-checks under `exactOptionalPropertyTypes`.
 */
export interface PadlockOptions {
  /**
   * The Redis client to use, from the library you already have:
   * - ioredis (5, 6) or iovalkey: a `Redis` connected to one server (or in Sentinel mode), or a `Cluster`;
   * - node-redis (`redis` 4–6, `@redis/client`): a client (`createClient`), a cluster
   *   (`createCluster`) or a sentinel (`createSentinel`, from 5), already connected (`await client.connect()`);
   * - or an array of 3 or more clients of independent masters (Redlock: a lock needs a majority of them).
   *
   * padlock never closes them; `padlock.close()` closes only the connections padlock opened itself
   * (one for pub/sub, a duplicate of the client).
   * @example new Padlock({ redis: await createClient({ url }).connect() })
   */
  redis?: RedisClient | readonly RedisClient[] | undefined;
  /**
   * An etcd client (`new Etcd3({ hosts })` of the `etcd3` package), instead of `redis`: locks live in
   * etcd (3.4 or later), each holder and waiter a key attached to this Padlock's one etcd lease
   * (docs/etcd.md). `leaseMs` is that lease's TTL, rounded up to whole seconds (etcd may raise it to
   * its minimum, 1.5 election time-outs). padlock never closes the client; `padlock.close()`
   * revokes its lease. Not with the Redis-only options.
   * @example new Padlock({ etcd: new Etcd3({ hosts: ['10.0.0.1:2379', '10.0.0.2:2379', '10.0.0.3:2379'] }) })
   */
  etcd?: EtcdClientLike | undefined;
  /**
   * Instead of `redis`: a ZooKeeper client of `node-zookeeper-client` (`zookeeper.createClient(hosts)`,
   * connected or not yet: padlock waits up to `replyTimeoutMs` for its `connected`). Every lock kind;
   * `mutex` and `fairMutex` are both FIFO; a lock lives while its holder's session does, and a
   * session lost tells every hold (see docs/zookeeper.md). The Redis-only options are refused beside
   * it. padlock never closes the client; `close()` removes the znodes this Padlock still has.
   * @example new Padlock({ zookeeper: zookeeper.createClient('127.0.0.1:2181') })
   */
  zookeeper?: ZooKeeperClientLike | undefined;
  /**
   * Beside `zookeeper`: how to make a new ZooKeeper client when the session of the current one
   * expired (a process frozen or cut off past its session time-out), as Curator opens a new session.
   * `node-zookeeper-client`'s client cannot open another session itself. padlock calls this, connects
   * the client it returns (return it not yet connected), tells every hold of the old session it is
   * lost (as without it) and serves the next call on the new session; until that session connects,
   * calls reject with `ZooKeeperSessionExpiredError` (code `ZOOKEEPER_SESSION_EXPIRED`). padlock closes
   * the clients it made this way (at `close()`, or once their session expired), never the one given
   * as `zookeeper`. Without it, an expired session ends this Padlock's service: every call rejects
   * with `ZooKeeperSessionExpiredError` (`renewing: false`). See docs/zookeeper.md.
   * @example new Padlock({ zookeeper: connect(), zookeeperFactory: connect }) // connect = () => zookeeper.createClient(hosts, { sessionTimeout: 10_000 })
   */
  zookeeperFactory?: (() => ZooKeeperClientLike) | undefined;
  /**
   * Instead of `redis`: a node-postgres `Pool` (`new Pool({ connectionString })` of the `pg`
   * package), of a PostgreSQL primary (12 or later): locks are rows of padlock's table, granted by
   * the server's clock, waits woken by `LISTEN`/`NOTIFY` on one connection this Padlock checks out
   * of the pool while it waits. Every lock kind; `mutex` and `fairMutex` are both FIFO. A holder can
   * make its own transaction's commit depend on still holding (`padlock.holds(name, fence)`). A
   * read-only server or a standby is refused. padlock never ends the pool. See docs/postgres.md.
   * @example new Padlock({ postgres: new Pool({ connectionString: process.env.DATABASE_URL }) })
   */
  postgres?: PostgresPoolLike | undefined;
  /**
   * With `postgres`: the schema of padlock's tables and functions, an unquoted lower-case
   * identifier (`a-z 0-9 _`, up to 63).
   * @default 'padlock'
   */
  postgresSchema?: string | undefined;
  /**
   * With `postgres`: create (or bring up to date) the schema on first use, serialized between
   * Padlocks by an advisory lock. `false` for a team that applies `postgresSchemaSql(schema)`
   * through its own migrations: a schema not installed is then an error, and padlock needs no
   * CREATE privilege.
   * @default true
   */
  postgresCreateSchema?: boolean | undefined;
  /**
   * Prefix of every key and channel: 1–64 characters of `A–Z a–z 0–9 _ . : -`.
   * @default 'padlock'
   */
  prefix?: string | undefined;
  /**
   * Default lease in milliseconds, renewed every third of it while held (the watchdog).
   * From 10 to 2 147 483 647; a fraction is rounded up.
   * @default 30000
   */
  leaseMs?: number | undefined;
  /**
   * How long padlock waits for Redis to answer any one call, in milliseconds, whatever the client's
   * own retry settings: past it the call rejects with `RedisUnavailableError`. Within a wait with a
   * finite `waitMs`, a call also ends by that deadline, though never before it had 1 s (or this, if
   * shorter) to answer; a wait without a `waitMs` rides through an outage (a failover) for at most
   * this long from its first failed call. From 100 to 2 147 483 647.
   * @default 5000
   */
  replyTimeoutMs?: number | undefined;
  /**
   * Replica acknowledgement, for a primary with replicas (Sentinel, or a fixed primary): every call
   * that grants or renews a hold is followed, in the same round trip, by `WAIT min timeoutMs`. A
   * grant fewer than `min` replicas acknowledged is undone and fails with `ReplicaAckError`; a
   * renewal does not count. It narrows the window in which a failover loses a lock; it is not
   * consensus (see the README's FAQ). Not with a Cluster client.
   * @example { min: 1, timeoutMs: 100 }
   */
  replicas?: ReplicaOptions | undefined;
  /**
   * Release every lock this Padlock holds when the process gets SIGTERM or SIGINT, then let the
   * process end as it would have: padlock closes itself as `close()` does (running `withLock`
   * functions get `drainMs` to finish, then are told through `lease.signal` before their locks are
   * released; the releases take at most 5 s more) and, when
   * nothing else listens for the signal, raises it again, so the process ends by that signal as it
   * would have without padlock. When the application listens for the signal too, the process is
   * the application's to end: padlock only releases. Listeners are removed by `close()`.
   * @default false
   */
  releaseOnExit?: boolean | undefined;
  /**
   * How long `close()` (and so `releaseOnExit`) lets running `withLock` functions finish before it
   * releases their locks, in milliseconds. Their leases keep renewing meanwhile; new acquisitions
   * are refused and pending waits rejected at once. A function still running at the end has its
   * `lease.signal` aborted with `PadlockClosedError` before its lock is released, and its
   * `withLock` rejects. 10 s plus close()'s 5 s for the releases fits in Kubernetes' default 30 s
   * between SIGTERM and SIGKILL. From 0 to 2 147 483 647; `close({ drainMs })` overrides it per call.
   * @default 10000
   */
  drainMs?: number | undefined;
  /**
   * Metrics through OpenTelemetry (see docs/production.md, Metrics, for the instruments). By
   * default padlock records to the global `MeterProvider` of `@opentelemetry/api` if the
   * application has that package installed (loaded on first need; register the SDK before the
   * first lock), and records nothing otherwise. `false` turns metrics off.
   * @default {} (the global provider, if any; no lock names)
   * @example { meterProvider: new MeterProvider({ readers: [reader] }) }
   */
  metrics?: MetricsOptions | false | undefined;
  /**
   * How long this Padlock's liveness key (`<prefix>:client:<id>`) lives after each write, in ms.
   * While the Padlock holds or waits for a lock it rewrites the key every fifth of this; a reaper
   * (`padlock reap`, or another Padlock's `reapDeadHolders`) frees the holds of a client whose key
   * has run out. So this is how long a crashed process's locks stay blocked at most (instead of
   * their lease), and also how long this process's event loop may stall before its locks can be
   * taken for dead (it learns at its next renewal, as after a force-release). From 1 000 to
   * 2 147 483 647; a fraction is rounded up.
   * @default 10000
   */
  livenessMs?: number | undefined;
  /**
   * Free the locks of dead holders this Padlock waits for: at each heartbeat of a queued waiter (at
   * most once a second per lock), check whether every client holding the lock has let its liveness
   * key run out, and if so free the lock (atomically, only that hold) so that the queue gets it,
   * instead of waiting for the dead holder's lease to end. Costs one script call per lock waited
   * for, per second, per Padlock. Holders need padlock with liveness keys (this version on).
   * @default false
   */
  reapDeadHolders?: boolean | undefined;
  /**
   * Record how long holds last and acquisitions wait, per lock name, into small histograms in Redis
   * (one hash of at most 36 fields per name, expiring a day after its last recording) for
   * `padlock dashboard` to draw. Sent every 2 s, one script call per name used meanwhile. See
   * docs/dashboard.md.
   * @default false
   */
  recordTimings?: boolean | RecordTimingsOptions | undefined;
}

/** Where padlock's metrics go, and what they carry. */
export interface MetricsOptions {
  /**
   * The OpenTelemetry `MeterProvider` to record to (an SDK's, or any object with its `getMeter`).
   * @default the global provider of `@opentelemetry/api`, if installed
   */
  meterProvider?: MeterProviderLike | undefined;
  /**
   * Add the lock's name to every measurement (`padlock.lock.name`). Off by default: one lock per
   * entity (`order:<id>`) would make one time series per entity.
   * @default false
   */
  lockNames?: boolean | undefined;
}

/** How many replicas must acknowledge a lock write, and how long to wait for them. */
export interface ReplicaOptions {
  /** Replicas that must acknowledge: an integer from 1 to 16. */
  readonly min: number;
  /** How long `WAIT` may block, in ms: from 1 to below `replyTimeoutMs`. */
  readonly timeoutMs: number;
}

/**
 * Options of `acquire`, `tryAcquire` and `withLock`. A property set to `undefined` means its
 * default, so `{ signal: maybeSignal }` type-checks under `exactOptionalPropertyTypes`.
 */
export interface AcquireOptions {
  /**
   * How long to wait for the lock, in milliseconds: a finite number ≥ 0, or `Infinity`.
   * @default Infinity for `acquire` and `withLock`, 0 for `tryAcquire` (which never waits longer than asked)
   */
  waitMs?: number | undefined;
  /**
   * A fixed lease in milliseconds (10 to 2 147 483 647, a fraction rounded up). When given, the watchdog does not renew the
   * lock unless `autoExtend` is `true`; when the lease runs out the lock is lost.
   * @default the Padlock's `leaseMs`, renewed by the watchdog
   */
  leaseMs?: number | undefined;
  /**
   * Renew the lease while held. Defaults to `true` when `leaseMs` is not given, `false` when it is.
   */
  autoExtend?: boolean | undefined;
  /** Aborts the wait: the call rejects with `signal.reason` and leaves nothing behind in Redis. */
  signal?: AbortSignal | undefined;
  /**
   * Re-enter a hold by its owner token (e.g. one received over RPC): the hold count goes up by one,
   * the fence stays the same. Rejects with `LockNotHeldError` if that owner does not hold the lock.
   */
  owner?: string | undefined;
}

/** Validated Padlock options with defaults applied. */
export interface ResolvedPadlockOptions {
  readonly prefix: string;
  readonly leaseMs: number;
  readonly replyTimeoutMs: number;
  readonly replicas: ReplicaOptions | undefined;
  readonly releaseOnExit: boolean;
  readonly drainMs: number;
  /** `undefined`: metrics off. */
  readonly metrics: ResolvedMetricsOptions | undefined;
  readonly livenessMs: number;
  readonly reapDeadHolders: boolean;
  /** `undefined`: timings not recorded. */
  readonly recordTimings: ResolvedRecordTimings | undefined;
}

/** Validated acquire options with defaults applied. */
export interface ResolvedAcquireOptions {
  readonly waitMs: number;
  readonly leaseMs: number;
  readonly autoExtend: boolean;
  readonly signal: AbortSignal | undefined;
  readonly owner: string | undefined;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Checks a duration in milliseconds; `Infinity` only when `allowInfinity`. */
export function checkMs(option: string, value: unknown, min: number, allowInfinity: boolean): number {
  const ok =
    typeof value === 'number' &&
    !Number.isNaN(value) &&
    value >= min &&
    (value <= MAX_MS || (allowInfinity && value === Infinity));
  if (!ok) {
    const range = `a finite number from ${min} to ${MAX_MS}${allowInfinity ? ', or Infinity' : ''}`;
    throw new PadlockOptionError(option, range, value);
  }
  return value;
}

function rejectUnknown(where: string, options: Record<string, unknown>, known: readonly string[]): void {
  for (const key of Object.keys(options)) {
    if (!known.includes(key)) throw new PadlockOptionError(`${where}.${key}`, `one of ${known.join(', ')} (unknown option)`, options[key]);
  }
}

/** Checks a drain time: 0 to 2 147 483 647 ms. */
export function checkDrainMs(option: string, value: unknown): number {
  return checkMs(option, value, 0, false);
}

/** Options of `padlock.close(options)`. */
export interface CloseOptions {
  /**
   * How long running `withLock` functions may go on before their locks are released, in
   * milliseconds (see `PadlockOptions.drainMs`, whose value is the default). 0 tells them and
   * releases at once.
   */
  drainMs?: number | undefined;
}

/** Validates `close(options)`; `fallback` is the Padlock's `drainMs`. */
export function resolveCloseOptions(options: unknown, fallback: number): number {
  if (options === undefined) return fallback;
  if (!isPlainObject(options)) throw new PadlockOptionError('options', 'an object { drainMs? }', options);
  rejectUnknown('options', options, ['drainMs']);
  return options.drainMs === undefined ? fallback : checkDrainMs('drainMs', options.drainMs);
}

/** Checks a lease: 10 to 2 147 483 647 ms; a fraction is rounded up (Redis expiries are whole milliseconds). */
export function checkLeaseMs(option: string, value: unknown): number {
  return Math.ceil(checkMs(option, value, MIN_LEASE_MS, false));
}

/** The options that name a store: exactly one is given. */
const STORE_OPTIONS = ['redis', 'zookeeper', 'etcd', 'postgres'] as const;

/** The store a Padlock was given, its client(s) checked. */
export type StoreOption =
  | { readonly kind: 'redis'; readonly redis: CommandConnection | readonly CommandConnection[] }
  | { readonly kind: 'zookeeper'; readonly client: ZooKeeperClientLike; readonly factory: (() => ZooKeeperClientLike) | undefined }
  | { readonly kind: 'etcd'; readonly client: EtcdClientLike }
  | { readonly kind: 'postgres'; readonly pool: PostgresPoolLike; readonly schema: string; readonly createSchema: boolean };

/** Options that only the PostgreSQL store reads: refused (named) beside another store. */
const POSTGRES_ONLY_OPTIONS = ['postgresSchema', 'postgresCreateSchema'] as const;

/** The PostgreSQL store's options: the pool (by shape), the schema's name, whether to create it. */
function checkPostgresOptions(options: Record<string, unknown>): StoreOption {
  const { postgresSchema = 'padlock', postgresCreateSchema = true } = options;
  if (typeof postgresSchema !== 'string' || !SCHEMA_PATTERN.test(postgresSchema)) {
    throw new PadlockOptionError('postgresSchema', 'an unquoted lower-case identifier: a-z, 0-9 and _, not starting with a digit, up to 63', postgresSchema);
  }
  if (typeof postgresCreateSchema !== 'boolean') throw new PadlockOptionError('postgresCreateSchema', 'a boolean', postgresCreateSchema);
  return { kind: 'postgres', pool: checkPostgresPool(options.postgres), schema: postgresSchema, createSchema: postgresCreateSchema };
}

/** Options that only the Redis store reads: refused (named) beside another store. */
const REDIS_ONLY_OPTIONS = ['replicas', 'livenessMs', 'reapDeadHolders', 'recordTimings'] as const;

/**
 * The options of a Padlock on a store other than Redis (`store`, its client checked by the caller):
 * the Redis-only ones are refused, naming the option, the rest resolved as for Redis.
 */
export function resolveOtherStore(options: Record<string, unknown>, store: StoreOption, storeName: string): ResolvedPadlockOptions & { readonly store: StoreOption } {
  for (const key of REDIS_ONLY_OPTIONS) {
    if (options[key] !== undefined) throw new PadlockOptionError(key, `left out with ${storeName} (a Redis-only option)`, options[key]);
  }
  const { prefix = 'padlock', leaseMs = 30_000, replyTimeoutMs = 5_000, releaseOnExit = false, drainMs = DEFAULT_DRAIN_MS } = options;
  if (typeof releaseOnExit !== 'boolean') throw new PadlockOptionError('releaseOnExit', 'a boolean', releaseOnExit);
  return {
    store,
    prefix: checkPrefix(prefix),
    leaseMs: checkLeaseMs('leaseMs', leaseMs),
    replyTimeoutMs: checkMs('replyTimeoutMs', replyTimeoutMs, MIN_REPLY_TIMEOUT_MS, false),
    replicas: undefined,
    releaseOnExit,
    drainMs: checkDrainMs('drainMs', drainMs),
    metrics: checkMetrics(options.metrics),
    livenessMs: 10_000,
    reapDeadHolders: false,
    recordTimings: undefined,
  };
}

/** Validates `new Padlock(options)`. */
export function resolvePadlockOptions(options: unknown): ResolvedPadlockOptions & { readonly store: StoreOption } {
  if (!isPlainObject(options)) throw new PadlockOptionError('options', `an object with one of { ${STORE_OPTIONS.join(', ')} }`, options);
  rejectUnknown('options', options, [...STORE_OPTIONS, ...POSTGRES_ONLY_OPTIONS, 'zookeeperFactory', 'prefix', 'leaseMs', 'replyTimeoutMs', 'replicas', 'releaseOnExit', 'drainMs', 'metrics', 'livenessMs', 'reapDeadHolders', 'recordTimings']);
  const given = STORE_OPTIONS.filter((key) => options[key] !== undefined);
  if (given.length !== 1) {
    throw new PadlockOptionError(given.length === 0 ? 'redis' : given.join(' and '), `one store: exactly one of ${STORE_OPTIONS.join(', ')}`, given.length === 0 ? undefined : '(several given)');
  }
  if (options.zookeeperFactory !== undefined && options.zookeeper === undefined) {
    throw new PadlockOptionError('zookeeperFactory', 'left out without zookeeper (it makes the ZooKeeper clients after the first)', options.zookeeperFactory);
  }
  if (options.postgres !== undefined) return resolveOtherStore(options, checkPostgresOptions(options), 'PostgreSQL');
  for (const key of POSTGRES_ONLY_OPTIONS) {
    if (options[key] !== undefined) throw new PadlockOptionError(key, 'left out without postgres (a PostgreSQL-only option)', options[key]);
  }
  if (options.zookeeper !== undefined) return resolveOtherStore(options, { kind: 'zookeeper', client: checkZooKeeperClient(options.zookeeper), factory: checkZooKeeperFactory(options.zookeeperFactory) }, 'ZooKeeper');
  if (options.etcd !== undefined) return resolveOtherStore(options, { kind: 'etcd', client: checkEtcdClient(options.etcd) }, 'etcd');
  const { redis, prefix = 'padlock', leaseMs = 30_000, replyTimeoutMs = 5_000, replicas, releaseOnExit = false, drainMs = DEFAULT_DRAIN_MS, livenessMs = 10_000, reapDeadHolders = false } = options;
  const masters = Array.isArray(redis) ? checkMasters(redis as unknown[]) : undefined;
  const single = masters === undefined ? connectionFor('redis', redis) : undefined;
  const checkedPrefix = checkPrefix(prefix);
  const replyTimeout = checkMs('replyTimeoutMs', replyTimeoutMs, MIN_REPLY_TIMEOUT_MS, false);
  if (masters !== undefined && replicas !== undefined) {
    throw new PadlockOptionError('replicas', 'left out with Redlock (an array of masters: each lock needs a majority of them instead)', replicas);
  }
  const checkedReplicas = single === undefined ? undefined : checkReplicas(replicas, replyTimeout, single);
  if (typeof releaseOnExit !== 'boolean') throw new PadlockOptionError('releaseOnExit', 'a boolean', releaseOnExit);
  const metrics = checkMetrics(options.metrics);
  const liveness = Math.ceil(checkMs('livenessMs', livenessMs, MIN_LIVENESS_MS, false));
  if (typeof reapDeadHolders !== 'boolean') throw new PadlockOptionError('reapDeadHolders', 'a boolean', reapDeadHolders);
  return {
    store: { kind: 'redis', redis: single ?? masters ?? [] },
    prefix: checkedPrefix,
    leaseMs: checkLeaseMs('leaseMs', leaseMs),
    replyTimeoutMs: replyTimeout,
    replicas: checkedReplicas,
    releaseOnExit,
    drainMs: checkDrainMs('drainMs', drainMs),
    metrics,
    livenessMs: liveness,
    reapDeadHolders,
    recordTimings: resolveRecordTimings(options.recordTimings),
  };
}

/** Validates `zookeeperFactory`: a function (what it returns is checked when padlock calls it), or undefined. */
function checkZooKeeperFactory(factory: unknown): (() => ZooKeeperClientLike) | undefined {
  if (factory === undefined) return undefined;
  if (typeof factory !== 'function') throw new PadlockOptionError('zookeeperFactory', 'a function returning a new node-zookeeper-client Client, not yet connected (() => zookeeper.createClient(hosts, options))', factory);
  return factory as () => ZooKeeperClientLike;
}

/** Validates `metrics`: `false`, or `{ meterProvider?, lockNames? }`. */
function checkMetrics(metrics: unknown): ResolvedMetricsOptions | undefined {
  if (metrics === false) return undefined;
  if (metrics === undefined) return { meterProvider: undefined, lockNames: false };
  if (!isPlainObject(metrics)) throw new PadlockOptionError('metrics', 'false or an object { meterProvider?, lockNames? }', metrics);
  rejectUnknown('metrics', metrics, ['meterProvider', 'lockNames']);
  const { meterProvider, lockNames = false } = metrics;
  if (meterProvider !== undefined && (typeof meterProvider !== 'object' || meterProvider === null || typeof (meterProvider as { getMeter?: unknown }).getMeter !== 'function')) {
    throw new PadlockOptionError('metrics.meterProvider', 'an OpenTelemetry MeterProvider (an object with getMeter())', meterProvider);
  }
  if (typeof lockNames !== 'boolean') throw new PadlockOptionError('metrics.lockNames', 'a boolean', lockNames);
  return { meterProvider: meterProvider as MeterProviderLike | undefined, lockNames };
}

/** Checks Redlock's masters: at least 3 distinct clients, each of one master (a Cluster is one store, not a master). */
function checkMasters(redis: readonly unknown[]): readonly CommandConnection[] {
  if (redis.length < 3) throw new PadlockOptionError('redis', 'an array of at least 3 clients of independent masters (Redlock needs a majority to survive the loss of one)', redis);
  const connections = redis.map((client, i) => {
    const connection = connectionFor(`redis[${i}]`, client);
    if (connection.isCluster) throw new PadlockOptionError(`redis[${i}]`, 'a Redis client of one master (a Cluster cannot be a Redlock master)', client);
    return connection;
  });
  if (new Set(redis).size !== redis.length) throw new PadlockOptionError('redis', 'distinct clients (the same client twice would count one master twice)', redis);
  return connections;
}

/** Validates `replicas`: `{ min, timeoutMs }` or undefined; WAIT must fit in a reply's time. */
function checkReplicas(replicas: unknown, replyTimeoutMs: number, connection: CommandConnection): ReplicaOptions | undefined {
  if (replicas === undefined) return undefined;
  if (!isPlainObject(replicas)) throw new PadlockOptionError('replicas', 'an object { min, timeoutMs }', replicas);
  rejectUnknown('replicas', replicas, ['min', 'timeoutMs']);
  const { min, timeoutMs } = replicas;
  if (typeof min !== 'number' || !Number.isInteger(min) || min < 1 || min > 16) {
    throw new PadlockOptionError('replicas.min', 'an integer from 1 to 16', min);
  }
  if (typeof timeoutMs !== 'number' || !Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs >= replyTimeoutMs) {
    throw new PadlockOptionError('replicas.timeoutMs', `an integer from 1 to below replyTimeoutMs (${replyTimeoutMs})`, timeoutMs);
  }
  if (connection.isCluster) {
    // A cluster's WAIT would have to go to each slot's master with its call; not built yet.
    throw new PadlockOptionError('replicas', 'left out with a Cluster client (replica acknowledgement serves a single primary with replicas, e.g. under Sentinel)', replicas);
  }
  return { min, timeoutMs };
}

/** Checks a key prefix (`PadlockOptions.prefix`); throws `PadlockOptionError` naming it. */
export function checkPrefix(prefix: unknown): string {
  if (typeof prefix !== 'string' || !PREFIX_PATTERN.test(prefix)) {
    throw new PadlockOptionError('prefix', 'a string of 1 to 64 characters from A-Z a-z 0-9 _ . : -', prefix);
  }
  return prefix;
}

/** Validates a lock name. */
export function checkName(name: unknown): string {
  if (typeof name !== 'string' || name.length === 0 || name.length > MAX_NAME_LENGTH) {
    throw new PadlockOptionError('name', `a non-empty string of at most ${MAX_NAME_LENGTH} characters`, name);
  }
  if (!name.isWellFormed()) throw new PadlockOptionError('name', 'a well-formed Unicode string (no lone surrogates)', name);
  return name;
}

/** Validates an owner token. */
export function checkOwner(option: string, owner: unknown): string {
  if (typeof owner !== 'string' || !OWNER_PATTERN.test(owner)) {
    throw new PadlockOptionError(option, 'an owner token: 16 to 128 characters of A-Z a-z 0-9 _ -', owner);
  }
  return owner;
}

/** Validates `acquire`/`tryAcquire`/`withLock` options. */
export function resolveAcquireOptions(options: unknown, defaults: { waitMs: number; leaseMs: number }): ResolvedAcquireOptions {
  if (options === undefined) return { waitMs: defaults.waitMs, leaseMs: defaults.leaseMs, autoExtend: true, signal: undefined, owner: undefined };
  if (!isPlainObject(options)) throw new PadlockOptionError('options', 'an object or undefined', options);
  rejectUnknown('options', options, ['waitMs', 'leaseMs', 'autoExtend', 'signal', 'owner']);
  const waitMs = options.waitMs === undefined ? defaults.waitMs : checkMs('waitMs', options.waitMs, 0, true);
  const leaseMs = options.leaseMs === undefined ? defaults.leaseMs : checkLeaseMs('leaseMs', options.leaseMs);
  const autoExtend = options.autoExtend === undefined ? options.leaseMs === undefined : options.autoExtend;
  if (typeof autoExtend !== 'boolean') throw new PadlockOptionError('autoExtend', 'a boolean', autoExtend);
  const { signal } = options;
  if (signal !== undefined && !(signal instanceof AbortSignal)) throw new PadlockOptionError('signal', 'an AbortSignal', signal);
  const owner = options.owner === undefined ? undefined : checkOwner('owner', options.owner);
  return { waitMs, leaseMs, autoExtend, signal, owner };
}
