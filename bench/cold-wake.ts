/**
 * What a process pays for having slept: the round trips (a GET) it makes right after sleeping,
 * against the same made back to back. A waiter that is handed a lock or woken has slept since it
 * queued; its first steps after that (reading the message, the caller's own commands) run at this
 * speed. Measured in the bench's own process, on the single server, while nothing else runs.
 */
import { connectData } from './workload.js';
import { percentile, sorted, nowMs } from './stats.js';

/** How long the sleeper sleeps before each measured burst: about a contended waiter's wait (bench/README.md). */
export const COLD_SLEEP_MS = 15;

/** Round trips timed in each burst. */
const BURST = 3;

/** One position in a burst: its p50 duration and the p50 CPU time the process spent on it (ms). */
export interface RoundTrip {
  readonly wallP50: number;
  readonly cpuP50: number;
}

export interface ColdWakeResult {
  readonly sleepMs: number;
  /** The round trips right after sleeping: the first, the second, … */
  readonly afterSleep: readonly RoundTrip[];
  /** The same made back to back (each burst after a `setImmediate`, never a sleep). */
  readonly backToBack: readonly RoundTrip[];
  readonly bursts: number;
}

function pause(ms: number): Promise<void> {
  return new Promise((resolve) => (ms === 0 ? setImmediate(resolve) : setTimeout(resolve, ms)));
}

/** Times `bursts` bursts of {@link BURST} GETs, each after sleeping `sleepMs` (0: none). */
async function bursts(get: () => Promise<unknown>, sleepMs: number, count: number): Promise<RoundTrip[]> {
  const wall: number[][] = Array.from({ length: BURST }, () => []);
  const cpu: number[][] = Array.from({ length: BURST }, () => []);
  for (let b = 0; b < count; b++) {
    await pause(sleepMs);
    for (let i = 0; i < BURST; i++) {
      const cpuBefore = process.cpuUsage();
      const start = nowMs();
      await get();
      wall[i]?.push(nowMs() - start);
      const used = process.cpuUsage(cpuBefore);
      cpu[i]?.push((used.user + used.system) / 1000);
    }
  }
  return wall.map((w, i) => ({ wallP50: percentile(sorted(w), 50), cpuP50: percentile(sorted(cpu[i] ?? []), 50) }));
}

/** Measures the cold wake-up on the server at `url`, interleaving slept and back-to-back bursts. */
export async function measureColdWake(url: string, count = 200): Promise<ColdWakeResult> {
  const client = connectData(url);
  try {
    const get = (): Promise<unknown> => client.get('padlock-bench:cold-wake');
    await bursts(get, 0, 50);
    const slept: RoundTrip[][] = [];
    const hot: RoundTrip[][] = [];
    // Two halves each, alternating, so that a change of the machine's load meanwhile hits both alike.
    for (let half = 0; half < 2; half++) {
      slept.push(await bursts(get, COLD_SLEEP_MS, count / 2));
      hot.push(await bursts(get, 0, count / 2));
    }
    const mean = (runs: RoundTrip[][]): RoundTrip[] =>
      Array.from({ length: BURST }, (_, i) => ({
        wallP50: runs.reduce((sum, run) => sum + (run[i]?.wallP50 ?? 0), 0) / runs.length,
        cpuP50: runs.reduce((sum, run) => sum + (run[i]?.cpuP50 ?? 0), 0) / runs.length,
      }));
    return { sleepMs: COLD_SLEEP_MS, afterSleep: mean(slept), backToBack: mean(hot), bursts: count };
  } finally {
    await client.quit().catch(() => client.disconnect());
  }
}
