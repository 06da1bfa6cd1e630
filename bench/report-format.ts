/**
 * What the store benches (bench/stores.ts, bench/postgres.ts) share: their number options, the
 * machine's load, and how a measure and a paired ratio are written.
 */
import { execFileSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { median } from './stats.js';

/** `--name`'s value as a number > 0, or an error naming the option. */
export function positive(name: string, text: string | undefined): number {
  const value = Number(text);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`--${name} must be a number > 0, got ${String(text)}`);
  return value;
}

/** `uptime`'s line (the load averages), or the load averages alone where it is missing. */
export function uptime(): string {
  try {
    return execFileSync('uptime', { encoding: 'utf8' }).trim();
  } catch {
    return `load average: ${loadavg().map((l) => l.toFixed(2)).join(', ')}`;
  }
}

/** `value` with `digits` decimals; `—` when it is not a number. */
export const fixed = (value: number, digits = 2): string => (Number.isFinite(value) ? value.toFixed(digits) : '—');

/** The smallest and the largest of `values`, as `min–max`. */
export const spread = (values: readonly number[], digits = 2): string => `${fixed(Math.min(...values), digits)}–${fixed(Math.max(...values), digits)}`;

/** Ratios as `median× (min–max)`. */
export const ratioText = (values: readonly number[]): string => `${fixed(median(values))}× (${spread(values)})`;

/** Per-round ratios `a[i] ÷ b[i]`. */
export const paired = (a: readonly number[], b: readonly number[]): number[] => a.map((value, i) => value / (b[i] ?? Number.NaN));
