/**
 * Bounded waiting for the topology harness: every wait has a deadline and, when it passes, an error
 * that names what did not happen and what was last seen instead.
 */

/** A topology did not reach the state a test needs in time. */
export class TopologyTimeoutError extends Error {
  override readonly name = 'TopologyTimeoutError';
}

/** What a probe returns while the awaited state has not been reached: what it saw instead. */
export class NotYet {
  constructor(readonly seen: string) {}
}

/** Shorthand for `new NotYet(seen)`. */
export function notYet(seen: string): NotYet {
  return new NotYet(seen);
}

/** How long and how often {@link waitUntil} probes. */
export interface WaitOptions {
  /** @default 20000 */
  readonly timeoutMs?: number;
  /** @default 50 */
  readonly intervalMs?: number;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Calls `probe` until it returns something other than {@link NotYet}, and returns that. A probe that
 * throws counts as not yet (a node being killed or promoted refuses connections for a while).
 * @throws TopologyTimeoutError naming `what` and the last thing seen, once `timeoutMs` have passed.
 */
export async function waitUntil<T>(what: string, probe: () => Promise<T | NotYet>, options: WaitOptions = {}): Promise<T> {
  const timeoutMs = options.timeoutMs ?? 20_000;
  const intervalMs = options.intervalMs ?? 50;
  const deadline = Date.now() + timeoutMs;
  let seen = 'nothing (no probe finished)';
  for (;;) {
    try {
      const result = await probe();
      if (!(result instanceof NotYet)) return result;
      seen = result.seen;
    } catch (error) {
      seen = `error: ${error instanceof Error ? error.message : String(error)}`;
    }
    if (Date.now() >= deadline) {
      throw new TopologyTimeoutError(`${what}: not within ${timeoutMs} ms; last seen: ${seen}`);
    }
    await sleep(intervalMs);
  }
}
