/** padlock's Lua scripts, typed at the boundary: each reply is checked and given a type here. */
import { defineScript } from '../adapters/script-runner.js';
import { luaSources } from './embedded.js';
import type { Holder } from '../../../keys.js';

/** Outcome of an acquire attempt. */
export type AcquireReply =
  | { readonly status: 'acquired'; readonly fence: number; readonly holdCount: number; readonly pttl: number }
  /** `place`: the waiter's entry in the queue, when the call queued it (see MutexProtocol.attempt). */
  | { readonly status: 'busy'; readonly pttl: number; readonly holder?: HolderReply | undefined; readonly place?: string | undefined }
  | { readonly status: 'not-held' }
  /** A semaphore attempt asking more permits than the limit: it could never be granted. */
  | { readonly status: 'over-limit'; readonly limit: number };

/**
 * Who holds a lock, as a refused attempt (acquire.lua, enqueue.lua) reads it: enough for a waiter to
 * check the holder's liveness and reap it (reap.lua). Owner tokens stay inside padlock (the debug
 * log never prints them).
 */
export type HolderReply = Holder;

/** Outcome of a reap: freed, a client alive, or the hold not the one read any more (free, or another's). */
export type ReapReply = 'reaped' | 'alive' | 'changed';

/** Outcome of a release. */
export type ReleaseReply = { readonly status: 'released'; readonly remaining: number } | { readonly status: 'not-held' };

/** A lock's state as `inspect` reads it. */
export interface InspectReply {
  /** Fence of the current hold; 0 when free. */
  readonly fence: number;
  /** Remaining lease in ms (-2 when the key is absent). */
  readonly pttl: number;
  /** Owner token → hold count. */
  readonly holders: ReadonlyMap<string, number>;
  /** The hold's clients field (client ids, comma-separated; `'*'` unknown, too many); `''` when free. */
  readonly clients: string;
  /** The queue, when the call passed the queue's keys (see inspect.lua). */
  readonly queue?: QueueReply;
}

/** A lock's queue and last fence as inspect.lua reads them (times in ms on the server's clock). */
export interface QueueReply {
  /** The server's clock when it read them. */
  readonly now: number;
  /** The last fence handed out, held or not (the lock key's, a tombstone's included); 0 when the key is absent. */
  readonly lastFence: number;
  /** PTTL of the queue list (-2: absent; -1: no expiry). */
  readonly queuePttl: number;
  /** Entries in the queue list, live or not. */
  readonly length: number;
  /** The first waiters of the queue, as many as were asked for, in queue order. */
  readonly waiters: readonly QueuedWaiterReply[];
}

/** One queued waiter's entry. */
export interface QueuedWaiterReply {
  /** Its owner token (the raw entry, when padlock could not read it). */
  readonly owner: string;
  /** Its heartbeat's deadline; 0 when its entry is unreadable (taken for a dead waiter). */
  readonly expiry: number;
  readonly leaseMs: number;
  readonly allowanceMs: number;
  /** `mutex`, `fair`, or `''` when its entry is unreadable. */
  readonly kind: string;
  /** The Padlock (client) it belongs to; `''` when its entry is unreadable. */
  readonly clientId: string;
  /** When it joined the queue; `undefined` when its entry is unreadable. */
  readonly since: number | undefined;
}

function fail(script: string, reply: unknown): never {
  throw new TypeError(`unexpected reply from padlock script ${script}: ${JSON.stringify(reply)}`);
}

function integers(script: string, reply: unknown): number[] {
  if (!Array.isArray(reply) || !reply.every((v): v is number => Number.isInteger(v))) fail(script, reply);
  return reply;
}

function at(values: readonly number[], index: number, script: string): number {
  const value = values[index];
  return value === undefined ? fail(script, values) : value;
}

/**
 * Reads `{1, fence, holdCount, pttl}` / `{0, pttl, holder, clients[, place]}` / `{-1}`: the reply
 * of acquire.lua, enqueue.lua and reenter.lua, and of the other kinds' attempts.
 */
