/** Parsers for the values options take, giving the one-line usage errors the CLI reports. */
import type { LockKind } from '../lock-state.js';
import { usageError } from './errors.js';

const KINDS: readonly LockKind[] = ['mutex', 'readWrite', 'semaphore'];

/**
 * A commander option parser for a lock family (`--kind`).
 * @throws CliError (exit code 2) naming the families
 */
export function kindParser(value: string): LockKind {
  const kind = KINDS.find((k) => k === value);
  if (kind === undefined) throw usageError(`--kind must be one of ${KINDS.join(', ')}, got '${value}'`);
  return kind;
}

/**
 * A commander option parser for an integer within `[min, max]`.
 * @throws CliError (exit code 2) saying which range is allowed
 */
export function integerParser(flag: string, min: number, max: number): (raw: string) => number {
  return (raw) => {
    const text = raw.trim();
    const value = /^\d+$/.test(text) ? Number(text) : NaN;
    if (!Number.isSafeInteger(value) || value < min || value > max) {
      throw usageError(`${flag} must be an integer from ${min} to ${max}, got '${raw}'`);
    }
    return value;
  };
}

const UNIT_MS = { ms: 1, s: 1_000, m: 60_000 } as const;

/**
 * A commander option parser for a duration, the one unit the CLI's time options share: a number
 * of seconds (decimals allowed: `0.5`), or a number with a unit (`500ms`, `2s`, `1m`), within
 * `[minMs, maxMs]`; returned in milliseconds.
 * @param hint said after the range when a bare number is refused (e.g. that the option was once in ms)
 * @throws CliError (exit code 2) saying which range is allowed
 */
export function durationParser(flag: string, minMs: number, maxMs: number, hint?: string): (raw: string) => number {
  return (raw) => {
    const match = /^(\d+(?:\.\d+)?)\s*(ms|s|m)?$/.exec(raw.trim());
    const ms = match === null ? NaN : Math.round(Number(match[1]) * UNIT_MS[(match[2] ?? 's') as keyof typeof UNIT_MS]);
    if (!Number.isFinite(ms) || ms < minMs || ms > maxMs) {
      const bare = match !== null && match[2] === undefined && ms > maxMs;
      throw usageError(
        `${flag} must be a duration from ${minMs / 1_000} to ${maxMs / 1_000} seconds (seconds, or with a unit: 500ms, 2s, 1m), got '${raw}'${bare && hint !== undefined ? ` (${hint})` : ''}`,
      );
    }
    return ms;
  };
}
