/**
 * A semaphore's limit is the one stored by `setPermits`, else the `permits` each client's code
 * passes to `padlock.semaphore(name, permits)`: clients whose code passes different values each
 * admit up to their own (two with 2 and 10 let 10 in), and a stored limit silently overrides the
 * code's. Neither is an error a call could fail with, so each is a process warning, once per
 * semaphore per process, with the code {@link SEMAPHORE_LIMIT_WARNING}.
 *
 * Each Padlock checks a semaphore the first time it uses it (a read beside its first call, never in
 * its way), and on every `available()` and `limit()`, which read the state anyway. Grants made by
 * the creation value record that value in Redis (docs/protocol.md), so the client that comes
 * second learns of the first.
 */
import type { SemaphoreInspectReply } from '../scripts/index.js';

/** The `code` of the warning emitted when clients disagree on a semaphore's limit. */
export const SEMAPHORE_LIMIT_WARNING = 'PADLOCK_SEMAPHORE_LIMIT';

/** Semaphores (prefix and name) already warned about in this process. */
const warned = new Set<string>();

/** Each Padlock's semaphores already checked (by its shared state, which lives as long as it does). */
const checked = new WeakMap<object, Set<string>>();

/** The limits each Padlock stored with setPermits(): not a disagreement for that Padlock, which asked for it. */
const storedHere = new WeakMap<object, Map<string, number>>();

/** Records that the Padlock `owner` stored `limit` for the semaphore `name`. */
export function rememberStored(owner: object, name: string, limit: number): void {
  let limits = storedHere.get(owner);
  if (limits === undefined) storedHere.set(owner, (limits = new Map<string, number>()));
  limits.delete(name);
  limits.set(name, limit);
  // Bounded as the names checked are: the oldest entry goes first.
  if (limits.size > MAX_CHECKED_NAMES) limits.delete(limits.keys().next().value as string);
}

/** The limit the Padlock `owner` last stored for `name`, if it did. */
export function storedBy(owner: object, name: string): number | undefined {
  return storedHere.get(owner)?.get(name);
}

/** Past this many names a Padlock stops checking new ones, rather than remember every name it ever used. */
const MAX_CHECKED_NAMES = 10_000;

/** Whether `name` is yet to be checked by the Padlock `owner`; marks it checked. */
export function firstUse(owner: object, name: string): boolean {
  let names = checked.get(owner);
  if (names === undefined) checked.set(owner, (names = new Set<string>()));
  if (names.has(name) || names.size >= MAX_CHECKED_NAMES) return false;
  names.add(name);
  return true;
}

/**
 * What is wrong with the limit `state` shows, for code that passes `permits`; `undefined` when
 * nothing is. `ownStored`: the limit this Padlock stored itself (it asked for it: no surprise).
 */
export function limitDisagreement(name: string, permits: number, state: Pick<SemaphoreInspectReply, 'limit' | 'stored' | 'createdWith'>, ownStored?: number): string | undefined {
  if (state.stored) {
    if (state.limit === permits || state.limit === ownStored) return undefined;
    return (
      `semaphore "${name}": its limit stored by setPermits() is ${state.limit}, but this code makes it with ${permits}; ` +
      `the stored limit applies (until the semaphore is unused for an hour). Make them agree, or drop the setPermits() call`
    );
  }
  const others = [...new Set(state.createdWith)].filter((n) => n !== permits).sort((a, b) => a - b);
  if (others.length === 0) return undefined;
  return (
    `semaphore "${name}": clients disagree on its limit: this code makes it with ${permits}, others with ${others.join(', ')} ` +
    `(within the last hour); each admits up to its own, so up to ${Math.max(permits, ...others)} permits may be held at once. ` +
    `Make them agree, or store one limit with setPermits()`
  );
}

/** Emits the warning for `message` about the semaphore `name` under `prefix`, once per process. */
export function warnLimitDisagreement(prefix: string, name: string, message: string): void {
  const key = `${prefix}\u0000${name}`;
  if (warned.has(key)) return;
  warned.add(key);
  process.emitWarning(message, { type: 'PadlockWarning', code: SEMAPHORE_LIMIT_WARNING });
}