function acquireReply(script: string) {
  return (reply: unknown): AcquireReply => {
    if (!Array.isArray(reply)) fail(script, reply);
    if (reply[0] === 0) {
      const [, pttl, owner, clients, place] = reply as unknown[];
      if ((reply.length !== 4 && reply.length !== 5) || !Number.isInteger(pttl) || typeof owner !== 'string' || typeof clients !== 'string') fail(script, reply);
      if (place !== undefined && typeof place !== 'string') fail(script, reply);
      return { status: 'busy', pttl: pttl as number, holder: owner === '' ? undefined : { owner, clients }, place };
    }
    const r = integers(script, reply);
    switch (r[0]) {
      case 1:
        return { status: 'acquired', fence: at(r, 1, script), holdCount: at(r, 2, script), pttl: at(r, 3, script) };
      case -1:
        return { status: 'not-held' };
      default:
        return fail(script, reply);
    }
  };
}

/** Take a free mutex or fair mutex, never queueing; see acquire.lua (`busy`: must wait). */
export const acquireScript = defineScript('acquire.lua', luaSources.acquire, acquireReply('acquire.lua'));

/** Take a free mutex or fair mutex, or join (or refresh) its queue; see enqueue.lua. */
export const enqueueScript = defineScript('enqueue.lua', luaSources.enqueue, acquireReply('enqueue.lua'));

/** One more hold for an owner that holds the lock; see reenter.lua (`not-held` when it holds nothing). */
export const reenterScript = defineScript('reenter.lua', luaSources.reenter, acquireReply('reenter.lua'));

/** Release holds of a mutex or fair mutex; see release.lua. */
export const releaseScript = defineScript('release.lua', luaSources.release, (reply): ReleaseReply => {
  const r = integers('release.lua', reply);
  return r[0] === 1 ? { status: 'released', remaining: at(r, 1, 'release.lua') } : { status: 'not-held' };
});

/** Renew or extend holds; see renew.lua. One remaining lease (0: not held) per key. */
export const renewScript = defineScript('renew.lua', luaSources.renew, (reply): number[] => integers('renew.lua', reply));

/** Delete a lock whoever holds it; see force-release.lua. */
export const forceReleaseScript = defineScript('force-release.lua', luaSources.forceRelease, (reply): boolean => {
  if (reply !== 0 && reply !== 1) fail('force-release.lua', reply);
  return reply === 1;
});

/** Read a lock's state; see inspect.lua. */
export const inspectScript = defineScript('inspect.lua', luaSources.inspect, (reply): InspectReply => {
  if (!Array.isArray(reply) || (reply.length !== 3 && reply.length !== 8)) fail('inspect.lua', reply);
  const [fence, pttl, hold, ...queue] = reply as unknown[];
  if (!Number.isInteger(fence) || !Number.isInteger(pttl) || !Array.isArray(hold)) fail('inspect.lua', reply);
  const holders = new Map<string, number>();
  let clients = '';
  if (hold.length > 0) {
    const [owner, count, holdClients] = hold as unknown[];
    if (hold.length !== 3 || typeof owner !== 'string' || !Number.isInteger(count) || typeof holdClients !== 'string') fail('inspect.lua', reply);
    holders.set(owner, count as number);
    clients = holdClients;
  }
  const state = { fence: fence as number, pttl: pttl as number, holders, clients };
  return queue.length === 0 ? state : { ...state, queue: queueReply(queue, reply) };
});

/** The queue part of inspect.lua's reply: four integers, then seven values per waiter. */
function queueReply(values: readonly unknown[], reply: unknown): QueueReply {
  const [now, lastFence, length, queuePttl, described] = values;
  const numbers = [now, lastFence, length, queuePttl];
  if (!numbers.every((v): v is number => Number.isInteger(v))) fail('inspect.lua', reply);
  const waiters = queuedWaiters('inspect.lua', described, reply);
  return { now: now as number, lastFence: lastFence as number, length: length as number, queuePttl: queuePttl as number, waiters };
}

