/**
 * Small statistics: percentiles, Jain's fairness index, and the measures of one contended run
 * computed from per-acquisition records (whatever process they came from).
 */

/** One acquisition, in milliseconds on the machine's monotonic clock (shared by all processes). */
export interface AcquisitionRecord {
  /** Worker that acquired (unique across processes). */
  readonly worker: number;
  /** Which of the run's locks (0 when it has one). */
  readonly lock: number;
  /** When the worker called acquire. */
  readonly waitStart: number;
  /** When acquire resolved. */
  readonly acquiredAt: number;
  /** When the worker called release (the lock is given up from here). */
  readonly releaseStart: number;
}

/** Milliseconds on CLOCK_MONOTONIC: comparable between processes on one machine. */
export function nowMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

/** The `p`-th percentile (0–100) by nearest rank; NaN for no samples. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] ?? Number.NaN;
}

/** Ascending copy. */
export function sorted(values: readonly number[]): number[] {
  return [...values].sort((a, b) => a - b);
}

/** Median of unsorted values. */
export function median(values: readonly number[]): number {
  return percentile(sorted(values), 50);
}

/** Arithmetic mean; NaN for no values. */
export function mean(values: readonly number[]): number {
  return values.length === 0 ? Number.NaN : values.reduce((a, b) => a + b, 0) / values.length;
}

/** Jain's fairness index (Σx)² / (n·Σx²): 1 when all equal, 1/n when one worker got everything. */
export function jain(counts: readonly number[]): number {
  const sum = counts.reduce((a, b) => a + b, 0);
  const squares = counts.reduce((a, b) => a + b * b, 0);
  return squares === 0 ? Number.NaN : (sum * sum) / (counts.length * squares);
}

/** What one contended run measured inside its window. */
export interface ContendedMeasures {
  /** Acquisitions whose `acquiredAt` fell inside the window. */
  readonly acquisitions: number;
  readonly perSecond: number;
  /** Release → next acquisition of the same lock, when the next holder was already waiting at the release (ms). */
  readonly handoffP50: number;
  readonly handoffP99: number;
  readonly handoffMean: number;
  /** How many acquisitions were such handoffs. */
  readonly handoffs: number;
  /** Time inside the lock (acquired → release called: the GET+SET), median (ms). */
  readonly holdP50: number;
  readonly waitP50: number;
  readonly waitP99: number;
  readonly waitMax: number;
  /** Jain's index over the workers' acquisition counts in the window. */
  readonly jain: number;
  /** Pairs of consecutive holds of one lock whose timestamps overlap (must be 0 for a mutex). */
  readonly overlaps: number;
}

/** Measures acquisitions in [from, to) from the records of every worker. */
export function measureContended(records: readonly AcquisitionRecord[], workers: number, from: number, to: number): ContendedMeasures {
  const all = [...records].sort((a, b) => a.acquiredAt - b.acquiredAt);
  const counts = new Array<number>(workers).fill(0);
  const waits: number[] = [];
  const holds: number[] = [];
  const handoffs: number[] = [];
  let overlaps = 0;
  // Each lock's previous acquisition: handoffs and overlaps are between holders of one lock.
  const previousOf = new Map<number, AcquisitionRecord>();
  for (const record of all) {
    const previous = previousOf.get(record.lock);
    const inWindow = record.acquiredAt >= from && record.acquiredAt < to;
    if (previous !== undefined && record.acquiredAt < previous.releaseStart) overlaps++;
    if (inWindow) {
      counts[record.worker] = (counts[record.worker] ?? 0) + 1;
      waits.push(record.acquiredAt - record.waitStart);
      holds.push(record.releaseStart - record.acquiredAt);
      if (previous !== undefined && record.waitStart <= previous.releaseStart) {
        handoffs.push(record.acquiredAt - previous.releaseStart);
      }
    }
    previousOf.set(record.lock, record);
  }
  const waitsSorted = sorted(waits);
  const seconds = (to - from) / 1000;
  return {
    acquisitions: waits.length,
    perSecond: waits.length / seconds,
    handoffP50: percentile(sorted(handoffs), 50),
    handoffP99: percentile(sorted(handoffs), 99),
    handoffMean: handoffs.length === 0 ? Number.NaN : handoffs.reduce((a, b) => a + b, 0) / handoffs.length,
    handoffs: handoffs.length,
    holdP50: percentile(sorted(holds), 50),
    waitP50: percentile(waitsSorted, 50),
    waitP99: percentile(waitsSorted, 99),
    waitMax: waitsSorted[waitsSorted.length - 1] ?? Number.NaN,
    jain: jain(counts),
    overlaps,
  };
}
