/**
 * Deliberately broken lock clients, to show that the checker turns red. Each is the textbook
 * mistake and nothing else; all take fences from an INCR like padlock does, poll for the lock, and
 * keep a local deadline like padlock does, so only the named mistake differs.
 *
 * - PlainDelLock: releases with a plain DEL, so a holder whose lease ran out deletes its successor's key.
 * - NoNxLock: SET without NX, so every caller "gets" the lock.
 * - ClientClockLock: the expiry is the client's wall clock (`Date.now()`), stored in the key and
 *   compared with the next client's wall clock, so clients whose clocks disagree take held locks.
 */
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { HeldLock, SafetyLock } from './lock-clients.js';

const POLL_MS = 3;

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function monotonicMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

class PolledHold implements HeldLock {
  constructor(
    readonly fence: number,
    readonly owner: string,
    private readonly held: () => boolean,
    private readonly free: () => Promise<void>,
  ) {}
  isHeld(): boolean {
    return this.held();
  }
  lostReason(): null {
    return null;
  }
  release(): Promise<void> {
    return this.free();
  }
}

abstract class PolledLock implements SafetyLock {
  protected readonly lockKey: string;
  protected readonly fenceKey: string;

  constructor(protected readonly redis: Redis, name: string, protected readonly leaseMs: number) {
    this.lockKey = `broken:{${name}}:lock`;
    this.fenceKey = `broken:{${name}}:fence`;
  }

  /** One attempt: the fence when taken, 0 when busy. */
  protected abstract take(owner: string): Promise<number>;
  /** Whether the hold taken at `startedAt` (monotonic ms) still stands, as this client believes. */
  protected abstract stillHeld(startedAt: number, wallDeadline: number): boolean;
  protected abstract free(owner: string): Promise<void>;

  async acquire(waitMs: number): Promise<HeldLock> {
    const owner = randomBytes(16).toString('hex');
    const end = monotonicMs() + waitMs;
    for (;;) {
      const startedAt = monotonicMs();
      const wallDeadline = Date.now() + this.leaseMs;
      const fence = await this.take(owner);
      if (fence > 0) {
        return new PolledHold(fence, owner, () => this.stillHeld(startedAt, wallDeadline), () => this.free(owner));
      }
      if (monotonicMs() > end) throw new Error(`timed out waiting for ${this.lockKey}`);
      await sleep(POLL_MS);
    }
  }

  async close(): Promise<void> {}
}

/** Correct take (SET NX PX) and local deadline; the release is a plain DEL. */
export class PlainDelLock extends PolledLock {
  protected async take(owner: string): Promise<number> {
    const reply = await this.redis.eval(
      `if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return redis.call('INCR', KEYS[2]) end return 0`,
      2, this.lockKey, this.fenceKey, owner, this.leaseMs,
    );
    return Number(reply);
  }
  protected stillHeld(startedAt: number): boolean {
    return monotonicMs() < startedAt + this.leaseMs - 2;
  }
  protected async free(): Promise<void> {
    await this.redis.del(this.lockKey); // the mistake: whoever holds it now loses it
  }
}

/** SET without NX: overwrites whoever holds the lock. Release is a correct compare-and-delete. */
export class NoNxLock extends PolledLock {
  protected async take(owner: string): Promise<number> {
    const reply = await this.redis.eval(
      `redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) return redis.call('INCR', KEYS[2])`, // the mistake: no NX
      2, this.lockKey, this.fenceKey, owner, this.leaseMs,
    );
    return Number(reply);
  }
  protected stillHeld(startedAt: number): boolean {
    return monotonicMs() < startedAt + this.leaseMs - 2;
  }
  protected async free(owner: string): Promise<void> {
    await this.redis.eval(`if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end`, 1, this.lockKey, owner);
  }
}

/**
 * The deadline is the client's wall clock: the key stores "deadline owner" with no TTL, a taker
 * compares the stored deadline with its own `Date.now()`, and the holder believes itself valid until
 * its own `Date.now()` passes it.
 */
export class ClientClockLock extends PolledLock {
  protected async take(owner: string): Promise<number> {
    const now = Date.now();
    const reply = await this.redis.eval(
      `local v = redis.call('GET', KEYS[1])
       local deadline = v and tonumber(string.match(v, '^(%d+)')) or 0
       if deadline < tonumber(ARGV[1]) then
         redis.call('SET', KEYS[1], ARGV[2] .. ' ' .. ARGV[3])
         return redis.call('INCR', KEYS[2])
       end
       return 0`,
      2, this.lockKey, this.fenceKey, now, now + this.leaseMs, owner,
    );
    return Number(reply);
  }
  protected stillHeld(_startedAt: number, wallDeadline: number): boolean {
    return Date.now() < wallDeadline;
  }
  protected async free(owner: string): Promise<void> {
    await this.redis.eval(
      `local v = redis.call('GET', KEYS[1]) if v and string.match(v, ' (%x+)$') == ARGV[1] then redis.call('DEL', KEYS[1]) end`,
      1, this.lockKey, owner,
    );
  }
}