/** Seven values per queued waiter, as inspect.lua and rw-inspect.lua describe them: `{owner, expiry, leaseMs, allowanceMs, kind, clientId, since}`. */
function queuedWaiters(script: string, described: unknown, reply: unknown): QueuedWaiterReply[] {
  if (!Array.isArray(described) || described.length % 7 !== 0) fail(script, reply);
  const waiters: QueuedWaiterReply[] = [];
  for (let i = 0; i < described.length; i += 7) {
    const [owner, expiry, leaseMs, allowanceMs, kind, clientId, since] = described.slice(i, i + 7) as unknown[];
    if (typeof owner !== 'string' || typeof kind !== 'string' || typeof clientId !== 'string') fail(script, reply);
    if (![expiry, leaseMs, allowanceMs, since].every((v) => Number.isInteger(v))) fail(script, reply);
    waiters.push({ owner, expiry: expiry as number, leaseMs: leaseMs as number, allowanceMs: allowanceMs as number, kind, clientId, since: kind === '' ? undefined : (since as number) });
  }
  return waiters;
}

/** A queued waiter leaves the queue; see leave.lua. True when a lock handed to it was passed on. */
export const leaveScript = defineScript('leave.lua', luaSources.leave, (reply): boolean => {
  if (reply !== 0 && reply !== 1) fail('leave.lua', reply);
  return reply === 1;
});

/** Take an owner's entry out of a queue (any kind's), and nothing more; see unqueue.lua. */
export const unqueueScript = defineScript('unqueue.lua', luaSources.unqueue, (reply): number => {
  if (reply !== 1) fail('unqueue.lua', reply);
  return reply;
});

/** Redlock: raise a fresh hold's fence to the greatest a majority gave; see raise-fence.lua. 1 when the owner holds it there. */
export const raiseFenceScript = defineScript('raise-fence.lua', luaSources.raiseFence, (reply): boolean => {
  if (reply !== 0 && reply !== 1) fail('raise-fence.lua', reply);
  return reply === 1;
});

/** Free a hold whose clients are all dead; see reap.lua. */
export const reapScript = defineScript('reap.lua', luaSources.reap, (reply): ReapReply => {
  if (reply === 1) return 'reaped';
  if (reply === -1) return 'alive';
  if (reply === 0) return 'changed';
  return fail('reap.lua', reply);
});

/** Tell a lock's holders it was freed by force; see tell-holders.lua. */
export const tellHoldersScript = defineScript('tell-holders.lua', luaSources.tellHolders, (reply): boolean => (reply === 1 ? true : fail('tell-holders.lua', reply)));

/** Keep (or, with 0 ms, drop) a client's liveness key; see liveness.lua. */
export const livenessScript = defineScript('liveness.lua', luaSources.liveness, (reply): true => (reply === 1 ? true : fail('liveness.lua', reply)));

/** How many of the given clients' liveness keys exist; see clients-alive.lua. */
export const clientsAliveScript = defineScript('clients-alive.lua', luaSources.clientsAlive, (reply): number => {
  if (!Number.isInteger(reply)) fail('clients-alive.lua', reply);
  return reply as number;
});

/** Outcome of a read/write lock re-entry: as an acquire's, or `upgrade` (a reader asked for the write lock). */
export type ReadWriteReenterReply = AcquireReply | { readonly status: 'upgrade' };

/** A read/write lock's state as rw-inspect.lua reads it. */
export interface ReadWriteInspectReply {
  /** Whether a write hold is held. */
  readonly writer: boolean;
  /** How many owners hold read holds. */
  readonly readers: number;
  /** The last fence handed out; 0 when none is known. */
  readonly fence: number;
  /** The holds and queue in detail, when the call passed the queue's keys (the CLI's read). */
  readonly detail?: ReadWriteDetailReply;
}

