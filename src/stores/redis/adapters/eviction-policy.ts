/**
 * Whether a Redis server may evict padlock's keys. With `maxmemory` reached, a server whose
 * `maxmemory-policy` is anything but `noeviction` deletes keys to make room: a lock's key among
 * them, and another client then takes the lock while its holder still believes it holds it (until
 * its next renewal fails). Under `volatile-*` it is worse: padlock's keys all carry a TTL, so they
 * are the only candidates. padlock cannot prevent it; it warns, once per server per process
 * (`process.emitWarning`, code {@link EVICTION_WARNING_CODE}, and the debug log).
 *
 * Each topology reads the policy of each server it uses, once per connection to it: on the first
 * call that reaches that server, sent beside that call (never awaited by it), and again after the
 * client reconnects or a Cluster slot moves to another master (a failover may bring a server
 * configured otherwise). It reads `INFO memory` from a script (`CONFIG GET` is refused by managed
 * services, and is not allowed in scripts).
 */
import { RedisCommandError } from '../../../errors.js';
import { debug, debugEnabled } from '../../../observability/debug-log.js';
import { luaSources } from '../scripts/embedded.js';
import type { CommandConnection } from './connection.js';
import { defineScript, type ScriptRunner } from './script-runner.js';

/** The `code` of the warning padlock emits for a server that may evict its keys. */
export const EVICTION_WARNING_CODE = 'PADLOCK_EVICTION_POLICY';

/** The only `maxmemory-policy` under which Redis never deletes a key to make room. */
export const SAFE_POLICY = 'noeviction';

/** A server's memory settings, as `INFO memory` states them. */
export interface MemoryPolicy {
  /** `maxmemory-policy`: `noeviction`, `allkeys-lru`, `volatile-ttl`, … */
  readonly policy: string;
  /** `maxmemory` in bytes; 0: no limit (nothing is evicted until one is set). */
  readonly maxmemory: number;
}

/** What the server-memory script reads: the policy, and which server it is (its `run_id`). */
export interface ServerMemory extends MemoryPolicy {
  /** The server's `run_id`, new at each start: one server, whatever address the client reaches it by. */
  readonly runId: string;
}

/** Reads `maxmemory_policy` and `maxmemory` from the text of `INFO memory` (or `INFO`); `undefined` when it has no policy. */
export function memoryPolicyOf(info: string): MemoryPolicy | undefined {
  const policy = /^maxmemory_policy:([^\r\n]+)/m.exec(info)?.[1]?.trim();
  if (policy === undefined || policy === '') return undefined;
  const maxmemory = Number(/^maxmemory:(\d+)/m.exec(info)?.[1] ?? 0);
  return { policy, maxmemory };
}

/** Whether a server with `policy` may delete padlock's keys when full. */
export function evicts(policy: string): boolean {
  return policy !== SAFE_POLICY;
}

/** Why `policy` (an evicting one) endangers locks, in a few words. */
export function evictionRisk(policy: string): string {
  const which = policy.startsWith('volatile-')
    ? "padlock's keys all carry a TTL, so they are the first (and may be the only) keys it evicts"
    : "it may evict any key, a lock's among them";
  return `when full, ${which}: another client then takes a lock whose holder still believes it holds it, until its next renewal fails`;
}

/** The warning for `server`, whose memory policy is `memory` (an evicting one). */
export function evictionWarning(server: string, memory: MemoryPolicy): string {
  const limit = memory.maxmemory > 0 ? `maxmemory ${memory.maxmemory} bytes` : 'no maxmemory yet: nothing is evicted until one is set';
  return (
    `Redis ${server} has maxmemory-policy ${memory.policy} (${limit}): ${evictionRisk(memory.policy)}. ` +
    `Only maxmemory-policy ${SAFE_POLICY} is safe for locks (docs/safety.md).`
  );
}

export const serverMemoryScript = defineScript('server-memory.lua', luaSources.serverMemory, (reply): ServerMemory => {
  if (!Array.isArray(reply) || reply.length !== 2 || typeof reply[0] !== 'string' || typeof reply[1] !== 'string') {
    throw new TypeError(`unexpected reply from padlock script server-memory.lua: ${typeof reply}`);
  }
  const memory = memoryPolicyOf(reply[0]);
  if (memory === undefined) throw new TypeError('INFO memory has no maxmemory_policy');
  return { ...memory, runId: reply[1] };
});

/** Servers this process has warned about, by `run_id` (its address when it has none): each once. */
const warned = new Set<string>();

/** Warns about `server` unless this process already did. */
function warnOnce(server: string, memory: ServerMemory): void {
  const id = memory.runId === '' ? server : memory.runId;
  if (warned.has(id)) return;
  warned.add(id);
  const message = evictionWarning(server, memory);
  if (debugEnabled) debug(`eviction: ${message}`);
  process.emitWarning(message, { type: 'PadlockWarning', code: EVICTION_WARNING_CODE });
}

/**
 * Reads the memory policy of each server one connection reaches, once per server and connection,
 * and warns about those that evict. A topology calls {@link check} with the keys of each call it
 * sends; that costs a property read or two, and sends nothing once the server was read.
 */
export class EvictionPolicyCheck {
  readonly #runner: ScriptRunner;
  readonly #connection: CommandConnection;
  /** Servers read (or being read), by node (`''` for a client that reaches one server). */
  readonly #checked = new Set<string>();
  /** Whether the client has been ready (connected) once. */
  #wasReady = false;
  /** It was ready, then was not: once ready again it may reach another server (a failover). */
  #reconnecting = false;
  /** The server the client last named as the one it reaches (a Sentinel client's primary). */
  #lastAddress: string | undefined;

  constructor(runner: ScriptRunner, connection: CommandConnection) {
    this.#runner = runner;
    this.#connection = connection;
  }

  /** Reads, in the background, the policy of the server that serves `keys` (a call's), unless it was read on this connection. */
  check(keys: readonly string[]): void {
    this.#followReconnects();
    const key = keys[0];
    if (key === undefined) return;
    const connection = this.#connection;
    const node = connection.isCluster ? connection.nodeOf(key) : '';
    // A Cluster client that has no slot map yet cannot name the node: a later call checks it.
    if (this.#checked.has(node) || (node === '' && connection.isCluster)) return;
    this.#checked.add(node);
    // Named once answered: a Sentinel client's address is the primary it reached.
    const server = (): string => (node === '' ? connection.address : node);
    this.#runner.send(serverMemoryScript, [key], []).then(
      (memory) => {
        if (evicts(memory.policy)) warnOnce(server(), memory);
      },
      (error: unknown) => {
        // Refused (an ACL without INFO, say): said once in the debug log, not asked again. Else
        // (the connection failed) the next call to that server asks again.
        if (!(error instanceof RedisCommandError)) this.#checked.delete(node);
        if (debugEnabled) debug(`eviction: could not read the maxmemory-policy of Redis ${server()}: ${error instanceof Error ? error.message : String(error)}`);
      },
    );
  }

  /** After a reconnection the client may reach another server (a Sentinel failover): read again. */
  #followReconnects(): void {
    const ready = this.#connection.status === 'ready';
    if (ready && this.#reconnecting) this.#checked.clear();
    // A reconnection between two calls is not seen by its status, but a Sentinel client that
    // followed a failover names another server.
    const address = this.#connection.address;
    if (this.#lastAddress !== undefined && address !== this.#lastAddress) this.#checked.clear();
    this.#lastAddress = address;
    if (ready) {
      this.#wasReady = true;
      this.#reconnecting = false;
    } else if (this.#wasReady) {
      this.#reconnecting = true;
    }
  }
}
