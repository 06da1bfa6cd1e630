/**
 * Reaping dead holders: a hold whose clients (the Padlocks that hold it) have all let their liveness
 * keys run out is freed and its turn given to the queue, as a release would (reap.lua). A hold whose
 * client is alive is never touched; neither is one whose clients are unknown.
 *
 * Where the liveness keys live on the lock's server (one server, Sentinel, each Redlock master), the
 * check and the free are one atomic script. On a Cluster they live in other slots: each is checked
 * first, then the compare-and-free runs. In between, a client whose key had run out could write it
 * again and re-enter its hold; the script frees only the same owner with the same clients, so the
 * window is that of a client already taken for dead (its key ran out: it stalled past `livenessMs`).
 *
 * Used by `padlock reap` (every held lock it finds) and by a waiting Padlock with `reapDeadHolders`
 * (the holder of the lock it waits for, at most once per heartbeat).
 */
import { monotonicNow } from '../../clock.js';
import { clientIds, livenessKey, type Holder, type LockKeys } from '../../keys.js';
import { clientsAliveCall } from './liveness.js';
import { MutexProtocol } from './kinds/mutex-protocol.js';
import type { Topology } from './topology/topology.js';

/** What a reap attempt found: freed, a client alive, the hold gone or another's meanwhile, or its clients unknown. */
export type ReapOutcome = 'reaped' | 'alive' | 'changed' | 'unknown';

/**
 * Frees the hold of `holder` on the lock with `keys` if every one of its clients is dead.
 * @param prefix the key prefix (liveness keys live under it)
 * @throws what the topology's calls throw (RedisUnavailableError, RedisCommandError, QuorumError)
 */
export async function reapIfDead(topology: Topology, prefix: string, keys: LockKeys, holder: Holder): Promise<ReapOutcome> {
  const ids = clientIds(holder.clients);
  if (ids === undefined) return 'unknown';
  const live = ids.map((id) => livenessKey(prefix, id));
  const group = topology.groupOf(keys.lock);
  if (live.every((key) => topology.groupOf(key) === group)) return topology.run(MutexProtocol.reap(keys, holder, live, topology.shardedPubSub));
  const alive = await Promise.all(live.map((key) => topology.run(clientsAliveCall([key]))));
  if (alive.some((n) => n > 0)) return 'alive';
  return topology.run(MutexProtocol.reap(keys, holder, undefined, topology.shardedPubSub));
}

/**
 * A Padlock's reaper (`reapDeadHolders`): its waiters hand it the holder of the lock they wait for
 * at each refused attempt; it checks each lock at most once per `intervalMs`, one check at a time,
 * in the background (a waiter never waits for it: a reaped lock's turn reaches the queue by itself).
 */
export class Reaper {
  /** Per lock key: when it was last checked (monotonic), or a check in flight. */
  readonly #checked = new Map<string, number>();

  constructor(
    private readonly topology: Topology,
    private readonly prefix: string,
    /** Reports a failed check (never thrown: it runs from a waiter's loop). */
    private readonly failed: (error: unknown) => void,
    /** Lets a check run on after its waiter moved on; close() waits for it. */
    private readonly track: (work: Promise<unknown>) => void,
  ) {}

  /** Checks `holder` of the lock `keys` unless that lock was checked within `intervalMs` (or is being checked). */
  check(keys: LockKeys, holder: Holder, intervalMs: number): void {
    const now = monotonicNow();
    const last = this.#checked.get(keys.lock);
    if (last !== undefined && (last === Infinity || now - last < intervalMs)) return;
    if (clientIds(holder.clients) === undefined) return;
    this.#checked.set(keys.lock, Infinity);
    const work = reapIfDead(this.topology, this.prefix, keys, holder).then(
      () => undefined,
      (error: unknown) => this.failed(error),
    );
    this.track(
      work.finally(() => {
        this.#checked.set(keys.lock, monotonicNow());
        // Forget locks not checked for a while, so the map does not grow with one lock per entity.
        if (this.#checked.size > 1_000) for (const [key, at] of this.#checked) if (at !== Infinity && monotonicNow() - at > intervalMs) this.#checked.delete(key);
      }),
    );
  }
}
