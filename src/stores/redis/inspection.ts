/**
 * Locks as an operator sees them (the `padlock` CLI's `list`, `inspect`, `watch` and `reap`): finding
 * lock names with `SCAN`, reading each lock's holds, fence and queue in one call (inspect.lua for the
 * mutex family; each other kind's own inspect script, through its protocol class), and reaping the
 * holds of dead clients (stores/redis/reaping.ts: mutexes only).
 *
 * Outside the scripts, this is the one module that knows how a lock's state is laid out in Redis
 * (which keys a lock has, what a queued waiter's entry holds): a change of that layout changes
 * inspect.lua, keys.ts and this module, never the CLI, which only prints a {@link LockState}.
 *
 * Not exported from the package's entry point: the CLI's `--json` output, built from it, is what is
 * documented (docs/cli.md).
 */
import { clientIds, hashTag, livenessKey, lockKeys, scriptKeys, type LockKeys } from '../../keys.js';
import { inUse, type KeyState, type LockId, type LockKind, type LockState, type WaiterState } from '../../lock-state.js';
import { ReadWriteProtocol, readWriteKeys } from './kinds/read-write-protocol.js';
import { semaphoreKeys, SemaphoreProtocol, semaphoreScriptKeys } from './kinds/semaphore-protocol.js';
import type { CommandConnection } from './adapters/connection.js';
import { ScriptRunner } from './adapters/script-runner.js';
import { inspectScript, type InspectReply, type QueueReply, type QueuedWaiterReply, type ReadWriteInspectReply, type SemaphoreInspectReply } from './scripts/index.js';
import { clientsAliveCall } from './liveness.js';
import { reapIfDead, type ReapOutcome } from './reaping.js';
import { SingleServer } from './topology/single-server.js';
import type { ScriptCall } from './topology/topology.js';

/** A `SCAN` on one server: what {@link scanLockNames} needs of an ioredis `Redis`. */
export interface ScanNode {
  scan(cursor: string, match: 'MATCH', pattern: string, count: 'COUNT', n: number): Promise<[cursor: string, keys: string[]]>;
}

/** The suffixes of each family's keys (keys.ts, and the kinds' protocol classes), and the family they belong to. */
const ROLES = {
  lock: 'mutex',
  queue: 'mutex',
  rw: 'readWrite',
  rwleases: 'readWrite',
  rwqueue: 'readWrite',
  semaphore: 'semaphore',
  'semaphore-holders': 'semaphore',
  'semaphore-leases': 'semaphore',
  'semaphore-queue': 'semaphore',
} as const satisfies Record<string, LockKind>;

/** The suffix of one of a lock's keys: what the key is for. */
export type KeyRole = keyof typeof ROLES;

function isRole(suffix: string): suffix is KeyRole {
  return Object.hasOwn(ROLES, suffix);
}

/** The lock family whose key has the suffix `role`. */
export function kindOfRole(role: KeyRole): LockKind {
  return ROLES[role];
}

/** Families in the order `list` shows a name's rows. */
const KIND_ORDER: readonly LockKind[] = ['mutex', 'readWrite', 'semaphore'];

/** Escapes the glob characters of `text` for a `SCAN MATCH` pattern. */
function globEscape(text: string): string {
  return text.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
}

/**
 * The `SCAN MATCH` pattern for every key of the locks under `prefix` whose name matches the glob
 * `namePattern` (`*`, `?`, `[…]` as Redis reads them; `{`, `}` and `%` stand for themselves).
 */
export function lockKeyPattern(prefix: string, namePattern: string): string {
  return `${globEscape(prefix)}:{${hashTag(namePattern)}}:*`;
}

/**
 * The lock name and the suffix of `key` if it is `<prefix>:{<name's tag>}:<suffix>` for a name
 * padlock could have written (hashTag(name) gives the tag back), else `undefined`.
 */
