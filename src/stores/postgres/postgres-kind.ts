/**
 * What every PostgreSQL lock kind shares: its place in the table (prefix, family, name; a row per
 * participant of one role), and the store-neutral lock's few members (locks/lock.ts) done with the
 * schema's functions: take and wait, re-enter by owner, release, renew (through the store), inspect.
 *
 * Waiting: one take queues the caller (its row stays, in ticket order) once this Padlock listens;
 * it then sleeps until the server's `wake` names its owner on this Padlock's channel, the listening
 * connection drops, or the first lease ahead of it ends (its holder may have died: nobody would
 * release it), and takes again. Never a poll: an idle waiter costs the server nothing between.
 * A take that fails because the server is unavailable for now (restarting, unreachable, read-only
 * in a failover: postgres-errors.ts) is sent again after a back-off within the wait (src/outage.ts).
 */
import { monotonicNow } from '../../clock.js';
import { LockNotHeldError, PermitLimitError } from '../../errors.js';
import type { Hold } from '../../hold.js';
import type { LockKeys } from '../../keys.js';
import { Lock, type Grant } from '../../locks/lock.js';
import type { ResolvedAcquireOptions } from '../../options.js';
import type { Shared } from '../../shared.js';
import type { WaitScope } from '../../wait-scope.js';
import { Outage } from '../../outage.js';
import { isTransientPostgres, unavailable } from './postgres-errors.js';
import type { LockRef, Role, TakeResult } from './postgres-ops.js';
import type { PostgresStore } from './postgres-store.js';

/** A lock's identity in the hold registry and async context: its family, name and role. */
function postgresKeys(family: string, role: Role): (prefix: string, name: string) => LockKeys {
  return (prefix, name) => {
    const lock = `${prefix}/${family}/${role}/${name}`;
    return { name, lock, queue: lock, released: lock };
  };
}

export abstract class PostgresKind extends Lock {
  /** One statement renews every hold: one family. */
  readonly family = 'postgres';
  /** The lock's rows: prefix, family and name. */
  readonly ref: LockRef;

  constructor(
    shared: Shared,
    protected readonly pg: PostgresStore,
    name: string,
    /** `mutex` (both mutexes: one lock), `rw`, `semaphore`. */
    family: LockRef['family'],
    /** The role of this lock's rows. */
    protected readonly role: Role,
    /** The permits each take asks (1 but for a semaphore). */
    protected readonly permits = 1,
    /** The limit (1 but for a semaphore), unless a stored one replaces it. */
    protected readonly limit = 1,
  ) {
    super(shared, name, postgresKeys(family, role));
    this.ref = { prefix: shared.prefix, family, name: this.name };
  }

  renew(holds: readonly Hold[], ms?: number): Promise<number[]> {
    return this.pg.renew(holds, ms);
  }

  /** A read (a force-release's notice said they may be gone): each hold's remaining lease by the server's clock, no lease moved. */
  override async check(holds: readonly Hold[]): Promise<number[]> {
    const left = await this.pg.call(this.name, () => this.pg.ops.remaining(holds.map((hold) => hold.fence)));
    return holds.map((hold) => left.get(hold.fence) ?? 0);
  }

  async releaseInStore(hold: Hold, count: number): Promise<number> {
    const left = await this.pg.call(this.name, () => this.pg.ops.release(this.ref, this.role, hold.owner, count));
    if (left < 0) throw new LockNotHeldError(this.name, hold.owner, 'release');
    return left;
  }

  protected async reenterOnce(owner: string, leaseMs: number): Promise<Grant | null> {
    const sentAt = monotonicNow();
    const reentry = await this.pg.call(this.name, () => this.pg.ops.reenter(this.ref, this.role, owner, leaseMs));
    return reentry === null ? null : { fence: reentry.fence, holdCount: reentry.holdCount, pttl: reentry.remainingMs, sentAt };
  }

