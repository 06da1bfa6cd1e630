/**
 * The dashboard's data from Redis, on every topology padlock runs on: one server or a
 * Sentinel-managed primary (one connection), a Cluster (SCAN on each master, each lock read where
 * its slot lives), or Redlock (every master scanned and read, a lock shown as its majority of
 * masters has it). Lock states are read by src/stores/redis/inspection.ts's scripts, holders' liveness from
 * their liveness keys (src/stores/redis/liveness.ts), force-release goes through padlock's own `forceRelease()`
 * (src/force-release.ts), and the audit log and distributions are small bounded structures
 * (./audit-log.ts, src/timings.ts).
 *
 * One refresh costs: a SCAN of each node's keyspace (COUNT 1 000 a step), one inspect script call
 * per lock found, one EXISTS per distinct client holding a lock, one HGETALL per recorded name
 * shown, and one LRANGE of the audit log (docs/dashboard.md has measurements).
 */
import { livenessKey } from '../keys.js';
import { inUse, kindLabel, type LockId, type LockKind, type LockState } from '../lock-state.js';
import { LockReader, scanLocks, type ScanNode } from '../stores/redis/inspection.js';
import { clientsAliveCall } from '../stores/redis/liveness.js';
import { Padlock } from '../padlock.js';
import { checkPrefix } from '../options.js';
import { connectionFor, type RedisClient } from '../stores/redis/adapters/clients.js';
import type { CommandConnection } from '../stores/redis/adapters/connection.js';
import { ScriptRunner } from '../stores/redis/adapters/script-runner.js';
import { forceRelease } from '../force-release.js';
import { TIMINGS_SUFFIX, timingsKey, timingsReadScript } from '../timings.js';
import { AuditLog } from './audit-log.js';
import { scanConnections } from './nodes.js';
import { scanScript } from './scripts.js';
import { AUDIT_SHOWN, MAX_TIMINGS, shortOwner, type AuditEntry, type HolderView, type Liveness, type TimingsView } from './snapshot.js';
import type { DashboardSource, ForceReleaseOutcome, SourceLock, SourceReading } from './source.js';

/** Options of a {@link RedisSource}. */
export interface RedisSourceOptions {
  /** The application's client (one server, Sentinel, Cluster), or its Redlock masters. Never closed here. */
  readonly redis: RedisClient | readonly RedisClient[];
  /** A Padlock on the same Redis to force-release through; without it one is made when first needed (and closed by `close()`). */
  readonly padlock?: Padlock | undefined;
  /** The key prefix of the locks. @default the Padlock's, else `'padlock'` */
  readonly prefix?: string | undefined;
  /** What to call the store in the page's header. @default its kind, e.g. `Redis (one server or Sentinel primary)` */
  readonly description?: string | undefined;
}

/** Queued waiters read per lock: enough to count the live ones and find the longest wait. */
const WAITERS_READ = 20;
/** Keys per SCAN step. */
const SCAN_COUNT = 1_000;

/** The locks of one name found by a SCAN, and whether it has recorded distributions. */
interface Found {
  readonly locks: LockId[];
  readonly timings: Set<string>;
}

/** Reads locks from Redis for a dashboard. */
export class RedisSource implements DashboardSource {
  /** What the store is, for the page's header. */
  readonly description: string;
  readonly #clients: readonly RedisClient[];
  readonly #connections: readonly CommandConnection[];
  readonly #runners: readonly ScriptRunner[];
  readonly #readers: readonly LockReader[];
  readonly #prefix: string;
  readonly #audit: AuditLog;
  readonly #redis: RedisClient | readonly RedisClient[];
  #padlock: Padlock | undefined;
  readonly #ownPadlock: boolean;

