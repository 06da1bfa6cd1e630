/**
 * padlock's debug log: `NODE_DEBUG=padlock` (Node's `util.debuglog`) writes to stderr one line per
 * script command sent to Redis (script, lock, node, duration, and the reply's status or the error),
 * and one for each hold warning, lost lock and shutdown step. Off, it costs nothing per call: the
 * script runner wraps its connection only when the log is on (src/stores/redis/adapters/script-runner.ts).
 *
 * Owner tokens are never written: a token lets its bearer re-enter the hold (`acquire({ owner })`).
 */
import { performance } from 'node:perf_hooks';
import { debuglog } from 'node:util';
import type { Arg, CommandConnection, EvalshaCall, WaitFor } from '../stores/redis/adapters/connection.js';

const log = debuglog('padlock');

/**
 * Whether `NODE_DEBUG` names padlock (`padlock`, or a pattern such as `pad*`). Node reads
 * `NODE_DEBUG` once, when the process starts; this is read once too.
 */
export const debugEnabled: boolean = log.enabled;

/** Writes one line of the debug log (`PADLOCK <pid>: …` on stderr). Check {@link debugEnabled} first. */
export function debug(message: string): void {
  log('%s', message);
}

/** What the log needs of a script: its name, its source (to name an EVAL), and how to read its reply. */
interface KnownScript {
  readonly name: string;
  readonly source: string;
  readonly parse: (reply: unknown) => unknown;
}

/** Every script padlock defined, by SHA1 (filled by `defineScript`), so a logged EVALSHA can be named. */
export const knownScripts = new Map<string, KnownScript>();

/** How a command was sent. */
type Via = 'evalsha' | 'eval' | 'pipeline';

/**
 * `connection`, logging every script command it sends with its outcome, e.g.
 * `script acquire.lua lock="order:42" node=127.0.0.1:6379 evalsha 0.31 ms → acquired fence=7 holdCount=1 pttl=30000`.
 */
export function loggedConnection(connection: CommandConnection): CommandConnection {
  const where = (keys: readonly string[]): string => {
    const key = keys[0];
    return connection.isCluster && key !== undefined ? connection.nodeOf(key) || 'a Redis Cluster' : connection.address;
  };
  const logged = async <T>(via: Via, script: KnownScript | undefined, keys: readonly string[], send: () => Promise<T>, replyOf: (sent: T) => unknown): Promise<T> => {
    const node = where(keys); // read when sent: a Cluster's slot map may change by the reply
    const startedAt = performance.now();
    try {
      const sent = await send();
      logCall(via, script, keys, node, performance.now() - startedAt, { reply: replyOf(sent) });
      return sent;
    } catch (error) {
      logCall(via, script, keys, node, performance.now() - startedAt, { error });
      throw error;
    }
  };
  const bySha = (sha: string): KnownScript | undefined => knownScripts.get(sha);
  const bySource = (source: string): KnownScript | undefined => [...knownScripts.values()].find((s) => s.source === source);
  const first = <T>(pair: readonly [T, number]): T => pair[0];
  const itself = <T>(reply: T): T => reply;
  return {
    evalsha: (sha: string, keys: readonly string[], args: readonly Arg[]) => logged('evalsha', bySha(sha), keys, () => connection.evalsha(sha, keys, args), itself),
    eval: (source: string, keys: readonly string[], args: readonly Arg[]) => logged('eval', bySource(source), keys, () => connection.eval(source, keys, args), itself),
    evalshaThenWait: (sha: string, keys: readonly string[], args: readonly Arg[], wait: WaitFor) =>
      logged('evalsha', bySha(sha), keys, () => connection.evalshaThenWait(sha, keys, args, wait), first),
    evalThenWait: (source: string, keys: readonly string[], args: readonly Arg[], wait: WaitFor) =>
      logged('eval', bySource(source), keys, () => connection.evalThenWait(source, keys, args, wait), first),
    evalshaMany: async (calls: readonly EvalshaCall[]) => {
      const nodes = calls.map((call) => where(call.keys));
      const startedAt = performance.now();
      const settled = await connection.evalshaMany(calls);
      const ms = performance.now() - startedAt;
      calls.forEach((call, i) => {
        const outcome = settled[i];
        const result = outcome === undefined ? { error: new Error('discarded') } : outcome.error === null ? { reply: outcome.reply } : { error: outcome.error };
        logCall('pipeline', bySha(call.sha), call.keys, nodes[i] ?? '', ms, result);
      });
      return settled;
    },
    nodeOf: (key: string) => connection.nodeOf(key),
    openSubscriber: () => connection.openSubscriber(),
    isReplyError: (error: unknown) => connection.isReplyError(error),
    session: () => connection.session(),
    firstConnection: () => connection.firstConnection(),
    isCluster: connection.isCluster,
    shardedPubSub: connection.shardedPubSub,
    get status() {
      return connection.status;
    },
    address: connection.address,
  };
}