  protected async obtain(owner: string, options: ResolvedAcquireOptions, scope: WaitScope): Promise<Grant> {
    const { listener } = this.pg;
    const waits = scope.waitMs > 0;
    // Registered before the first take: a wake-up that comes before this wait sleeps is kept.
    const waker = waits ? listener.waker(owner) : undefined;
    // A restart, a failover, a dropped connection: the take is sent again after a back-off, within the wait.
    const outage = new Outage(scope, this.pg.contact, isTransientPostgres);
    let queued = false;
    // A take that got no answer may still land: its grant is given back if the wait fails.
    let unanswered = false;
    try {
      await scope.race(this.pg.listenForHolders());
      for (;;) {
        const generation = listener.generation;
        // Queued only while a connection listens: its wake-up must be able to reach it.
        const queue = waits && listener.listening;
        queued ||= queue;
        const sentAt = monotonicNow();
        const request = { role: this.role, owner, permits: this.permits, limit: this.limit, leaseMs: options.leaseMs, wait: queue, channel: listener.channel };
        let result: TakeResult;
        try {
          // A take sent again reads back what an earlier one of the same owner obtained (the schema's take).
          result = await outage.race(
            scope.race(this.pg.call(this.name, () => this.pg.ops.take(this.ref, request)), (late) => this.#abandon(owner, late)),
            (late) => this.#abandon(owner, late),
          );
        } catch (error) {
          unanswered = true;
          await outage.pause(error, sentAt);
          continue;
        }
        outage.answered();
        unanswered = false;
        if (result.state === 'held') return { fence: result.fence, holdCount: result.holdCount, pttl: result.remainingMs, sentAt };
        if (result.state === 'over') throw new PermitLimitError(this.name, this.permits, result.limit);
        scope.foundHeld();
        if (waker === undefined) throw scope.timeout();
        if (result.state === 'busy') {
          // Not listening (the connection dropped): listen again, then take again.
          const listenAt = monotonicNow();
          await outage.race(scope.race(listener.listen())).catch((error: unknown) => outage.pause(error, listenAt));
          continue;
        }
        // The connection dropped since this take: its wake-up may be lost, so look again at once.
        if (listener.generation !== generation) continue;
        await waker.sleep(result.retryMs, scope);
      }
    } catch (error) {
      if (queued) this.pg.leave(this.ref, this.role, owner);
      if (unanswered) this.giveBack(owner, 1);
      throw unavailable(this.name, outage.outcome(error));
    } finally {
      waker?.dispose();
    }
  }

  /** A take answered after its caller gave up: what it obtained goes back. */
  #abandon(owner: string, late: TakeResult): void {
    if (late.state === 'held') this.giveBack(owner, 1);
    else if (late.state === 'waiting') this.pg.leave(this.ref, this.role, owner);
  }

  /**
   * One attempt to take a hold for `owner` (`passes`: a writer's owner whose place a read takes),
   * never queued: a grant, or `null` when not free now.
   */
  protected async takeOnce(owner: string, leaseMs: number, passes?: string): Promise<Grant | null> {
    await this.pg.listenForHolders();
    const sentAt = monotonicNow();
    const request = { role: this.role, owner, permits: this.permits, limit: this.limit, leaseMs, wait: false, passes, channel: this.pg.listener.channel };
    const result = await this.pg.call(this.name, () => this.pg.ops.take(this.ref, request));
    return result.state === 'held' ? { fence: result.fence, holdCount: result.holdCount, pttl: result.remainingMs, sentAt } : null;
  }

  async isLocked(): Promise<boolean> {
    this.shared.runtime.assertOpen(this.name);
    return (await this.pg.call(this.name, () => this.pg.ops.state(this.ref, this.countedRole, this.limit))).holders > 0;
  }

  async forceRelease(): Promise<boolean> {
    this.shared.runtime.assertOpen(this.name);
    return this.pg.call(this.name, () => this.pg.ops.forceRelease(this.ref));
  }

  /** The role whose holders {@link isLocked} counts (a read/write side counts its own), or every role. */
  protected get countedRole(): Role | undefined {
    return undefined;
  }
}
