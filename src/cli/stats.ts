/**
 * The few statistics the CLI reports.
 */

/**
 * The `p`-th percentile (0–100) of `values` by the nearest-rank method; `undefined` when empty.
 * @example percentile([1, 2, 3, 4], 50) === 2
 */
export function percentile(values: readonly number[], p: number): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1];
}

/**
 * Jain's fairness index of `shares`: (Σx)² / (n·Σx²), from 1/n (one party got everything) to 1
 * (all got the same). 1 when every share is 0; `undefined` when there are none.
 */
export function jainIndex(shares: readonly number[]): number | undefined {
  if (shares.length === 0) return undefined;
  let sum = 0;
  let squares = 0;
  for (const x of shares) {
    sum += x;
    squares += x * x;
  }
  return squares === 0 ? 1 : (sum * sum) / (shares.length * squares);
}
