/**
 * Locks as an operator sees them (the `padlock` CLI's `list`, `inspect`, `watch` and `reap`): finding
 * lock names with `SCAN`, reading each lock's holds, fence and queue with inspect.lua, in one call,
 * and reaping the holds of dead clients (reaping.ts).
 *
 * Outside the scripts, this is the one module that knows how a lock's state is laid out in Redis
 * (which keys a lock has, what a queued waiter's entry holds): a change of that layout changes
 * inspect.lua, keys.ts and this module, never the CLI, which only prints a {@link LockState}.
 *
 * Not exported from the package's entry point: the CLI's `--json` output, built from it, is what is
 * documented (docs/cli.md).
 */
import { clientIds, hashTag, livenessKey, lockKeys, scriptKeys, type LockKeys } from './keys.js';
import type { CommandConnection } from './redis/connection.js';
import { ScriptRunner } from './redis/script-runner.js';
import { inspectScript, type InspectReply, type QueueReply } from './scripts/index.js';
import { clientsAliveCall } from './liveness.js';
import { reapIfDead, type ReapOutcome } from './reaping.js';
import { SingleServer } from './topology/single-server.js';

/** A lock's state at one moment, as one script read it. Times in ms; fields are the CLI's `--json` ones. */
export interface LockState {
  /** The lock's name. */
  readonly name: string;
  /** The lock family: `mutex` (`mutex` and `fairMutex` share their keys). A waiter's own kind is in {@link WaiterState.kind}. */
  readonly kind: 'mutex';
  /** Whether someone holds it. */
  readonly held: boolean;
  /** Fence of the current hold; `null` when free. */
  readonly fence: number | null;
  /** Remaining lease of the current hold; `null` when free. */
  readonly leaseMs: number | null;
  /** Owners holding it, with their hold counts (one for a mutex). */
  readonly holders: readonly HolderState[];
  /** Queued waiters not known to be dead (a waiter past its heartbeat is skipped at the next handoff). */
  readonly waiting: number;
  /** How long the longest-queued live waiter (of those read) has been queued; `null` when none is. */
  readonly oldestWaitMs: number | null;
  /** The last fence handed out, held or not (a freed lock keeps it an hour); `null` when the lock key is gone. */
  readonly lastFence: number | null;
  /** The first queued waiters, in queue order (as many as were asked for). */
  readonly waiters: readonly WaiterState[];
  /** The lock's keys in Redis, with their remaining time to live. */
  readonly keys: readonly KeyState[];
}

/** One holder of a lock. */
export interface HolderState {
  /** Its owner token. */
  readonly owner: string;
  /** Re-entrant holds it has. */
  readonly holdCount: number;
  /**
   * The ids of the clients (Padlocks) holding it: the one it was granted to, then any other that
   * re-entered it with its owner token. `null` when unknown (more than 8 did, or a client that
   * records none): such a hold is never reaped.
   */
  readonly clients: readonly string[] | null;
}

/** One queued waiter. */
export interface WaiterState {
  /** 1 for the queue's head. */
  readonly position: number;
  /** Its owner token. */
  readonly owner: string;
  /** `fair` (is handed the lock in turn), `mutex` (is woken in turn), `unknown` (an entry padlock cannot read: dead). */
  readonly kind: 'mutex' | 'fair' | 'unknown';
  /** The id of the Padlock (one per client process, usually) it belongs to; `null` when unknown. */
  readonly clientId: string | null;
  /** Whether its heartbeat is current; a dead waiter is skipped and forgotten at the next handoff. */
  readonly alive: boolean;
  /** Since it joined the queue (a woken mutex waiter that was beaten to the lock rejoins: it restarts); `null` when unknown. */
  readonly waitedMs: number | null;
  /** Time left before it misses its heartbeat (negative: missed that long ago); `null` when unknown. */
  readonly heartbeatMs: number | null;
  /** The lease it asks for; `null` when unknown. */
  readonly leaseMs: number | null;
}