  /** @throws PadlockOptionError for a client padlock does not know, or a bad prefix */
  constructor(options: RedisSourceOptions) {
    this.#redis = options.redis;
    this.#clients = Array.isArray(options.redis) ? (options.redis as readonly RedisClient[]) : [options.redis as RedisClient];
    this.#connections = this.#clients.map((client, i) => connectionFor(this.#clients.length > 1 ? `redis[${i}]` : 'redis', client));
    this.#prefix = checkPrefix(options.prefix ?? options.padlock?.prefix ?? 'padlock');
    this.#runners = this.#connections.map((c) => new ScriptRunner(c));
    this.#readers = this.#connections.map((c) => new LockReader(c, this.#prefix));
    this.#audit = new AuditLog(this.#runners, this.#prefix);
    this.#padlock = options.padlock;
    this.#ownPadlock = options.padlock === undefined;
    const first = this.#connections[0];
    this.description =
      options.description ??
      (this.#clients.length > 1 ? `Redlock over ${this.#clients.length} masters` : first?.isCluster === true ? 'a Redis Cluster' : 'Redis (one server or a Sentinel primary)') + `, prefix ${this.#prefix}`;
  }

  /** Whether this is a Redlock set: every master is read, a lock counts as its majority has it. */
  get #redlock(): boolean {
    return this.#clients.length > 1;
  }

  get #quorum(): number {
    return Math.floor(this.#clients.length / 2) + 1;
  }