function logCall(via: Via, script: KnownScript | undefined, keys: readonly string[], node: string, ms: number, outcome: { reply: unknown } | { error: unknown }): void {
  const result = 'error' in outcome ? `error ${describeError(outcome.error)}` : describeReply(script, outcome.reply);
  debug(`script ${script?.name ?? 'unknown'}${describeLocks(keys)} node=${node} ${via} ${ms.toFixed(2)} ms → ${result}`);
}

/** The lock a call concerns, from its first key's hash tag (`prefix:{name}:…`), or how many locks a renewal covers. */
export function describeLocks(keys: readonly string[]): string {
  const names = new Set(keys.map(lockNameOf).filter((name): name is string => name !== undefined));
  if (names.size === 0) return '';
  if (names.size === 1) return ` lock=${JSON.stringify([...names][0])}`;
  return ` locks=${names.size}`;
}

/** The lock name in a padlock key's hash tag, unescaped (see keys.ts `hashTag`). */
function lockNameOf(key: string): string | undefined {
  const open = key.indexOf('{');
  const close = key.indexOf('}', open + 1);
  if (open < 0 || close < 0) return undefined;
  return key.slice(open + 1, close).replace(/%7B|%7D|%25/g, (escape) => (escape === '%7B' ? '{' : escape === '%7D' ? '}' : '%'));
}

/** A reply in a few words: the script's reading of it (its status and numbers), never an owner token. */
export function describeReply(script: KnownScript | undefined, raw: unknown): string {
  let reply: unknown = raw;
  try {
    if (script !== undefined) reply = script.parse(raw);
  } catch {
    return `unexpected reply ${describeValue(raw)}`;
  }
  // A parsed reply that is a string is a status (reap.lua's), never a token.
  if (script !== undefined && typeof reply === 'string') return reply;
  if (reply === null || typeof reply !== 'object' || Array.isArray(reply)) return describeValue(reply);
  const parts: string[] = [];
  for (const [key, value] of Object.entries(reply)) {
    if (key === 'status' && typeof value === 'string') parts.unshift(value);
    else if (typeof value === 'number' || typeof value === 'boolean') parts.push(`${key}=${value}`);
    // An inspect reply's holders are owner tokens: only how many.
    else if (value instanceof Map) parts.push(`${key}=${value.size}`);
  }
  return parts.join(' ');
}

function describeValue(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((v) => (typeof v === 'number' || typeof v === 'boolean' ? String(v) : typeof v)).join(', ')}]`;
  return typeof value === 'number' || typeof value === 'boolean' || value === null || value === undefined ? String(value) : typeof value;
}

/** An error in one line: its name, code (when it has one) and message. */
export function describeError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const code = 'code' in error && typeof error.code === 'string' ? ` [${error.code}]` : '';
  return `${error.name}${code}: ${error.message}`;
}
