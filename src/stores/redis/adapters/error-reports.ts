/**
 * What becomes a Padlock's `error` event: one report per outage, not one per failed call. While
 * Redis fails over, every renewal, liveness write and subscriber reconnect fails, each in its own
 * words ("Connection is closed.", ECONNREFUSED, CLUSTERDOWN, "All sentinels are unreachable"): a
 * Padlock once emitted ~139 events in a 2.5 s Cluster failover. Reports are grouped by failure
 * ({@link failureOf}); the first of a group is emitted, repeats within {@link REPEAT_MS} of the
 * last one emitted are not (they go to the debug log, `NODE_DEBUG=padlock`). An outage that lasts
 * is so reported again every {@link REPEAT_MS}.
 */
import { monotonicNow } from '../../../clock.js';
import { PadlockError } from '../../../errors.js';
import { debug, debugEnabled } from '../../../observability/debug-log.js';
import { isTransient } from './transient.js';

/** Repeats of one failure within this long of its last report are not reported again. */
export const REPEAT_MS = 10_000;

/** Past this many failures remembered, those reported longer than {@link REPEAT_MS} ago are forgotten. */
const REMEMBERED = 64;

/**
 * The failure `error` is a report of: every passing unavailability of Redis is one ("unavailable",
 * whatever the client said), since one outage raises them all; any other error is its own, by its
 * class and its message with numbers left out (ports, milliseconds, counts).
 */
export function failureOf(error: Error): string {
  if (isTransient(error)) return 'unavailable';
  const code = error instanceof PadlockError ? error.code : error.name;
  return `${code} ${error.message.replace(/\d+/g, '#')}`;
}

/** Reports background errors, one per failure and {@link REPEAT_MS}. */
export class ErrorReports {
  /** Failure → when it was last reported (monotonic ms). */
  readonly #reported = new Map<string, number>();
  /** Reports not emitted since the last one emitted, per failure (for the debug log). */
  readonly #held = new Map<string, number>();

  constructor(private readonly emit: (error: Error) => void) {}

  /** Emits `error` unless the same failure was reported less than {@link REPEAT_MS} ago. */
  report(error: unknown): void {
    const reported = error instanceof Error ? error : new Error(String(error));
    const failure = failureOf(reported);
    const now = monotonicNow();
    const last = this.#reported.get(failure);
    if (last !== undefined && now - last < REPEAT_MS) {
      this.#held.set(failure, (this.#held.get(failure) ?? 0) + 1);
      if (debugEnabled) debug(`error (a repeat, not emitted): ${reported.message}`);
      return;
    }
    if (this.#reported.size >= REMEMBERED) this.#forget(now);
    const held = this.#held.get(failure) ?? 0;
    this.#held.delete(failure);
    if (debugEnabled && held > 0) debug(`error: ${held} repeat(s) of this failure were not emitted since its last report`);
    this.#reported.set(failure, now);
    this.emit(reported);
  }

  /** Forgets failures last reported longer than {@link REPEAT_MS} ago (they would be reported anew anyway). */
  #forget(now: number): void {
    for (const [failure, at] of this.#reported) {
      if (now - at >= REPEAT_MS) {
        this.#reported.delete(failure);
        this.#held.delete(failure);
      }
    }
  }
}
