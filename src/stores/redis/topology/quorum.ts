/**
 * How a topology of several servers (Redlock) adds up their answers to one call. Whoever builds a
 * call states its rule ({@link ScriptCall.quorum}); a topology of one server ignores it. A rule is
 * typed by the reply it combines: a `Quorum<AcquireReply>` fits only a call whose reply is an
 * `AcquireReply`. It hands the call to the one method of a {@link QuorumRules} that combines such
 * replies, so that the topology reads each reply as its rule's without knowing which script ran.
 */
import type { AcquireReply, InspectReply, ReapReply, ReleaseReply } from '../scripts/index.js';
import type { ScriptCall } from './topology.js';

/** A call that may grant a hold (acquire, enqueue, re-enter): a majority must grant it. */
export interface GrantRule {
  readonly name: 'grant';
  /** Who the hold is for (a master counts its calls in flight by owner; a fresh hold's fence is raised for it). */
  readonly owner: string;
  /** The lease asked for, in ms. */
  readonly leaseMs: number;
  /**
   * Whether the owner is fresh (acquire, enqueue) rather than holding the lock already (re-enter):
   * only a fresh hold is proposed a fence, counted by each master's epoch, given back where no answer
   * came, and taken out of the queues of masters that queued it.
   */
  readonly fresh: boolean;
}

/** A renewal of `holds` holds: each holds where a majority renewed it. */
export interface RenewRule {
  readonly name: 'renew';
  /** How many holds the call renews (the length of its reply). */
  readonly holds: number;
  /** The shortest lease the call asks for, in ms. */
  readonly leaseMs: number;
}

/**
 * A rule that needs nothing beyond its name:
 * - `release`: done once a majority released;
 * - `any` (leaving a queue, a force-release): done where any master did it, once a majority answered;
 * - `read` (inspect): what a majority says;
 * - `reap`: every master decides by its own copy of the liveness keys;
 * - `majority` (a liveness key written): done once a majority did it;
 * - `one-server`: only one server can decide it (a kind a topology of several refuses): such a
 *   topology refuses the call.
 */
export interface NamedRule {
  readonly name: 'release' | 'any' | 'read' | 'reap' | 'majority' | 'one-server';
}

/** Which rule a call follows, and what that rule needs to know of the call. */
export type QuorumRule = GrantRule | RenewRule | NamedRule;

/**
 * How a topology of several servers combines the answers to a call, one method per rule, each typed
 * by the reply of the calls that follow it. `Round` is whatever the topology passes along with the
 * call (Redlock: when the round began, and whether its caller gave up).
 */
export interface QuorumRules<Round> {
  /** A call that may grant a hold ({@link GrantRule}). */
  grant(call: ScriptCall<AcquireReply>, rule: GrantRule, round: Round): Promise<AcquireReply>;
  /** A renewal: each hold's lease where it held ({@link RenewRule}). */
  renew(call: ScriptCall<number[]>, rule: RenewRule, round: Round): Promise<number[]>;
  /** A release (`release`, {@link NamedRule}). */
  release(call: ScriptCall<ReleaseReply>, round: Round): Promise<ReleaseReply>;
  /** Done where any server did it (`any`). */
  any(call: ScriptCall<boolean>, round: Round): Promise<boolean>;
  /** A lock's state (`read`). */
  read(call: ScriptCall<InspectReply>, round: Round): Promise<InspectReply>;
  /** A reap (`reap`). */
  reap(call: ScriptCall<ReapReply>, round: Round): Promise<ReapReply>;
  /** Done once a majority did it (`majority`). */
  majority(call: ScriptCall<true>, round: Round): Promise<true>;
  /** A call only one server can decide (`one-server`): refused. */
  oneServer<Result>(call: ScriptCall<Result>, round: Round): Promise<Result>;
}

/** A call's rule, for a call whose reply is a `Result`. */
export type Quorum<Result> = QuorumRule & {
  /** Combines `call` (the call whose rule this is) by `rules`' method for this rule. */
  readonly combine: <Round>(rules: QuorumRules<Round>, call: ScriptCall<Result>, round: Round) => Promise<Result>;
};

/** The rule of a call that may grant `owner` a hold of `leaseMs` ms; `fresh` unless it re-enters. */
export function grantQuorum(owner: string, leaseMs: number, fresh: boolean): Quorum<AcquireReply> {
  // The rule is its own GrantRule: no copy (an object spread is a slow clone, made per attempt).
  const quorum: Quorum<AcquireReply> & GrantRule = { name: 'grant', owner, leaseMs, fresh, combine: (rules, call, round) => rules.grant(call, quorum, round) };
  return quorum;
}

/** The rule of a renewal of `holds` holds, the shortest of whose leases is `leaseMs`. */
export function renewQuorum(holds: number, leaseMs: number): Quorum<number[]> {
  const quorum: Quorum<number[]> & RenewRule = { name: 'renew', holds, leaseMs, combine: (rules, call, round) => rules.renew(call, quorum, round) };
  return quorum;
}

/** The rule of a release. */
export const releaseQuorum: Quorum<ReleaseReply> = { name: 'release', combine: (rules, call, round) => rules.release(call, round) };

/** The rule of a call done where any master did it (leaving a queue, a force-release). */
export const anyQuorum: Quorum<boolean> = { name: 'any', combine: (rules, call, round) => rules.any(call, round) };

/** The rule of a read of a lock's state (inspect). */
export const readQuorum: Quorum<InspectReply> = { name: 'read', combine: (rules, call, round) => rules.read(call, round) };

/** The rule of a reap. */
export const reapQuorum: Quorum<ReapReply> = { name: 'reap', combine: (rules, call, round) => rules.reap(call, round) };

/** The rule of a write done once a majority did it (a liveness key). */
export const majorityQuorum: Quorum<true> = { name: 'majority', combine: (rules, call, round) => rules.majority(call, round) };

/** The rule of a call only one server can decide: a topology of several refuses it. */
export function oneServerOnly<Result>(): Quorum<Result> {
  return { name: 'one-server', combine: (rules, call, round) => rules.oneServer(call, round) };
}