export function parseTaggedKey(prefix: string, key: string): { name: string; suffix: string } | undefined {
  if (!key.startsWith(`${prefix}:{`)) return undefined;
  const close = key.lastIndexOf('}:');
  if (close < prefix.length + 2) return undefined;
  const tag = key.slice(prefix.length + 2, close);
  if (/[{}]/.test(tag)) return undefined;
  const name = tag.replace(/%(25|7B|7D)/g, (_, code: string) => (code === '25' ? '%' : code === '7B' ? '{' : '}'));
  if (hashTag(name) !== tag || name.length === 0) return undefined;
  return { name, suffix: key.slice(close + 2) };
}

/** The name and key role of `key` if it is one of a lock's keys under `prefix`, else `undefined`. */
export function parseLockKey(prefix: string, key: string): { name: string; role: KeyRole } | undefined {
  const parsed = parseTaggedKey(prefix, key);
  return parsed === undefined || !isRole(parsed.suffix) ? undefined : { name: parsed.name, role: parsed.suffix };
}

/** Options of {@link scanLocks}. */
export interface ScanOptions {
  /** Keys per `SCAN` step. @default 1000 */
  readonly count?: number;
  /** Told of each key under a lock's tag that is none of its lock keys (e.g. its recorded timings). */
  readonly otherKey?: (name: string, suffix: string) => void;
}

/**
 * The locks under `prefix` matching `namePattern` that have a key, each name once per family whose
 * keys it has: held, queued on, or freed within the hour (a freed lock's key stays an hour, keeping
 * its last fence). Walks every node with `SCAN` (never `KEYS`), `count` keys a step.
 * @returns the locks, sorted by name, then family (mutex, readWrite, semaphore)
 */
export async function scanLocks(nodes: readonly ScanNode[], prefix: string, namePattern: string, options: ScanOptions = {}): Promise<LockId[]> {
  const pattern = lockKeyPattern(prefix, namePattern);
  const found = new Map<string, Set<LockKind>>();
  await Promise.all(
    nodes.map(async (node) => {
      let cursor = '0';
      do {
        const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', options.count ?? 1_000);
        cursor = next;
        for (const key of keys) {
          const parsed = parseTaggedKey(prefix, key);
          if (parsed === undefined) continue;
          if (!isRole(parsed.suffix)) {
            options.otherKey?.(parsed.name, parsed.suffix);
            continue;
          }
          const kinds = found.get(parsed.name) ?? new Set<LockKind>();
          kinds.add(kindOfRole(parsed.suffix));
          found.set(parsed.name, kinds);
        }
      } while (cursor !== '0');
    }),
  );
  return [...found.keys()].sort().flatMap((name) => KIND_ORDER.filter((kind) => found.get(name)?.has(kind)).map((kind) => ({ name, kind })));
}

/** The names of the locks {@link scanLocks} finds, each once whatever its families, sorted. */
export async function scanLockNames(nodes: readonly ScanNode[], prefix: string, namePattern: string, options: ScanOptions = {}): Promise<string[]> {
  return [...new Set((await scanLocks(nodes, prefix, namePattern, options)).map((lock) => lock.name))];
}

/**
 * The locks under `prefix` whose name matches `namePattern`, read: those in use (see {@link inUse}),
 * or with `all` every one that still has a key. Sorted by name.
 * @param nodes every node to SCAN: the server, or each master of a Cluster
 */
export async function listLocks(nodes: readonly ScanNode[], reader: LockReader, prefix: string, namePattern: string, options: { all?: boolean; waiters?: number } = {}): Promise<LockState[]> {
  const states = await reader.readAll(await scanLocks(nodes, prefix, namePattern), options.waiters);
  return options.all === true ? states : states.filter(inUse);
}

/** Reads lock states over one connection (a single server, a Sentinel-managed primary or a Cluster). */
export class LockReader {
  readonly #runner: ScriptRunner;
  readonly #prefix: string;