  /**
   * Reads the locks in use, their holders' liveness, the distributions and the newest audit entries.
   * @throws RedisUnavailableError or RedisCommandError from the calls (the feed shows it and retries)
   */
  async read(): Promise<SourceReading> {
    const found = await this.#scan();
    const states = this.#redlock ? await this.#readMajority(found.locks) : (await (this.#readers[0] as LockReader).readAll(found.locks, WAITERS_READ)).filter(inUse);
    const liveness = await this.#liveness(states);
    const locks = states.map((state) => view(state, liveness));
    const [timings, audit] = await Promise.all([this.#timings(found.timings, new Set(locks.map((l) => l.name))), this.#audit.read(AUDIT_SHOWN)]);
    return { locks, timings, audit };
  }

  /** Frees `name` of family `kind` whoever holds it, through its kind's `forceRelease()` (on Redlock, on every master). */
  async forceRelease(name: string, kind: LockKind): Promise<ForceReleaseOutcome> {
    const before = this.#redlock ? ((await this.#readMajority([{ name, kind }]))[0] ?? (await (this.#readers[0] as LockReader).read(name, 0, kind))) : await (this.#readers[0] as LockReader).read(name, 0, kind);
    if (!before.held) return { released: false, fence: null };
    this.#padlock ??= new Padlock({ redis: this.#redis, prefix: this.#prefix });
    return { released: await forceRelease(this.#padlock, before, undefined), fence: before.fence };
  }

  /** Records a force-release in the audit log (on Redlock, on every master). */
  audit(entry: AuditEntry): Promise<void> {
    return this.#audit.append(entry);
  }

  /** Closes the Padlock it made for force-releases, if any (never the application's client or Padlock). */
  async close(): Promise<void> {
    if (this.#ownPadlock && this.#padlock !== undefined) await this.#padlock.close();
    this.#padlock = undefined;
  }

  /** SCANs every node: the locks (name and family) that have a key, and the names with distributions. */
  async #scan(): Promise<Found> {
    const timings = new Set<string>();
    const nodes = (await Promise.all(this.#clients.map((client) => scanConnections(client)))).flat().map(scanNode);
    const locks = await scanLocks(nodes, this.#prefix, '*', { count: SCAN_COUNT, otherKey: (name, suffix) => suffix === TIMINGS_SUFFIX && timings.add(name) });
    return { locks, timings };
  }

  /**
   * Redlock: reads each lock on every master; held where a majority has the same owner holding it
   * (the lease left is the shortest of theirs, the fence the greatest), else shown as its first
   * master that answered has it, if that has waiters.
   */
  async #readMajority(locks: readonly LockId[]): Promise<LockState[]> {
    const perMaster = await Promise.all(this.#readers.map((reader) => reader.readAll(locks, WAITERS_READ).catch(() => undefined)));
    const answered = perMaster.filter((states): states is LockState[] => states !== undefined);
    if (answered.length < this.#quorum) throw new Error(`only ${answered.length} of the ${this.#clients.length} masters answered: no majority to show`);
    return locks.flatMap((_, i): LockState[] => {
      const copies = answered.map((states) => states[i] as LockState);
      const byOwner = new Map<string, LockState[]>();
      for (const copy of copies) {
        const owner = copy.held ? copy.holders[0]?.owner : undefined;
        if (owner !== undefined) byOwner.set(owner, [...(byOwner.get(owner) ?? []), copy]);
      }
      const majority = [...byOwner.values()].find((group) => group.length >= this.#quorum);
      if (majority !== undefined) {
        const first = majority[0] as LockState;
        return [{ ...first, fence: Math.max(...majority.map((c) => c.fence ?? 0)), leaseMs: Math.min(...majority.map((c) => c.leaseMs ?? Infinity)) }];
      }
      const queued = copies.find((c) => c.waiting > 0);
      return queued === undefined ? [] : [{ ...queued, held: false, fence: null, leaseMs: null, holders: [] }];
    });
  }

  /** Whether each client holding a lock is alive: one EXISTS of its liveness key per client (on Redlock, on each master). */
  async #liveness(states: readonly LockState[]): Promise<Map<string, Liveness>> {
    const ids = new Set(states.flatMap((s) => s.holders.flatMap((h) => h.clients ?? [])));
    const result = new Map<string, Liveness>();
    await Promise.all(
      [...ids].map(async (id) => {
        const call = clientsAliveCall([livenessKey(this.#prefix, id)]);
        const answers = await Promise.all(this.#runners.map((runner) => runner.send(call.script, call.keys, call.args).catch(() => undefined)));
        const present = answers.filter((n) => n !== undefined && n > 0).length;
        const absent = answers.filter((n) => n === 0).length;
        result.set(id, present > 0 ? 'alive' : absent >= this.#quorum ? 'dead' : 'unknown');
      }),
    );
    return result;
  }

  /** The distributions of the names found (those with locks in use first), at most {@link MAX_TIMINGS}. */
  async #timings(names: ReadonlySet<string>, inUseNames: ReadonlySet<string>): Promise<TimingsView[]> {
    const chosen = [...names].sort((a, b) => Number(inUseNames.has(b)) - Number(inUseNames.has(a)) || a.localeCompare(b)).slice(0, MAX_TIMINGS);
    const runner = this.#runners[0] as ScriptRunner;
    const read = await Promise.all(chosen.map(async (name) => ({ name, ...(await runner.send(timingsReadScript, [timingsKey(this.#prefix, name)], [])) })));
    return read.filter((t) => t.hold.count + t.wait.count > 0).sort((a, b) => a.name.localeCompare(b.name));
  }
}

/** A server's `SCAN` through the dashboard's scan script (the same call on every client library padlock supports). */
function scanNode(connection: CommandConnection): ScanNode {
  const runner = new ScriptRunner(connection);
  return {
    async scan(cursor, _match, pattern, _count, n) {
      const step = await runner.send(scanScript, [], [cursor, pattern, n]);
      return [step.cursor, step.keys];
    },
  };
}

/** The page's view of one lock, with its holders' liveness and, for a dead holder, what the reaper would do. */
function view(state: LockState, liveness: ReadonlyMap<string, Liveness>): SourceLock {
  const holders: HolderView[] = state.holders.map((h) => {
    const ids = h.clients ?? [];
    const each = ids.map((id) => liveness.get(id) ?? 'unknown');
    const alive: Liveness = ids.length === 0 || each.includes('unknown') ? (each.includes('alive') ? 'alive' : 'unknown') : each.includes('alive') ? 'alive' : 'dead';
    return { owner: shortOwner(h.owner), holdCount: h.holdCount, liveness: alive, ...(h.side === undefined ? {} : { side: h.side }), ...(h.permits === undefined ? {} : { permits: h.permits }) };
  });
  const dead = state.held && holders.length > 0 && holders.every((h) => h.liveness === 'dead');
  const leaseLeft = state.leaseMs === null ? '' : ` in ${Math.max(0, Math.ceil(state.leaseMs / 1000))} s`;
  const reaper =
    state.kind === 'mutex'
      ? 'padlock reap (or a waiter with reapDeadHolders) frees it now and hands it to the queue; else its lease ends' + leaseLeft
      : `not reaped (padlock reaps mutexes only): it frees itself when its lease ends${leaseLeft}`;
  return {
    name: state.name,
    kind: state.kind,
    kindLabel: kindLabel(state),
    held: state.held,
    fence: state.fence,
    leaseMs: state.leaseMs,
    holders,
    ...(state.permits === undefined ? {} : { permits: state.permits }),
    waiting: state.waiting,
    oldestWaitMs: state.oldestWaitMs,
    ...(dead ? { dead: { reaper } } : {}),
  };
}