/** One key of a lock. */
export interface KeyState {
  /** What the key is for: `lock` (string: fence, holder, hold count; a tombstone once freed), `queue` (list of entries), `waiters` (hash: owner → entry). */
  readonly role: 'lock' | 'queue' | 'waiters';
  /** The key's name in Redis. */
  readonly key: string;
  /** Its Redis type. */
  readonly type: 'string' | 'list' | 'hash';
  /** Whether it exists. */
  readonly exists: boolean;
  /** Its remaining time to live; `null` when absent or without an expiry. */
  readonly ttlMs: number | null;
}

/** A `SCAN` on one server: what {@link scanLockNames} needs of an ioredis `Redis`. */
export interface ScanNode {
  scan(cursor: string, match: 'MATCH', pattern: string, count: 'COUNT', n: number): Promise<[cursor: string, keys: string[]]>;
}

/** The suffixes of a lock's keys (keys.ts). */
const ROLES = new Set(['lock', 'queue', 'waiters']);

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

/** The name and key role of `key` if it is one of a lock's keys under `prefix`, else `undefined`. */
export function parseLockKey(prefix: string, key: string): { name: string; role: KeyState['role'] } | undefined {
  if (!key.startsWith(`${prefix}:{`)) return undefined;
  const close = key.lastIndexOf('}:');
  if (close < prefix.length + 2) return undefined;
  const tag = key.slice(prefix.length + 2, close);
  const role = key.slice(close + 2);
  if (/[{}]/.test(tag) || !ROLES.has(role)) return undefined;
  const name = tag.replace(/%(25|7B|7D)/g, (_, code: string) => (code === '25' ? '%' : code === '7B' ? '{' : '}'));
  // Only names padlock could have written: hashTag(name) must give this tag back.
  if (hashTag(name) !== tag || name.length === 0) return undefined;
  return { name, role: role as KeyState['role'] };
}

/**
 * The names of the locks under `prefix` matching `namePattern` that have a key: held, queued on, or
 * freed within the hour (a freed lock's key stays an hour, keeping its last fence). Walks every node
 * with `SCAN` (never `KEYS`), `count` keys a step.
 * @returns the names, sorted
 */
export async function scanLockNames(nodes: readonly ScanNode[], prefix: string, namePattern: string, options: { count?: number } = {}): Promise<string[]> {
  const pattern = lockKeyPattern(prefix, namePattern);
  const names = new Set<string>();
  await Promise.all(
    nodes.map(async (node) => {
      let cursor = '0';
      do {
        const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', options.count ?? 1_000);
        cursor = next;
        for (const key of keys) {
          const parsed = parseLockKey(prefix, key);
          if (parsed !== undefined) names.add(parsed.name);
        }
      } while (cursor !== '0');
    }),
  );
  return [...names].sort();
}

/** Whether a lock is in use: held, or with live waiters. */
export function inUse(state: LockState): boolean {
  return state.held || state.waiting > 0;
}

/**
 * The locks under `prefix` whose name matches `namePattern`, read: those in use (see {@link inUse}),
 * or with `all` every one that still has a key. Sorted by name.
 * @param nodes every node to SCAN: the server, or each master of a Cluster
 */
export async function listLocks(nodes: readonly ScanNode[], reader: LockReader, prefix: string, namePattern: string, options: { all?: boolean; waiters?: number } = {}): Promise<LockState[]> {
  const states = await reader.readAll(await scanLockNames(nodes, prefix, namePattern), options.waiters);
  return options.all === true ? states : states.filter(inUse);
}

/** Reads lock states over one connection (a single server, a Sentinel-managed primary or a Cluster). */
export class LockReader {
  readonly #runner: ScriptRunner;
  readonly #prefix: string;

  /**
   * @param connection the client's connection (an adapter's from src/redis/, e.g. `fromIoredis(client)`)
   * @param prefix the Padlock key prefix the locks live under
   */
  constructor(connection: CommandConnection, prefix: string) {
    this.#runner = new ScriptRunner(connection);
    this.#prefix = prefix;
  }