  /**
   * @param connection the client's connection (an adapter's from src/stores/redis/adapters/, e.g. `fromIoredis(client)`)
   * @param prefix the Padlock key prefix the locks live under
   */
  constructor(connection: CommandConnection, prefix: string) {
    this.#runner = new ScriptRunner(connection);
    this.#prefix = prefix;
  }

  /**
   * Reads one lock of family `kind`, free or not, with its first `waiters` queued waiters described.
   * @throws RedisUnavailableError or RedisCommandError from the call
   */
  async read(name: string, waiters = 100, kind: LockKind = 'mutex'): Promise<LockState> {
    switch (kind) {
      case 'mutex': {
        const keys = lockKeys(this.#prefix, name);
        return lockState(name, keys, await this.#runner.send(inspectScript, scriptKeys(keys), [waiters], name));
      }
      case 'readWrite': {
        // The side only names the hold in a client's registry; both sides share every key.
        const protocol = new ReadWriteProtocol(readWriteKeys('write')(this.#prefix, name), '', false);
        return readWriteState(protocol, await this.#run(protocol.describe(waiters)));
      }
      case 'semaphore': {
        // Limit 0 when none is stored: the CLI does not know the one the code passes (reported as null).
        const protocol = new SemaphoreProtocol(semaphoreKeys(this.#prefix, name), 0, '', false);
        return semaphoreState(protocol, await this.#run(protocol.describe(waiters)));
      }
    }
  }

  /**
   * Reads every family's lock named `name` that has a key (each its own {@link LockState}, in the
   * order mutex, readWrite, semaphore); a name without any key reads as one free mutex.
   */
  async readKinds(name: string, waiters = 100): Promise<LockState[]> {
    const states = await Promise.all(KIND_ORDER.map((kind) => this.read(name, waiters, kind)));
    const present = states.filter((state) => state.keys.some((key) => key.exists));
    return present.length > 0 ? present : states.slice(0, 1);
  }

  /** Reads each of `locks` (a bare name: its mutex), at most `concurrency` calls in flight, in the order given. */
  async readAll(locks: readonly (string | LockId)[], waiters = 100, concurrency = 64): Promise<LockState[]> {
    const states: LockState[] = new Array<LockState>(locks.length);
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < locks.length) {
        const i = next++;
        const lock = locks[i] as string | LockId;
        states[i] = typeof lock === 'string' ? await this.read(lock, waiters) : await this.read(lock.name, waiters, lock.kind);
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, locks.length) }, worker));
    return states;
  }

  /** Sends a read-only call a kind's protocol built. */
  #run<Result>(call: ScriptCall<Result>): Promise<Result> {
    return this.#runner.send(call.script, call.keys, call.args, call.lock);
  }
}

/** Remaining time to live from a PTTL: `null` when the key is absent (-2) or never expires (-1). */
function ttl(pttl: number): number | null {
  return pttl >= 0 ? pttl : null;
}

/** A key of a lock, from its PTTL. */
function keyState(role: KeyRole, key: string, type: KeyState['type'], pttl: number): KeyState {
  return { role, key, type, exists: pttl !== -2, ttlMs: ttl(pttl) };
}

/** Queued waiters as read at `now`, their kinds from `kindOf` (`undefined`: an entry padlock cannot read). */
function waiterStates(now: number, waiters: readonly QueuedWaiterReply[], kindOf: (w: QueuedWaiterReply) => WaiterState['kind'] | undefined): WaiterState[] {
  return waiters.map((w, i): WaiterState => {
    const kind = kindOf(w);
    const known = kind !== undefined;
    return {
      position: i + 1,
      owner: w.owner,
      kind: kind ?? 'unknown',
      clientId: known ? w.clientId : null,
      alive: known && w.expiry >= now,
      waitedMs: w.since === undefined ? null : Math.max(0, now - w.since),
      heartbeatMs: known ? w.expiry - now : null,
      leaseMs: known ? w.leaseMs : null,
    };
  });
}

/** How many of a queue of `length` entries wait alive, and the longest wait of those read. */
function queueSummary(length: number, waiters: readonly WaiterState[]): Pick<LockState, 'waiting' | 'oldestWaitMs'> {
  const dead = waiters.filter((w) => !w.alive).length;
  const waited = waiters.flatMap((w) => (w.alive && w.waitedMs !== null ? [w.waitedMs] : []));
  return { waiting: Math.max(0, length - dead), oldestWaitMs: waited.length > 0 ? Math.max(...waited) : null };
}

/** The detail part of a kind's inspect reply, which the CLI's calls always ask for. */
function detailOf<Detail>(detail: Detail | undefined, script: string): Detail {
  if (detail === undefined) throw new TypeError(`${script} was called without the keys that ask for its detail`);
  return detail;
}

/** Turns rw-inspect.lua's detailed reply into a {@link LockState}. */
function readWriteState(protocol: ReadWriteProtocol, reply: ReadWriteInspectReply): LockState {
  const keys = protocol.keys;
  const d = detailOf(reply.detail, 'rw-inspect.lua');
  const holds = [...d.holds].sort((a, b) => (a.side === b.side ? 0 : a.side === 'write' ? -1 : 1));
  const held = holds.length > 0;
  const waiters = waiterStates(d.now, d.waiters, (w) => (w.kind === 'read' || w.kind === 'write' ? w.kind : undefined));
  return {
    name: keys.name,
    kind: 'readWrite',
    held,
    fence: held && reply.fence > 0 ? reply.fence : null,
    leaseMs: held ? Math.max(...holds.map((h) => h.expiry)) - d.now : null,
    // Read/write holds record no clients: `padlock reap` leaves them to their own leases.
    holders: holds.map((h) => ({ owner: h.owner, holdCount: h.count, clients: null, side: h.side, leaseMs: h.expiry - d.now })),
    ...queueSummary(d.length, waiters),
    lastFence: reply.fence > 0 ? reply.fence : null,
    waiters,
    keys: [
      keyState('rw', keys.state, 'hash', d.statePttl),
      keyState('rwleases', keys.leases, 'zset', d.leasesPttl),
      keyState('rwqueue', keys.queue, 'list', d.queuePttl),
    ],
  };
}

/** The one value every client agreed on, or `null` (none recorded, or clients that disagree). */
function agreed(values: readonly number[]): number | null {
  return values.length > 0 && values.every((value) => value === values[0]) ? (values[0] ?? null) : null;
}

/** Turns semaphore-inspect.lua's detailed reply into a {@link LockState}. */
function semaphoreState(protocol: SemaphoreProtocol, reply: SemaphoreInspectReply): LockState {
  const d = detailOf(reply.detail, 'semaphore-inspect.lua');
  const [meta, holdersKey, leasesKey, queueKey] = semaphoreScriptKeys(protocol.keys) as [string, string, string, string];
  const held = d.holders.length > 0;
  const waiters = waiterStates(d.now, d.waiters, (w) => (w.kind === 'semaphore' ? 'semaphore' : undefined)).map((state, i): WaiterState => {
    const entry = d.waiters[i];
    return entry !== undefined && state.kind === 'semaphore' ? { ...state, permits: entry.permits } : state;
  });
  return {
    name: protocol.keys.name,
    kind: 'semaphore',
    held,
    fence: held ? Math.max(...d.holders.map((h) => h.fence)) : null,
    leaseMs: held ? Math.max(...d.holders.map((h) => h.expiry)) - d.now : null,
    holders: d.holders.map((h) => ({ owner: h.owner, holdCount: h.count, clients: clientIds(h.clients) ?? null, permits: h.permits, fence: h.fence, leaseMs: h.expiry - d.now })),
    permits: { used: reply.used, limit: reply.stored ? reply.limit : null, codeLimit: reply.stored ? null : agreed(reply.createdWith) },
    ...queueSummary(reply.queued, waiters),
    lastFence: d.lastFence > 0 ? d.lastFence : null,
    waiters,
    keys: [
      keyState('semaphore', meta, 'hash', d.metaPttl),
      keyState('semaphore-holders', holdersKey, 'hash', d.holdersPttl),
      keyState('semaphore-leases', leasesKey, 'zset', d.leasesPttl),
      keyState('semaphore-queue', queueKey, 'list', d.queuePttl),
    ],
  };
}

/** Turns inspect.lua's reply into a {@link LockState}. */
function lockState(name: string, keys: LockKeys, reply: InspectReply): LockState {
  const queue: QueueReply = reply.queue ?? { now: 0, lastFence: 0, queuePttl: -2, length: 0, waiters: [] };
  const held = reply.fence > 0;
  const waiters = waiterStates(queue.now, queue.waiters, (w) => (w.kind === 'fair' || w.kind === 'mutex' ? w.kind : w.kind === '' ? undefined : 'unknown'));
  return {
    name,
    kind: 'mutex',
    held,
    fence: held ? reply.fence : null,
    leaseMs: held ? ttl(reply.pttl) : null,
    holders: [...reply.holders].map(([owner, holdCount]) => ({ owner, holdCount, clients: clientIds(reply.clients) ?? null })),
    ...queueSummary(queue.length, waiters),
    lastFence: queue.lastFence > 0 ? queue.lastFence : null,
    waiters,
    keys: [keyState('lock', keys.lock, 'string', reply.pttl), keyState('queue', keys.queue, 'list', queue.queuePttl)],
  };
}

/** Whether a lock's holder is dead: every client holding it let its liveness key run out. */
export type HolderLiveness = 'dead' | 'alive' | 'unknown';

/**
 * Reaps dead holders over one connection (a single server, a Sentinel-managed primary or a Cluster):
 * the `padlock reap` side of src/stores/redis/reaping.ts.
 */
export class LockReaper {
  readonly #topology: SingleServer;
  readonly #prefix: string;

  /**
   * @param connection the client's connection (`fromIoredis(client)`)
   * @param prefix the Padlock key prefix the locks live under
   * @param replyTimeoutMs how long each call may wait for its reply
   */
  constructor(connection: CommandConnection, prefix: string, replyTimeoutMs = 5_000) {
    this.#topology = new SingleServer(connection, replyTimeoutMs);
    this.#prefix = prefix;
  }

  /** Whether the holder of `state` is dead, without changing anything (`unknown`: free, its clients unknown, or not a mutex). */
  async holderLiveness(state: LockState): Promise<HolderLiveness> {
    const holder = state.holders[0];
    if (state.kind !== 'mutex' || !state.held || holder === undefined || holder.clients === null) return 'unknown';
    const alive = await Promise.all(holder.clients.map((id) => this.#topology.run(clientsAliveCall([livenessKey(this.#prefix, id)]))));
    return alive.some((n) => n > 0) ? 'alive' : 'dead';
  }

  /**
   * Frees the lock `state` describes if the same holder still holds it and its clients are all dead
   * (atomically on one server; on a Cluster, checked first: see stores/redis/reaping.ts), giving its turn to the
   * queue as a release does.
   * @throws RedisUnavailableError or RedisCommandError from the calls
   */
  async reap(state: LockState): Promise<ReapOutcome> {
    const holder = state.holders[0];
    // Only mutexes are reaped: a read/write lock's holds record no clients, a semaphore's expire alone.
    if (state.kind !== 'mutex') return 'unknown';
    if (!state.held || holder === undefined) return 'changed';
    if (holder.clients === null) return 'unknown';
    return reapIfDead(this.#topology, this.#prefix, lockKeys(this.#prefix, state.name), { owner: holder.owner, clients: holder.clients.join(',') });
  }
}
