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
 * The check runs in the same script as the grant, after it, so it reads the process that made the
 * grant.
 */
import type { Arg } from '../adapters/connection.js';
import { defineScript, type Script } from '../adapters/script-runner.js';
import { luaSources } from '../scripts/embedded.js';

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
  /** The run id of the process that answered: a later check over the same connection names it, and so costs no INFO. */
  readonly run: string;
  /**
   * Whether the epoch began on a master that had no marker at all (it ran out, so no hold granted
   * there lives; or the master lost its data), not over another process's marker (a restart from a
   * file, a promoted replica: proof that the set was in use). Only bare epochs make a first use.
   */
  readonly bare: boolean;
}

/**
 * The TTL a marker is given: twice the longest lease recorded (the script never sets less), set
 * when the marker changes and again once half of it ran. After any round that touched it, a marker
 * so lives at least the longest lease: longer than every hold that round could have granted or
 * renewed, and longer than any lock key that round wrote. A marker that ran out so means that no hold
 * that master granted or renewed can still live: a majority of answers all on bare epochs (none
 * carrying another marker) is a first use again, whichever masters do not answer.
 */
export function markerTtlMs(longestMs: number): number {
  return Math.max(10_000, 2 * longestMs);
}


/** The marker's check and resolve (src/stores/redis/scripts/redlock-epoch.lua). */
export const epochScript = defineScript('redlock-epoch', luaSources.redlockEpoch, (reply): Epoch => {
  // Read by index (no copy, no iterator): every fresh attempt reads one per master.
  const values: readonly unknown[] = Array.isArray(reply) && reply.length === 6 ? reply : [];
  const resolved = values[0];
  const waitMs = values[1];
  const longestMs = values[2];
  const born = values[3];
  const run = values[4];
  const bare = values[5];
  if (typeof resolved !== 'number' || typeof waitMs !== 'number' || typeof longestMs !== 'number' || typeof born !== 'number' || typeof run !== 'string' || typeof bare !== 'number') {
    throw new TypeError(`redlock-epoch: unexpected reply ${JSON.stringify(reply)}`);
  }
  return { state: resolved === 0 ? 'unresolved' : waitMs > 0 ? 'sitting' : 'ready', waitMs, longestMs, born, run, bare: bare === 1 };
});

/**
 * The check a round runs after its call: records `longestMs` and reads the epoch. `knownRun`: the
 * run id an earlier check read over the very connection this one is sent on, or `''`. The script
 * takes it at its word where the marker names the same run (then it skips the INFO that reads it),
 * so the caller must not count an answer that came over another connection (a reconnect: a call
 * sent again to whatever process now listens there).
 */
export function checkArgs(longestMs: number, knownRun: string): Arg[] {
  return ['check', longestMs, markerTtlMs(longestMs), knownRun];
}

/** Sets an unresolved epoch's sit-out (ms); nothing if the epoch read (`born`) is not the master's any more. */
export function resolveArgs(epoch: Epoch, sitOutMs: number, longestMs: number): Arg[] {
  return ['resolve', Math.ceil(sitOutMs), markerTtlMs(longestMs), epoch.born];
}

/** A call's reply and the epoch of the process that ran it. */
export interface Checked<Result> {
  readonly value: Result;
  readonly epoch: Epoch;
}

/** How many arguments of a checked call are the check's (they come last: see {@link checkedScript}). */
const CHECK_ARGS = 4;

const checkedScripts = new Map<Script<unknown>, Script<Checked<unknown>>>();

/**
 * `script` followed by the epoch check, as one script: KEYS are `script`'s own and then the marker,
 * ARGV `script`'s own and then the check's four ({@link checkArgs}). The check's key and arguments
 * are taken off the ends of KEYS and ARGV first (no copy of either), so `script`'s source runs
 * unchanged on its own; the check runs as a function whose parameters `KEYS` and `ARGV` are its own.
 * The check so reads the very process that ran the call, in the same atomic step, and a master
 * costs one command, one write and one script run per attempt.
 */
export function checkedScript<Result>(script: Script<Result>): Script<Checked<Result>> {
  const known = checkedScripts.get(script);
  if (known !== undefined) return known as Script<Checked<Result>>;
  const source = [
    `-- ${script.name}, then the Redlock epoch check (src/stores/redis/topology/master-epoch.ts).`,
    'local marker = table.remove(KEYS)',
    `local check = {}`,
    `for i = ${CHECK_ARGS}, 1, -1 do check[i] = table.remove(ARGV) end`,
    'local reply = (function()',
    script.source,
    'end)()',
    // A nil would end the reply's array early: Redis reads false as a nil reply.
    'if reply == nil then reply = false end',
    'local epoch = (function(KEYS, ARGV)',
    luaSources.redlockEpoch,
    'end)({marker}, check)',
    'return {reply, epoch}',
  ].join('\n');
  const checked = defineScript(`${script.name}+redlock-epoch`, source, (reply): Checked<Result> => {
    if (!Array.isArray(reply) || reply.length !== 2) throw new TypeError(`${script.name}+redlock-epoch: unexpected reply ${JSON.stringify(reply)}`);
    return { value: script.parse(reply[0]), epoch: epochScript.parse(reply[1]) };
  });
  checkedScripts.set(script, checked);
  return checked;
}