/** A read/write lock's holds, queue and keys, as rw-inspect.lua reads them given the queue's keys (times in ms on the server's clock). */
export interface ReadWriteDetailReply {
  /** The server's clock when it read them. */
  readonly now: number;
  /** PTTL of each key (-2: absent; -1: no expiry). */
  readonly statePttl: number;
  readonly leasesPttl: number;
  readonly queuePttl: number;
  /** Entries in the queue list, live or not. */
  readonly length: number;
  /** The live holds (lease not run out), in expiry order. */
  readonly holds: readonly ReadWriteHoldReply[];
  /** The first waiters of the queue (kind `read` or `write`), as many as were asked for, in queue order. */
  readonly waiters: readonly QueuedWaiterReply[];
}

/** One live hold of a read/write lock. */
export interface ReadWriteHoldReply {
  readonly side: 'read' | 'write';
  readonly owner: string;
  /** Its re-entrant holds. */
  readonly count: number;
  /** Its lease's expiry, ms on the server's clock. */
  readonly expiry: number;
}

/** Read/write lock: take a hold on one side, or join (or refresh) the queue; see rw-acquire.lua. */
export const readWriteAcquireScript = defineScript('rw-acquire.lua', luaSources.rwAcquire, acquireReply('rw-acquire.lua'));

/** Read/write lock: one more hold for an owner that holds that side (or downgrades); see rw-reenter.lua. */
export const readWriteReenterScript = defineScript('rw-reenter.lua', luaSources.rwReenter, (reply): ReadWriteReenterReply => {
  if (Array.isArray(reply) && reply.length === 1 && reply[0] === -2) return { status: 'upgrade' };
  return acquireReply('rw-reenter.lua')(reply);
});

/** Read/write lock: release holds of one side; see rw-release.lua. */
export const readWriteReleaseScript = defineScript('rw-release.lua', luaSources.rwRelease, (reply): ReleaseReply => {
  const r = integers('rw-release.lua', reply);
  return r[0] === 1 ? { status: 'released', remaining: at(r, 1, 'rw-release.lua') } : { status: 'not-held' };
});

/** Read/write lock: a queued waiter leaves; see rw-leave.lua. True when it held something, which was freed. */
export const readWriteLeaveScript = defineScript('rw-leave.lua', luaSources.rwLeave, (reply): boolean => {
  if (reply !== 0 && reply !== 1) fail('rw-leave.lua', reply);
  return reply === 1;
});

/** Read/write lock: renew or extend holds; see rw-renew.lua. One remaining lease (0: not held) per hold. */
export const readWriteRenewScript = defineScript('rw-renew.lua', luaSources.rwRenew, (reply): number[] => integers('rw-renew.lua', reply));

/** Read/write lock: take away every hold of one side; see rw-force-release.lua. */
export const readWriteForceReleaseScript = defineScript('rw-force-release.lua', luaSources.rwForceRelease, (reply): boolean => {
  if (reply !== 0 && reply !== 1) fail('rw-force-release.lua', reply);
  return reply === 1;
});

/** Read/write lock: read its state (given the queue's keys, in detail); see rw-inspect.lua. */
export const readWriteInspectScript = defineScript('rw-inspect.lua', luaSources.rwInspect, (reply): ReadWriteInspectReply => {
  const script = 'rw-inspect.lua';
  if (!Array.isArray(reply) || (reply.length !== 3 && reply.length !== 10)) fail(script, reply);
  const r = integers(script, reply.slice(0, reply.length === 3 ? 3 : 8));
  const state = { writer: at(r, 0, script) === 1, readers: at(r, 1, script), fence: at(r, 2, script) };
  if (reply.length === 3) return state;
  const [now, statePttl, leasesPttl, queuePttl, length] = r.slice(3) as [number, number, number, number, number];
  const flat: unknown = reply[8];
  if (!Array.isArray(flat) || flat.length % 3 !== 0) fail(script, reply);
  const holds: ReadWriteHoldReply[] = [];
  for (let i = 0; i < flat.length; i += 3) {
    const [member, count, expiry] = flat.slice(i, i + 3) as unknown[];
    if (typeof member !== 'string' || !/^[rw]:/.test(member) || !Number.isInteger(count) || !Number.isInteger(expiry)) fail(script, reply);
    holds.push({ side: member.startsWith('w:') ? 'write' : 'read', owner: member.slice(2), count: count as number, expiry: expiry as number });
  }
  return { ...state, detail: { now, statePttl, leasesPttl, queuePttl, length, holds, waiters: queuedWaiters(script, reply[9], reply) } };
});

