/**
 * The PostgreSQL store: every holder and waiter of a lock is a row of padlock's `participants` table
 * (postgres-schema.ts), granted and expired by the server's clock; waits are woken, and holders told of
 * a force-release, by `NOTIFY` on this Padlock's one `LISTEN` connection (postgres-listener.ts); the watchdog renews every hold in
 * one statement per tick. What the kinds share lives here: the pool's calls, bounded and typed, the
 * schema's check (a writable primary, padlock's objects installed or installed here), the listener,
 * and the sweep that keeps the tables bounded (docs/postgres.md).
 */
import type { Pool } from 'pg';
import type { LockCatalog } from '../../catalog.js';
import { bound, monotonicNow } from '../../clock.js';
import { PostgresUnavailableError } from '../../errors.js';
import type { Hold } from '../../hold.js';
import type { Lock } from '../../locks/lock.js';
import type { ReadWriteLock } from '../../locks/read-write-lock.js';
import type { SemaphoreLock } from '../../locks/semaphore-lock.js';
import { Contact } from '../../outage.js';
import type { Shared } from '../../shared.js';
import { renewInOneCall, type LockKindName, type Store, type StoreHost } from '../../store.js';
import { PostgresCatalog } from './postgres-catalog.js';
import { passing, READ_ONLY_MESSAGE, unavailable } from './postgres-errors.js';
import { PostgresListener } from './postgres-listener.js';
import { PostgresMutex } from './postgres-mutex.js';
import { PostgresOps, type LockRef, type Role } from './postgres-ops.js';
import { postgresReadWrite } from './postgres-read-write.js';
import { postgresSchemaSql, SCHEMA_VERSION } from './postgres-schema.js';
import { PostgresSemaphore } from './postgres-semaphore.js';

/** The PostgreSQL options a Padlock was given, resolved. */
export interface PostgresStoreOptions {
  readonly pool: Pool;
  /** The Padlock's prefix (the catalog reads the rows under it). */
  readonly prefix: string;
  readonly schema: string;
  readonly createSchema: boolean;
  readonly replyTimeoutMs: number;
}

/** How often a Padlock deletes rows that outlived their lease (locks nobody takes again). */
const SWEEP_EVERY_MS = 10 * 60_000;

/** After a failed try to listen for holders, how long a new hold goes without starting another (a pooler that breaks `LISTEN` fails each one after half the reply time-out). */
const RELISTEN_AFTER_FAILURE_MS = 10_000;

export class PostgresStore implements Store {
  readonly description = 'a PostgreSQL server';
  readonly replyTimeoutMs: number;
  readonly extraReplyMs = 0;
  readonly ops: PostgresOps;
  readonly listener: PostgresListener;
  /** Whether the server ever answered a wait: only then does a wait ride through an outage (src/outage.ts). */
  readonly contact = new Contact();
  readonly #pool: Pool;
  readonly #prefix: string;
  readonly #schema: string;
  readonly #createSchema: boolean;
  readonly #host: StoreHost;
  #ready: Promise<void> | undefined;
  #sweeper: NodeJS.Timeout | undefined;
  #closed = false;
  /** The first try to listen for holders (awaited before the first take), settled or under way. */
  #firstListen: Promise<void> | undefined;
  #listenFailedAt = -Infinity;

  constructor(options: PostgresStoreOptions, host: StoreHost) {
    this.#pool = options.pool;
    this.#prefix = options.prefix;
    this.#schema = options.schema;
    this.#createSchema = options.createSchema;
    this.replyTimeoutMs = options.replyTimeoutMs;
    this.#host = host;
    this.ops = new PostgresOps(options.pool, options.schema);
    this.listener = new PostgresListener(
      options.pool,
      this.ops,
      options.replyTimeoutMs,
      (error) => host.report(error),
      (name) => host.suspect(name),
    );
  }

  noReply(lock: string | undefined, ms: number): PostgresUnavailableError {
    return passing(new PostgresUnavailableError(lock, undefined, `no reply within ${ms} ms`));
  }

  /** Every kind is served (multi: the names one after another, in canonical order). */
  refuses(_kind: LockKindName): string | undefined {
    return undefined;
  }

  mutex(shared: Shared, name: string): Lock {
    return new PostgresMutex(shared, this, name, 'mutex');
  }

  fairMutex(shared: Shared, name: string): Lock {
    return new PostgresMutex(shared, this, name, 'fairMutex');
  }

  readWrite(shared: Shared, name: string): ReadWriteLock {
    return postgresReadWrite(shared, this, name);
  }

  semaphore(shared: Shared, name: string, permits: number): SemaphoreLock {
    return new PostgresSemaphore(shared, this, name, permits);
  }

