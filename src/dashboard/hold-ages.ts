/**
 * How long each hold has lasted, as far as the dashboard has seen: a hold is known by its lock and
 * fence (a new grant has a new fence), and dated from the first read that found it. Stores keep no
 * grant time a reader could trust across kinds and topologies; a hold already there at the
 * dashboard's first read is marked so, its age a lower bound.
 */
import { monotonicNow } from '../clock.js';
import type { LockView } from './snapshot.js';
import type { SourceLock } from './source.js';

export class HoldAges {
  /** Per lock (kind and name): the fence seen, and since when (monotonic ms). */
  #seen = new Map<string, { readonly fence: number; readonly since: number; readonly atStart: boolean }>();
  #reads = 0;

  /** Dates the holds of one read; holds no longer there are forgotten. */
  date(locks: readonly SourceLock[]): LockView[] {
    const now = monotonicNow();
    const first = this.#reads++ === 0;
    const next = new Map<string, { readonly fence: number; readonly since: number; readonly atStart: boolean }>();
    const dated = locks.map((lock): LockView => {
      if (!lock.held || lock.fence === null) return { ...lock, heldForMs: null, heldSinceStart: false };
      const key = `${lock.kind}\n${lock.name}`;
      const known = this.#seen.get(key);
      const entry = known !== undefined && known.fence === lock.fence ? known : { fence: lock.fence, since: now, atStart: first };
      next.set(key, entry);
      return { ...lock, heldForMs: Math.round(now - entry.since), heldSinceStart: entry.atStart };
    });
    this.#seen = next;
    return dated;
  }
}