/** A semaphore's state as semaphore-inspect.lua reads it, on the server's clock. */
export interface SemaphoreInspectReply {
  /** The limit: the stored one, else the default the call passed. */
  readonly limit: number;
  /** Whether the limit is stored (set by `setPermits`). */
  readonly stored: boolean;
  /** The creation values (`semaphore(name, n)`'s n) that grants went by while no limit was stored, as long as the semaphore's meta key has lived. */
  readonly createdWith: readonly number[];
  /** Permits held by holders whose lease has not run out. */
  readonly used: number;
  /** How many such holders. */
  readonly holders: number;
  /** Ms until the earliest live lease runs out; -2 when none. */
  readonly earliestPttl: number;
  /** Entries in the queue, live or not. */
  readonly queued: number;
  /** The holders and queue in detail, when the call asked how many waiters to describe (the CLI's read). */
  readonly detail?: SemaphoreDetailReply;
}

/** A semaphore's holders, queue and keys, as semaphore-inspect.lua reads them in detail (times in ms on the server's clock). */
export interface SemaphoreDetailReply {
  /** The server's clock when it read them. */
  readonly now: number;
  /** The last fence handed out; 0 when none is known. */
  readonly lastFence: number;
  /** PTTL of each key (-2: absent; -1: no expiry). */
  readonly metaPttl: number;
  readonly holdersPttl: number;
  readonly leasesPttl: number;
  readonly queuePttl: number;
  /** The live holders (lease not run out), soonest expiry first. */
  readonly holders: readonly SemaphoreHolderReply[];
  /** The first waiters of the queue, as many as were asked for, in queue order (`kind` is `semaphore`, or `''` for an entry padlock cannot read). */
  readonly waiters: readonly (QueuedWaiterReply & { readonly permits: number })[];
}

/** One live holder of a semaphore. */
export interface SemaphoreHolderReply {
  readonly owner: string;
  readonly permits: number;
  /** Its re-entrant holds. */
  readonly count: number;
  readonly fence: number;
  /** Its clients field (client ids, comma-separated; `'*'` unknown, too many). */
  readonly clients: string;
  /** Its lease's expiry, ms on the server's clock. */
  readonly expiry: number;
}

/** The reply of semaphore-acquire.lua: an acquire reply, or `{-2, limit}` (more permits asked than the limit). */
function semaphoreAttemptReply(reply: unknown): AcquireReply {
  if (Array.isArray(reply) && reply[0] === -2) return { status: 'over-limit', limit: at(integers('semaphore-acquire.lua', reply), 1, 'semaphore-acquire.lua') };
  return acquireReply('semaphore-acquire.lua')(reply);
}

/** Take permits of a semaphore, or join (or refresh) its queue, or only try; see semaphore-acquire.lua. */
export const semaphoreAcquireScript = defineScript('semaphore-acquire.lua', luaSources.semaphoreAcquire, semaphoreAttemptReply);

/** One more hold for an owner that holds permits; see semaphore-reenter.lua (`not-held` when it holds nothing). */
export const semaphoreReenterScript = defineScript('semaphore-reenter.lua', luaSources.semaphoreReenter, acquireReply('semaphore-reenter.lua'));

/** Release holds of a semaphore's owner; see semaphore-release.lua. */
export const semaphoreReleaseScript = defineScript('semaphore-release.lua', luaSources.semaphoreRelease, (reply): ReleaseReply => {
  const r = integers('semaphore-release.lua', reply);
  return r[0] === 1 ? { status: 'released', remaining: at(r, 1, 'semaphore-release.lua') } : { status: 'not-held' };
});

/** Renew or extend semaphore holds; see semaphore-renew.lua. One remaining lease (0: not held) per hold. */
export const semaphoreRenewScript = defineScript('semaphore-renew.lua', luaSources.semaphoreRenew, (reply): number[] => integers('semaphore-renew.lua', reply));

