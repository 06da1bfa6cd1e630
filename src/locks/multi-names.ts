/**
 * The names of a multi-lock: validated, folded (a name given twice is locked once) and put in the
 * one order every multi-lock takes its names in, whatever order its caller gave them in. Taking
 * names in one global order is what keeps two callers asking for overlapping sets from deadlocking.
 */
import { PadlockOptionError } from '../errors.js';
import { checkName, MAX_NAME_LENGTH } from '../options.js';

/**
 * Validates `names` (a non-empty array of lock names) and returns them without duplicates, sorted
 * by UTF-16 code units (the same order in every process and every version of Node).
 * @throws PadlockOptionError naming `names` or `names[i]`
 */
export function canonicalNames(names: unknown): readonly string[] {
  if (!Array.isArray(names) || names.length === 0) {
    throw new PadlockOptionError('names', 'a non-empty array of lock names', names);
  }
  const checked = (names as unknown[]).map((name, i) => {
    try {
      return checkName(name);
    } catch (error) {
      if (error instanceof PadlockOptionError) throw new PadlockOptionError(`names[${i}]`, `a lock name: a non-empty, well-formed string of at most ${MAX_NAME_LENGTH} characters`, name);
      throw error;
    }
  });
  return [...new Set(checked)].sort(compareCodeUnits);
}

/** Orders strings by UTF-16 code units, as `Array.prototype.sort` does by default, with no locale. */
function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The multi-lock's own name, in errors and events: its names in canonical order, as JSON (unambiguous whatever they contain). */
export function multiName(names: readonly string[]): string {
  return JSON.stringify(names);
}