  /**
   * An operator's read of every lock under this Padlock's prefix (`padlock list --postgres`): reads
   * the schema as it is, never installs it.
   */
  catalog(): LockCatalog {
    return new PostgresCatalog(this.ops, this.#prefix, this.replyTimeoutMs, `PostgreSQL (schema ${this.#schema}, prefix ${this.#prefix})`);
  }

  /** One statement renews every hold: one group. */
  renewalGroup(_hold: Hold): string {
    return 'postgres';
  }

  renewMany(holds: readonly Hold[], report: (error: unknown) => void): Promise<(number | undefined)[]> {
    return renewInOneCall(holds, (all) => this.renew(all), report);
  }

  /**
   * Renews `holds` (each by its fence, which names one row) to their own lease, or to `ms` when given
   * (an `extend`), never shortening one: each one's remaining lease as the server says, 0 where its
   * row is gone or its lease ran out. Rejects `PostgresUnavailableError`.
   */
  async renew(holds: readonly Hold[], ms?: number): Promise<number[]> {
    const left = await this.call(holds[0]?.name, () =>
      this.ops.renew(
        holds.map((hold) => hold.fence),
        holds.map((hold) => ms ?? hold.leaseMs),
      ),
    );
    return holds.map((hold) => left.get(hold.fence) ?? 0);
  }

  /**
   * Resolves once this Padlock listens, so that a force-release of the hold a take is about to get
   * is heard: the first take waits for the first try (a connection, `LISTEN` and its self-test, once
   * per Padlock); later ones find it settled. Never rejects: a Padlock that cannot listen still
   * takes locks (its holders learn of a force-release at their next renewal), and says why once.
   */
  listenForHolders(): Promise<void> {
    this.#firstListen ??= this.#listenForHolders();
    return this.#firstListen;
  }

  /** A hold starts: listens again if the connection was lost since (a force-release would go unheard). */
  holding(): void {
    if (this.#closed || this.listener.listening || monotonicNow() - this.#listenFailedAt < RELISTEN_AFTER_FAILURE_MS) return;
    void this.#listenForHolders();
  }

  #listenForHolders(): Promise<void> {
    return this.listener.listen().catch((error: unknown) => {
      this.#listenFailedAt = monotonicNow();
      if (!this.#closed) this.#host.report(error);
    });
  }

  /** Lets the listening connection go; rows of waits given up were deleted as each ended. */
  retire(_ms: number): Promise<void> {
    this.#closed = true;
    clearInterval(this.#sweeper);
    this.listener.close();
    return Promise.resolve();
  }

  close(): Promise<void> {
    return this.retire(this.replyTimeoutMs);
  }

  /**
   * `work()`, once the schema is ready, bounded by the reply time-out; pg's errors (unreachable, a
   * read-only server) become `PostgresUnavailableError`, padlock's own pass through.
   */
  call<T>(lock: string | undefined, work: () => Promise<T>): Promise<T> {
    return bound(
      this.#whenReady()
        .then(work)
        .catch((error: unknown) => {
          throw unavailable(lock, error);
        }),
      { ms: this.replyTimeoutMs, timeout: () => this.noReply(lock, this.replyTimeoutMs) },
    );
  }

  /** Takes a given-up waiter's row out of the queue, in the background (close() waits for it). */
  leave(lock: LockRef, role: Role, owner: string): void {
    this.#host.track(this.call(lock.name, () => this.ops.leave(lock, role, owner)).catch(() => undefined));
  }

  /** The schema's check, once per Padlock (again after a failure: a standby may have been promoted). */
  #whenReady(): Promise<void> {
    this.#ready ??= this.#prepare().catch((error: unknown) => {
      this.#ready = undefined;
      throw error;
    });
    return this.#ready;
  }

  /**
   * Refuses a server that cannot write (a standby in recovery, a read-only default), then checks the
   * schema's version and installs it when missing or older (unless `postgresCreateSchema: false`).
   */
  async #prepare(): Promise<void> {
    const { rows } = await this.#pool.query<{ recovery: boolean; read_only: boolean; installed: boolean }>(
      `SELECT pg_is_in_recovery() AS recovery, current_setting('transaction_read_only') = 'on' AS read_only, to_regclass($1) IS NOT NULL AS installed`,
      [`${this.#schema}.meta`],
    );
    const [server] = rows;
    if (server === undefined) throw passing(new PostgresUnavailableError(undefined, undefined, 'no answer to the server check'));
    // A standby (or a read-only default): a misplaced pool, or a failover under way, which passes.
    if (server.recovery || server.read_only) throw passing(new PostgresUnavailableError(undefined, undefined, READ_ONLY_MESSAGE));
    const version = server.installed ? (await this.#pool.query<{ version: number }>(`SELECT max(version) AS version FROM ${this.#schema}.meta`)).rows[0]?.version : undefined;
    if (version !== SCHEMA_VERSION) {
      if (!this.#createSchema) {
        throw new PostgresUnavailableError(
          undefined,
          undefined,
          `schema "${this.#schema}" has no padlock tables of version ${SCHEMA_VERSION} (found ${version ?? 'none'}): apply postgresSchemaSql('${this.#schema}') in a migration, or leave postgresCreateSchema on`,
        );
      }
      await this.#install();
    }
    if (!this.#closed && this.#sweeper === undefined) {
      this.#sweep();
      this.#sweeper = setInterval(() => this.#sweep(), SWEEP_EVERY_MS).unref();
    }
  }

  /** Installs the schema in one transaction (idempotent, serialized between Padlocks by an advisory lock). */
  async #install(): Promise<void> {
    const client = await this.#pool.connect();
    try {
      await client.query('BEGIN');
      await client.query(postgresSchemaSql(this.#schema));
      await client.query('COMMIT');
      client.release();
    } catch (error) {
      client.release(true);
      throw error;
    }
  }

  #sweep(): void {
    this.#host.track(this.ops.sweep().catch(() => undefined));
  }
}
