/** How the watchdog's due holds become as few round trips as the topology allows. */
import type { Hold } from '../../hold.js';
import type { ScriptCall, Topology } from './topology/topology.js';

/** The most holds one renewal script call renews. */
export const RENEWALS_PER_CALL = 500;

/**
 * Renews holds of one family on one node in one round trip: one script call per group of keys the
 * topology lets one call touch (one Cluster slot), pipelined. Resolves with each hold's remaining
 * lease in order (`undefined` where its call failed, reported once per failed call).
 */
export async function renewTogether(
  topology: Topology,
  holds: readonly Hold[],
  /** The call that renews a batch of holds of one family. */
  renewCall: (batch: readonly Hold[]) => ScriptCall<number[]>,
  report: (error: unknown) => void,
): Promise<(number | undefined)[]> {
  const groups = new Map<string, Hold[]>();
  for (const hold of holds) {
    const group = topology.groupOf(hold.keys.lock);
    const list = groups.get(group);
    if (list === undefined) groups.set(group, [hold]);
    else list.push(hold);
  }
  // One call renews at most RENEWALS_PER_CALL holds: a script blocks the server while it runs, and
  // 10 000 holds in one call kept Redis busy for 35–110 ms (the bench's scale run). The calls for one
  // node still go in one pipelined round trip.
  const batches = [...groups.values()].flatMap((group) => chunks(group, RENEWALS_PER_CALL));
  const outcomes = await topology.runMany(batches.map((batch) => renewCall(batch)));
  const remaining = new Map<Hold, number | undefined>();
  outcomes.forEach((outcome, i) => {
    if (outcome.status === 'rejected') report(outcome.reason);
    batches[i]!.forEach((hold, j) => remaining.set(hold, outcome.status === 'fulfilled' ? outcome.value[j] : undefined));
  });
  return holds.map((hold) => remaining.get(hold));
}

/** `items` in consecutive runs of at most `size`. */
function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
