/** padlock's Lua scripts, typed at the boundary: each reply is checked and given a type here. */
import { defineScript } from '../redis/script-runner.js';
import { luaSources } from './embedded.js';

/** Outcome of an acquire attempt. */
export type AcquireReply =
  | { readonly status: 'acquired'; readonly fence: number; readonly holdCount: number; readonly pttl: number }
  | { readonly status: 'busy'; readonly pttl: number }
  | { readonly status: 'not-held' };

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

/** Reads `{1, fence, holdCount, pttl}` / `{0, pttl}` / `{-1}`: the reply of acquire.lua, enqueue.lua and reenter.lua. */
function acquireReply(script: string) {
  return (reply: unknown): AcquireReply => {
    const r = integers(script, reply);
    switch (r[0]) {
      case 1:
        return { status: 'acquired', fence: at(r, 1, script), holdCount: at(r, 2, script), pttl: at(r, 3, script) };
      case 0:
        return { status: 'busy', pttl: at(r, 1, script) };
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
  if (!Array.isArray(reply) || reply.length < 2 || reply.length % 2 !== 0) fail('inspect.lua', reply);
  const [fence, pttl, ...rest] = reply as unknown[];
  if (!Number.isInteger(fence) || !Number.isInteger(pttl)) fail('inspect.lua', reply);
  const holders = new Map<string, number>();
  for (let i = 0; i < rest.length; i += 2) {
    const owner = rest[i];
    const count = rest[i + 1];
    if (typeof owner !== 'string' || !Number.isInteger(count)) fail('inspect.lua', reply);
    holders.set(owner, count as number);
  }
  return { fence: fence as number, pttl: pttl as number, holders };
});

/** A queued waiter leaves the queue; see leave.lua. True when a lock handed to it was passed on. */
export const leaveScript = defineScript('leave.lua', luaSources.leave, (reply): boolean => {
  if (reply !== 0 && reply !== 1) fail('leave.lua', reply);
  return reply === 1;
});

/** Redlock: raise a fresh hold's fence to the greatest a majority gave; see raise-fence.lua. 1 when the owner holds it there. */
export const raiseFenceScript = defineScript('raise-fence.lua', luaSources.raiseFence, (reply): boolean => {
  if (reply !== 0 && reply !== 1) fail('raise-fence.lua', reply);
  return reply === 1;
});
