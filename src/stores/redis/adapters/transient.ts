/**
 * Which failures pass by themselves: the server is being failed over, a slot is moving, the client
 * is reconnecting. A wait may try again after them (src/outage.ts); anything else (a script
 * error, bad credentials, a wrong type, an option) is final, and retrying it would only hide it.
 */
import { RedisUnavailableError } from '../../../errors.js';

/**
 * Redis's error replies that say "not now, not here" rather than "no": the Cluster has lost a slot's
 * master (`CLUSTERDOWN`), a multi-key call met a moving slot (`TRYAGAIN`), a redirection the client
 * did not follow (`MOVED`, `ASK`), a server still loading its data (`LOADING`), a replica cut off
 * from its master (`MASTERDOWN`), or a demoted primary refusing writes (`READONLY`).
 */
const PASSING_REPLY = /^(?:CLUSTERDOWN|TRYAGAIN|MOVED|ASK|LOADING|MASTERDOWN|READONLY)\b/;

/** Whether `error`, an error reply from Redis, is one a failover or a slot move produces. */
export function isPassingReply(error: unknown): boolean {
  return error instanceof Error && PASSING_REPLY.test(error.message);
}

/** Unavailability errors raised by a client that was closed for good: waiting will not bring it back. */
const closedForGood = new WeakSet<RedisUnavailableError>();

/**
 * Notes that `error` was raised while its client was closed for good (`status` as the adapter
 * reports it: ioredis `end`, node-redis `closed`), so that no wait tries again after it.
 */
export function noteClientState(error: Error, status: string): Error {
  if (error instanceof RedisUnavailableError && (status === 'end' || status === 'closed')) closedForGood.add(error);
  return error;
}

/**
 * Whether a call that failed with `error` may succeed if sent again a little later: Redis was
 * unavailable (the connection failed or closed, no reply came in time, the Cluster was down or
 * redirected too often, a failover reply) and its client is not closed for good.
 */
export function isTransient(error: unknown): boolean {
  return error instanceof RedisUnavailableError && !closedForGood.has(error);
}
