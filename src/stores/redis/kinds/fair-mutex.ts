/**
 * The fair (FIFO) mutex: the mutex's queue, but a release hands the lock to the first live waiter
 * inside the release script (direct handoff) and tells only that waiter's client, which then
 * holds the lock without another round trip; and a free lock goes to nobody while a live waiter
 * is ahead. Waiting, heartbeats and giving up are the mutex's (mutex.ts).
 */
import type { Shared } from '../../../shared.js';
import type { RedisContext } from '../redis-store.js';
import type { Grant } from '../../../locks/lock.js';
import { Mutex } from './mutex.js';

export class FairMutex extends Mutex {
  constructor(shared: Shared, redis: RedisContext, name: string) {
    super(shared, redis, name, 'fair');
  }

  protected override grantFrom(message: string, lastSentAt: number): Grant | null {
    return this.handedOver(message, lastSentAt);
  }
}