  /**
   * Reads one lock, free or not, with its first `waiters` queued waiters described.
   * @throws RedisUnavailableError or RedisCommandError from the call
   */
  async read(name: string, waiters = 100): Promise<LockState> {
    const keys = lockKeys(this.#prefix, name);
    const reply = await this.#runner.send(inspectScript, scriptKeys(keys), [waiters], name);
    return lockState(name, keys, reply);
  }

  /** Reads each of `names`, at most `concurrency` calls in flight, in the order given. */
  async readAll(names: readonly string[], waiters = 100, concurrency = 64): Promise<LockState[]> {
    const states: LockState[] = new Array<LockState>(names.length);
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < names.length) {
        const i = next++;
        states[i] = await this.read(names[i] as string, waiters);
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, names.length) }, worker));
    return states;
  }
}

/** Turns inspect.lua's reply into a {@link LockState}. */
function lockState(name: string, keys: LockKeys, reply: InspectReply): LockState {
  const queue: QueueReply = reply.queue ?? { now: 0, lastFence: 0, queuePttl: -2, waitersPttl: -2, length: 0, waiters: [] };
  const held = reply.fence > 0;
  const waiters = queue.waiters.map((w, i): WaiterState => {
    const known = w.kind !== '';
    return {
      position: i + 1,
      owner: w.owner,
      kind: w.kind === 'fair' || w.kind === 'mutex' ? w.kind : 'unknown',
      clientId: known ? w.clientId : null,
      alive: known && w.expiry >= queue.now,
      waitedMs: w.since === undefined ? null : Math.max(0, queue.now - w.since),
      heartbeatMs: known ? w.expiry - queue.now : null,
      leaseMs: known ? w.leaseMs : null,
    };
  });
  const dead = waiters.filter((w) => !w.alive).length;
  const waited = waiters.flatMap((w) => (w.alive && w.waitedMs !== null ? [w.waitedMs] : []));
  const ttl = (pttl: number): number | null => (pttl >= 0 ? pttl : null);
  return {
    name,
    kind: 'mutex',
    held,
    fence: held ? reply.fence : null,
    leaseMs: held ? ttl(reply.pttl) : null,
    holders: [...reply.holders].map(([owner, holdCount]) => ({ owner, holdCount, clients: clientIds(reply.clients) ?? null })),
    waiting: Math.max(0, queue.length - dead),
    oldestWaitMs: waited.length > 0 ? Math.max(...waited) : null,
    lastFence: queue.lastFence > 0 ? queue.lastFence : null,
    waiters,
    keys: [
      { role: 'lock', key: keys.lock, type: 'string', exists: reply.pttl !== -2, ttlMs: ttl(reply.pttl) },
      { role: 'queue', key: keys.queue, type: 'list', exists: queue.queuePttl !== -2, ttlMs: ttl(queue.queuePttl) },
      { role: 'waiters', key: keys.waiters, type: 'hash', exists: queue.waitersPttl !== -2, ttlMs: ttl(queue.waitersPttl) },
    ],
  };
}

/** Whether a lock's holder is dead: every client holding it let its liveness key run out. */
export type HolderLiveness = 'dead' | 'alive' | 'unknown';

/**
 * Reaps dead holders over one connection (a single server, a Sentinel-managed primary or a Cluster):
 * the `padlock reap` side of src/reaping.ts.
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

  /** Whether the holder of `state` is dead, without changing anything (`unknown`: free, or its clients unknown). */
  async holderLiveness(state: LockState): Promise<HolderLiveness> {
    const holder = state.holders[0];
    if (!state.held || holder === undefined || holder.clients === null) return 'unknown';
    const alive = await Promise.all(holder.clients.map((id) => this.#topology.run(clientsAliveCall([livenessKey(this.#prefix, id)]))));
    return alive.some((n) => n > 0) ? 'alive' : 'dead';
  }

  /**
   * Frees the lock `state` describes if the same holder still holds it and its clients are all dead
   * (atomically on one server; on a Cluster, checked first: see reaping.ts), giving its turn to the
   * queue as a release does.
   * @throws RedisUnavailableError or RedisCommandError from the calls
   */
  async reap(state: LockState): Promise<ReapOutcome> {
    const holder = state.holders[0];
    if (!state.held || holder === undefined) return 'changed';
    if (holder.clients === null) return 'unknown';
    return reapIfDead(this.#topology, this.#prefix, lockKeys(this.#prefix, state.name), { owner: holder.owner, clients: holder.clients.join(',') });
  }
}
