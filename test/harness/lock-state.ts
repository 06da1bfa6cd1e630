/**
 * Reads a mutex-family lock as docs/protocol.md lays it out (one string key:
 * `<fence>|<owner>|<count>|<clients>|<log>`), for tests that check what Redis holds.
 */
/** The reads these need, of any client (a Redis, a Cluster). */
interface Reader {
  get(key: string): Promise<string | null>;
  lrange(key: string, start: number, stop: number): Promise<string[]>;
}

/**
 * What a lock key holds: the hold (owner and clients empty, count 0 once freed: a tombstone), its
 * clients (the ids of the Padlocks holding it, comma-separated; `*` unknown), the last fence, the
 * request log.
 */
export interface LockState {
  readonly fence: number;
  readonly owner: string;
  readonly count: number;
  readonly clients: string;
  readonly log: string;
}

/** Parses a lock key's value; `undefined` when the key is missing. */
export function parseLock(value: string | null): LockState | undefined {
  if (value === null) return undefined;
  const match = /^(\d+)\|([^|]*)\|(\d+)\|([^|]*)\|(.*)$/s.exec(value);
  if (match === null) throw new Error(`not a padlock lock value: ${value}`);
  return { fence: Number(match[1]), owner: match[2] ?? '', count: Number(match[3]), clients: match[4] ?? '', log: match[5] ?? '' };
}

/** The lock at `key` as `client` sees it. */
export async function readLock(client: Reader, key: string): Promise<LockState | undefined> {
  return parseLock(await client.get(key));
}

/** How many holds `owner` has of the lock at `key` (0 when none). */
export async function holdsOf(client: Reader, key: string, owner: string): Promise<number> {
  const state = await readLock(client, key);
  return state !== undefined && state.owner === owner ? state.count : 0;
}

/** Whether the lock at `key` is held by anyone. */
export async function isHeld(client: Reader, key: string): Promise<boolean> {
  return ((await readLock(client, key))?.count ?? 0) > 0;
}

/** The owners queued on a lock, in queue order (from its queue list's entries). */
export async function queuedOwners(client: Reader, queueKey: string): Promise<string[]> {
  return (await client.lrange(queueKey, 0, -1)).map((entry) => entry.split('|')[0] ?? '');
}
