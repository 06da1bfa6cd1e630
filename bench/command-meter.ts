/**
 * Counts the commands this process's ioredis clients send, by name, so that "commands the client
 * sent" can be told apart from "commands Redis ran" (INFO commandstats also counts the commands a
 * Lua script calls). It wraps `Redis.prototype.sendCommand`, the one method every ioredis command,
 * script call, pub/sub command and pipeline entry goes through, including on `duplicate()`d
 * connections. It also counts the pub/sub messages this process's connections receive (ioredis
 * emits `messageBuffer` or `smessageBuffer` once for each, whatever the listeners), which is what a
 * waiter's wake-up costs the client: on a Redlock set, a release publishes on every master; and the
 * script calls by script (EVALSHA by its SHA1, EVAL by its source's), so that a lock's attempts,
 * fence write-backs and releases can be told apart.
 * Benchmark-only instrumentation: nothing in `src/` knows about it.
 */
import { createHash } from 'node:crypto';
import { Redis } from 'ioredis';

export type CommandCounts = Record<string, number>;

let counts = new Map<string, number>();
let scripts = new Map<string, number>();
let messages = 0;
let installed = false;

/** Starts counting (idempotent). */
export function installCommandMeter(): void {
  if (installed) return;
  installed = true;
  // eslint-disable-next-line @typescript-eslint/unbound-method -- called with `apply(this, …)` below
  const original = Redis.prototype.sendCommand;
  // A command queued while connecting passes through sendCommand again when the queue is flushed.
  const seen = new WeakSet<object>();
  Redis.prototype.sendCommand = function (this: Redis, ...args: Parameters<Redis['sendCommand']>): unknown {
    const command = args[0];
    if (!seen.has(command)) {
      seen.add(command);
      const name = command.name.toLowerCase();
      counts.set(name, (counts.get(name) ?? 0) + 1);
      const sha = scriptSha(name, command.args[0]);
      if (sha !== undefined) scripts.set(sha, (scripts.get(sha) ?? 0) + 1);
    }
    return original.apply(this, args);
  };
  // eslint-disable-next-line @typescript-eslint/unbound-method -- called with `apply(this, …)` below
  const emit = Redis.prototype.emit;
  Redis.prototype.emit = function (this: Redis, ...args: Parameters<Redis['emit']>): boolean {
    if (args[0] === 'messageBuffer' || args[0] === 'smessageBuffer') messages++;
    return emit.apply(this, args);
  };
}

/** The SHA1 a script call names: EVALSHA's first argument, or EVAL's source's. */
function scriptSha(name: string, first: unknown): string | undefined {
  if (name === 'evalsha') return String(first);
  if (name === 'eval') return createHash('sha1').update(String(first)).digest('hex');
  return undefined;
}

/** Forgets what was counted so far. */
export function resetCommandMeter(): void {
  counts = new Map();
  scripts = new Map();
  messages = 0;
}

/** Counts since the last reset. */
export function readCommandMeter(): CommandCounts {
  return Object.fromEntries(counts);
}

/** Script calls (EVALSHA and EVAL) by SHA1 since the last reset. */
export function readScriptMeter(): CommandCounts {
  return Object.fromEntries(scripts);
}

/** Pub/sub messages received since the last reset. */
export function readMessageMeter(): number {
  return messages;
}

/** Adds `b` into `a`. */
export function addCounts(a: CommandCounts, b: CommandCounts): CommandCounts {
  const sum: CommandCounts = { ...a };
  for (const [name, n] of Object.entries(b)) sum[name] = (sum[name] ?? 0) + n;
  return sum;
}

/** Sum of all counts. */
export function totalCount(counts: CommandCounts): number {
  return Object.values(counts).reduce((a, b) => a + b, 0);
}

/** Parses `INFO commandstats` into calls per command (subcommands such as `client|setname` kept apart). */
export function parseCommandStats(info: string): CommandCounts {
  const calls: CommandCounts = {};
  for (const line of info.split(/\r?\n/)) {
    const match = /^cmdstat_([^:]+):calls=(\d+)/.exec(line);
    if (match?.[1] !== undefined && match[2] !== undefined) calls[match[1]] = Number(match[2]);
  }
  return calls;
}

/** Parses `INFO commandstats` into the microseconds Redis spent in each command (scripts: the whole script). */
export function parseCommandMicros(info: string): CommandCounts {
  const micros: CommandCounts = {};
  for (const line of info.split(/\r?\n/)) {
    const match = /^cmdstat_([^:]+):calls=\d+,usec=(\d+)/.exec(line);
    if (match?.[1] !== undefined && match[2] !== undefined) micros[match[1]] = Number(match[2]);
  }
  return micros;
}

/** `after − before`, without zero entries. */
export function diffCounts(after: CommandCounts, before: CommandCounts): CommandCounts {
  const delta: CommandCounts = {};
  for (const [name, n] of Object.entries(after)) {
    const d = n - (before[name] ?? 0);
    if (d !== 0) delta[name] = d;
  }
  return delta;
}