/** A semaphore waiter leaves the queue; see semaphore-leave.lua. True when permits it held were returned. */
export const semaphoreLeaveScript = defineScript('semaphore-leave.lua', luaSources.semaphoreLeave, (reply): boolean => {
  if (reply !== 0 && reply !== 1) fail('semaphore-leave.lua', reply);
  return reply === 1;
});

/** Free every permit of a semaphore; see semaphore-force-release.lua. True when any was held. */
export const semaphoreForceReleaseScript = defineScript('semaphore-force-release.lua', luaSources.semaphoreForceRelease, (reply): boolean => {
  if (reply !== 0 && reply !== 1) fail('semaphore-force-release.lua', reply);
  return reply === 1;
});

/** Set a semaphore's limit; see semaphore-set-permits.lua. The permits held by live holders. */
export const semaphoreSetPermitsScript = defineScript('semaphore-set-permits.lua', luaSources.semaphoreSetPermits, (reply): number => {
  if (!Number.isInteger(reply)) fail('semaphore-set-permits.lua', reply);
  return reply as number;
});

/** Read a semaphore's state (given how many waiters to describe, in detail); see semaphore-inspect.lua. */
export const semaphoreInspectScript = defineScript('semaphore-inspect.lua', luaSources.semaphoreInspect, (reply): SemaphoreInspectReply => {
  const script = 'semaphore-inspect.lua';
  if (!Array.isArray(reply) || (reply.length !== 7 && reply.length !== 15)) fail(script, reply);
  const values: readonly unknown[] = reply;
  const r = integers(script, [...values.slice(0, 6), ...values.slice(7, values.length === 7 ? 7 : 13)]);
  const [limit, used, holders, earliestPttl, queued, stored] = r as [number, number, number, number, number, number];
  const seen: unknown = reply[6];
  if (!Array.isArray(seen)) fail(script, reply);
  const state = { limit, used, holders, earliestPttl, queued, stored: stored === 1, createdWith: integers(script, seen) };
  if (reply.length === 7) return state;
  const [now, lastFence, metaPttl, holdersPttl, leasesPttl, queuePttl] = r.slice(6) as [number, number, number, number, number, number];
  const flatHolders: unknown = reply[13];
  const flatWaiters: unknown = reply[14];
  if (!Array.isArray(flatHolders) || flatHolders.length % 6 !== 0 || !Array.isArray(flatWaiters) || flatWaiters.length % 7 !== 0) fail(script, reply);
  const described: SemaphoreHolderReply[] = [];
  for (let i = 0; i < flatHolders.length; i += 6) {
    const [owner, permits, count, fence, clients, expiry] = flatHolders.slice(i, i + 6) as unknown[];
    if (typeof owner !== 'string' || typeof clients !== 'string' || ![permits, count, fence, expiry].every((v) => Number.isInteger(v))) fail(script, reply);
    described.push({ owner, permits: permits as number, count: count as number, fence: fence as number, clients, expiry: expiry as number });
  }
  const waiters: (QueuedWaiterReply & { readonly permits: number })[] = [];
  for (let i = 0; i < flatWaiters.length; i += 7) {
    const [owner, expiry, leaseMs, allowanceMs, permits, clientId, since] = flatWaiters.slice(i, i + 7) as unknown[];
    if (typeof owner !== 'string' || typeof clientId !== 'string' || ![expiry, leaseMs, allowanceMs, permits, since].every((v) => Number.isInteger(v))) fail(script, reply);
    const kind = clientId === '' ? '' : 'semaphore';
    waiters.push({ owner, expiry: expiry as number, leaseMs: leaseMs as number, allowanceMs: allowanceMs as number, kind, clientId, since: kind === '' ? undefined : (since as number), permits: permits as number });
  }
  return { ...state, detail: { now, lastFence, metaPttl, holdersPttl, leasesPttl, queuePttl, holders: described, waiters } };
});
