/** Parsers for the values options take, giving the one-line usage errors the CLI reports. */
import type { LockKind } from '../inspection.js';
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

/**
 * A commander option parser for a duration in seconds (decimals allowed) within `[min, max]`,
 * returned in milliseconds.
 * @throws CliError (exit code 2) saying which range is allowed
 */
export function secondsParser(flag: string, min: number, max: number): (raw: string) => number {
  return (raw) => {
    const text = raw.trim();
    const value = /^\d+(\.\d+)?$/.test(text) ? Number(text) : NaN;
    if (!Number.isFinite(value) || value < min || value > max) {
      throw usageError(`${flag} must be a number of seconds from ${min} to ${max}, got '${raw}'`);
    }
    return Math.round(value * 1_000);
  };
}
