/**
 * Redlock's restart rule: a master that may have lost grants (restarted empty, or restarted from a
 * file that missed the last writes, or a replica promoted in its place) sits out — its grants do not
 * count — until the longest lease it might have granted has passed. See docs/protocol.md, "A master
 * that lost its data".
 *
 * Each master keeps one marker hash (`<prefix>:redlock-epoch`): the `run_id` of the process that wrote
 * it, when that process first saw it (`born`, its own clock), when its grants count again (`until`;
 * -1 while nobody has said yet) and the longest lease any client asked of the set (`longest`). The
 * marker lives in the same dataset as the grants: whatever loses a grant loses the marker too, or
 * leaves one that another process wrote (another `run_id`). Either way the master starts a new epoch.
 * The check runs in the same round trip as the grant, after it, on the same connection, so it reads
 * the process that made the grant (a NOSCRIPT answer, which a fresh process gives, makes it run
 * again after the grant is sent again).
 */
import { RedisCommandError } from '../errors.js';
import { debugEnabled, loggedConnection } from '../observability/debug-log.js';
import type { Arg, CommandConnection } from '../redis/connection.js';
import { defineScript, wrap, type ScriptRunner } from '../redis/script-runner.js';
import { luaSources } from '../scripts/embedded.js';
import type { GaveUp, ScriptCall } from './topology.js';

/** A master's epoch as one check read it. */
export interface Epoch {
  /** `ready`: its grants count; `sitting`: for `waitMs` more; `unresolved`: a new epoch whose sit-out nobody has set yet. */
  readonly state: 'ready' | 'sitting' | 'unresolved';
  /** How long it still sits out (ms; 0 unless `sitting`). */
  readonly waitMs: number;
  /** The longest lease recorded there (ms). */
  readonly longestMs: number;
  /** When the epoch began, on the master's clock (ms): a resolution names it, so it never resolves a newer one. */
  readonly born: number;
}

/**
 * How long a marker lives after the last round that touched it: twice the longest lease recorded
 * (the script never sets less), so it outlives every hold a round touching it could have granted.
 * Markers that all ran out mean no lock granted on the set can still be held: a first use again.
 */
export function markerTtlMs(longestMs: number): number {
  return Math.max(10_000, 2 * longestMs);
}


/** The marker's check and resolve (src/scripts/redlock-epoch.lua). */
export const epochScript = defineScript('redlock-epoch', luaSources.redlockEpoch, (reply): Epoch => {
  if (!Array.isArray(reply) || reply.length !== 4 || !reply.every((v) => typeof v === 'number')) throw new TypeError(`redlock-epoch: unexpected reply ${JSON.stringify(reply)}`);
  const [resolved, waitMs, longestMs, born] = reply as [number, number, number, number];
  return { state: resolved === 0 ? 'unresolved' : waitMs > 0 ? 'sitting' : 'ready', waitMs, longestMs, born };
});

/** The check a round sends after its call: records `longestMs` and reads the epoch. */
export function checkArgs(longestMs: number): Arg[] {
  return ['check', longestMs, markerTtlMs(longestMs)];
}

/** Sets an unresolved epoch's sit-out (ms); nothing if the epoch read (`born`) is not the master's any more. */
export function resolveArgs(epoch: Epoch, sitOutMs: number, longestMs: number): Arg[] {
  return ['resolve', Math.ceil(sitOutMs), markerTtlMs(longestMs), epoch.born];
}

/**
 * Sends `call`, then the epoch check, in one round trip on one connection: the check reads the
 * process that ran the call. When the call had to be sent again by its source (NOSCRIPT: a process
 * whose script cache is empty, such as one just restarted), the check is sent again after it.
 */
export async function sendChecked<Result>(runner: ScriptRunner, connection: CommandConnection, call: ScriptCall<Result>, marker: string, check: readonly Arg[], gaveUp?: GaveUp): Promise<{ readonly value: Result; readonly epoch: Epoch }> {
  const isReply = (error: unknown): boolean => connection.isReplyError(error);
  // NODE_DEBUG=padlock logs these commands too, as the runner logs its own.
  const pipe = debugEnabled ? loggedConnection(connection) : connection;
  let settled: Awaited<ReturnType<CommandConnection['evalshaMany']>>;
  try {
    settled = await pipe.evalshaMany([
      { sha: call.script.sha, keys: call.keys, args: call.args },
      { sha: epochScript.sha, keys: [marker], args: check },
    ]);
  } catch (error) {
    throw wrap(error, call.lock, isReply);
  }
  const [first, second] = settled;
  if (first === undefined || second === undefined) throw wrap(new Error('the pipelined call was discarded'), call.lock, isReply);
  if (first.error !== null) {
    if (!(isReply(first.error) && /NOSCRIPT/.test(first.error.message))) throw wrap(first.error, call.lock, isReply);
    const value = await runner.send(call.script, call.keys, call.args, call.lock, gaveUp);
    return { value, epoch: await runner.send(epochScript, [marker], check, call.lock) };
  }
  let value: Result;
  try {
    value = call.script.parse(first.reply);
  } catch (error) {
    throw new RedisCommandError(call.lock, error);
  }
  if (second.error !== null) return { value, epoch: await runner.send(epochScript, [marker], check, call.lock) };
  try {
    return { value, epoch: epochScript.parse(second.reply) };
  } catch (error) {
    throw new RedisCommandError(call.lock, error);
  }
}
