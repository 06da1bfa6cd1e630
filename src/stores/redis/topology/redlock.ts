/**
 * Redlock: N ≥ 3 independent masters. Every call goes to all of them in parallel, each bounded by
 * a time-out (small beside the call's lease; one timer for the round), and the answers add up by the
 * call's rule, as soon as the answers so far decide it (the other masters' calls run on in the
 * background, bounded; answers.ts gathers them):
 * - a grant (acquire, enqueue, re-enter) needs a majority of grants whose shortest lease, less the
 *   time the round took and a drift, is still positive; the fence then becomes the greatest any
 *   granting master gave, written back to a majority before the grant is returned (so fences
 *   increase across overlapping majorities). Anything short of that is undone on every master
 *   that granted (and, for a fresh owner, on every master that did not answer);
 * - a renewal holds where a majority renewed it; the lease is the majority's shortest;
 * - a release, a leave and a force-release go to every master (a release returns once a majority
 *   released); a read (inspect) takes the majority;
 * - a reap goes to every master, each checking the holder's liveness key there: freed where every
 *   client's key is gone (a dead client's key runs out on every master);
 * - a liveness key write goes to every master and needs a majority.
 * A master's late grant is given back when it arrives. Each call states its rule (quorum.ts): the
 * mutex family's calls state these; a kind whose calls only one server can decide is refused here
 * (REFUSALS), and such a call refused before any master runs it.
 */
import { randomInt } from 'node:crypto';
import { bound, driftMs, monotonicNow } from '../../../clock.js';
import { Deadline } from '../../../deadlines.js';
import { QuorumError, RedisUnavailableError, type NodeOutcome } from '../../../errors.js';
import type { CommandConnection, SubscriberConnection } from '../adapters/connection.js';
import { fanInSubscriber } from '../adapters/fan-in-subscriber.js';
import { Answers } from './answers.js';
import { FenceProposer } from './fence-proposer.js';
import { checkArgs, checkedScript, epochScript, resolveArgs, type Checked, type Epoch } from './master-epoch.js';
import { ScriptRunner, type ScriptSend } from '../adapters/script-runner.js';
import { EvictionPolicyCheck } from '../adapters/eviction-policy.js';
import { raiseFenceScript, type AcquireReply, type HolderReply, type InspectReply, type ReapReply, type ReleaseReply } from '../scripts/index.js';
import type { GrantRule, QuorumRule, QuorumRules } from './quorum.js';
import type { GaveUp, LockKindName, PlainCall, ScriptCall, Topology } from './topology.js';
import { formatMs } from '../../../durations.js';

/** A master's answer to one call. */
type Answer<Result> =
  /**
   * `covered`: a later attempt of the same owner was still unanswered by that master when this came
   * (see #ask). `epoch`: the master's epoch, read after the call (attempts and renewals; master-epoch.ts).
   */
  | { readonly node: Master; readonly ok: true; readonly value: Result; readonly covered: boolean; readonly epoch?: Epoch | undefined }
  | { readonly node: Master; readonly ok: false; readonly error: unknown };

interface Master {
  readonly address: string;
  readonly runner: ScriptRunner;
  readonly connection: CommandConnection;
  /** Grant attempts sent to this master and not yet answered, by owner. */
  readonly attempts: InFlight;
  /** Reads this master's maxmemory-policy once (it warns if it evicts). */
  readonly evictions: EvictionPolicyCheck;
  /** The run id the last epoch check read, and the connection it came over: a check sent over the same one names it. */
  known: { readonly run: string; readonly session: object } | undefined;
}

/**
 * Counts, per owner, the calls sent to one master whose answer has not come yet: a short list (the
 * owners with attempts in flight there, most often none or one), searched by the owner's token, the
 * same string for every attempt of one acquisition. A Map entry made and deleted per call (a fresh
 * token per acquisition) cost more than the rest of the count, five times per attempt.
 */
class InFlight {
  readonly #owners: string[] = [];
  readonly #counts: number[] = [];

  /** Counts a call of `owner` sent. */
  sent(owner: string): void {
    const at = this.#owners.indexOf(owner);
    if (at >= 0) this.#counts[at] = (this.#counts[at] ?? 0) + 1;
    else {
      this.#owners.push(owner);
      this.#counts.push(1);
    }
  }

  /** Counts a call of `owner` answered (or failed): done as its reply is read, before anything else handles it. */
  settled(owner: string): void {
    const at = this.#owners.indexOf(owner);
    if (at < 0) return;
    const left = (this.#counts[at] ?? 1) - 1;
    if (left > 0) {
      this.#counts[at] = left;
      return;
    }
    // The last entry takes its place: the order means nothing.
    const last = this.#owners.length - 1;
    this.#owners[at] = this.#owners[last] ?? '';
    this.#counts[at] = this.#counts[last] ?? 0;
    this.#owners.pop();
    this.#counts.pop();
  }

  /** Whether a call of `owner` is still unanswered. */
  pending(owner: string): boolean {
    return this.#owners.includes(owner);
  }
}

/** One call sent to some masters: the answers, and which are still awaited, under one time-out. */
class Sent<Result> {
  readonly answers: Answers<Answer<Result>>;
  /** Whether each master's answer is still awaited: once the time-out passed, a reply is late. */
  readonly #waiting: boolean[];
  readonly #deadline: Deadline;

  constructor(masters: readonly Master[], lock: string | undefined, ms: number) {
    const answers = (this.answers = new Answers<Answer<Result>>(masters.length));
    const waiting = (this.#waiting = masters.map(() => true));
    this.#deadline = new Deadline(ms, () => {
      masters.forEach((node, i) => {
        if (!waiting[i]) return;
        waiting[i] = false;
        answers.add({ node, ok: false, error: new RedisUnavailableError(lock, new Error(`${node.address}: no reply within ${formatMs(ms)}`)) });
      });
    });
    if (masters.length === 0) this.#deadline.cancel();
  }

  /** The `i`-th master's answer; false when it came after the time-out (it counts for nothing then). */
  answer(i: number, answer: Answer<Result>): boolean {
    if (this.#waiting[i] !== true) return false;
    this.#waiting[i] = false;
    this.answers.add(answer);
    if (this.answers.complete) this.#deadline.cancel();
    return true;
  }
}

/** One round of a call: when it began (a grant's validity counts from then), and whether its caller gave up. */
interface Round {
  readonly startedAt: number;
  readonly gaveUp: GaveUp | undefined;
}

/**
 * A call as one master is asked it: a round's call, with its rule, or one of Redlock's own (an epoch
 * resolved, a fence raised), which goes to the masters it names and needs no rule.
 */
type Asked<Result> = ScriptSend<Result> & Partial<Pick<ScriptCall<Result>, 'quorum' | 'grants' | 'undoUnanswered'>>;

/**
 * How long a master may take to answer one call: a quarter of the call's lease (of the Padlock's lease
 * for calls that carry none), small against it as Redlock asks, within these bounds. A round decides
 * as soon as its outcome is known, so the time-out costs something only when the masters that have
 * answered cannot decide it yet (a split, or too few answers).
 */
const NODE_TIMEOUT_SHARE = 0.25;
const MIN_NODE_TIMEOUT_MS = 100;
const MAX_NODE_TIMEOUT_MS = 1_000;

/** What a Redlock set needs from its Padlock beyond the masters. */
export interface RedlockHost {
  /** The Padlock's lease, for the per-master time-out of calls that carry no lease of their own. */
  readonly leaseMs: number;
  /** Lets the calls a round no longer waits for run on, bounded; `close()` waits for them. */
  readonly track: (work: Promise<unknown>) => void;
  /** The Padlock's key prefix: each master's epoch marker is `<prefix>:redlock-epoch`. */
  readonly prefix: string;
}

/** The kinds a Redlock set cannot serve soundly, and why. */
const REFUSALS: Partial<Record<LockKindName, string>> = {
  // A fair handoff happens inside one server's release script: N masters cannot agree on one waiter.
  fairMutex: 'a fair handoff needs one server to give the lock to the next waiter: use mutex',
  // Readers admitted together and writers handed the lock happen inside one server's scripts, as the fair handoff does.
  readWrite: 'admitting queued readers together and handing the lock to a writer need one server to decide: use mutex',
  // Each master capping its own holders at the limit does not cap the holders of majorities: with 2
  // permits, A on {1,2,3}, B on {3,4,5} and C on {1,4,5} all hold, and no master has more than 2.
  semaphore: 'majorities of masters that each admit up to the permits can together admit more holders than that',
};

export class Redlock implements Topology {
  readonly description: string;
  /**
   * A round is decided by its per-master time-outs (at most {@link MAX_NODE_TIMEOUT_MS}): a wait's
   * grace outlasts them by this much, so that masters that stay silent are reported as a
   * `QuorumError` naming each one, not raced by the wait's own bound into a bare time-out.
   */
  readonly extraReplyMs = 250;
  /** A grant counts once a majority confirmed it: handoff messages are never taken at their word. */
  readonly confirmsGrants = true;
  readonly shardedPubSub = false;
  /** How many masters make a majority. */
  readonly quorum: number;
  readonly #masters: readonly Master[];
  readonly #fences = new FenceProposer();
  readonly #host: RedlockHost;
  readonly #marker: string;
  /** The longest lease this client has asked for or seen recorded on a master (the restart rule's sit-out). */
  #longestMs: number;
  /** Rounds with masters still to hear from, and what ends the tracked promise that `close()` waits on while there are any. */
  #outstanding = 0;
  #idle: (() => void) | undefined;

  constructor(connections: readonly CommandConnection[], readonly replyTimeoutMs: number, host: RedlockHost) {
    this.#masters = connections.map((connection) => {
      const runner = new ScriptRunner(connection);
      return { address: connection.address, runner, connection, attempts: new InFlight(), evictions: new EvictionPolicyCheck(runner, connection), known: undefined };
    });
    this.quorum = Math.floor(connections.length / 2) + 1;
    this.#host = host;
    this.#marker = `${host.prefix}:redlock-epoch`;
    this.#longestMs = host.leaseMs;
    this.description = `Redlock over ${connections.length} masters`;
  }

  /** The per-master time-out for a call whose lease is `leaseMs` (see NODE_TIMEOUT_SHARE). */
  nodeTimeoutMs(leaseMs = this.#host.leaseMs): number {
    return Math.min(this.replyTimeoutMs, MAX_NODE_TIMEOUT_MS, Math.max(MIN_NODE_TIMEOUT_MS, Math.ceil(leaseMs * NODE_TIMEOUT_SHARE)));
  }

  /** A woken waiter tries again once a majority of masters woke it (they ran the release). */
  get wakeUps(): number {
    return this.quorum;
  }

  run<Result>(call: ScriptCall<Result>): Promise<Result> {
    const ms = this.replyTimeoutMs;
    return bound(this.#round(call), { ms, timeout: () => this.noReply(call.lock, ms) });
  }

  send<Result>(call: ScriptCall<Result>, gaveUp?: GaveUp): Promise<Result> {
    return this.#round(call, gaveUp);
  }

  noReply(lock: string | undefined, ms: number): RedisUnavailableError {
    return new RedisUnavailableError(lock, new Error(`no majority of the ${this.#masters.length} masters answered within ${formatMs(ms)}`));
  }

  refuses(kind: LockKindName): string | undefined {
    return REFUSALS[kind];
  }

  /** One call reaches every master, so any group will do. */
  groupOf(): string {
    return '';
  }

  nodeOf(): string {
    return '';
  }

  runMany<Result>(calls: readonly ScriptCall<Result>[]): Promise<PromiseSettledResult<Result>[]> {
    return Promise.allSettled(calls.map((call) => this.run(call)));
  }

  openSubscriber(): SubscriberConnection {
    return fanInSubscriber(this.#masters.map((m) => m.connection.openSubscriber()));
  }

  /**
   * Sends `call` to every master at once, bounded by the per-master time-out, and adds the answers
   * up by the call's rule as soon as they decide its outcome: the masters not yet heard from run on
   * in the background (tracked, so that `close()` waits for them).
   */
  #round<Result>(call: ScriptCall<Result>, gaveUp?: GaveUp): Promise<Result> {
    return call.quorum.combine(this.#rules, call, { startedAt: monotonicNow(), gaveUp });
  }

  /** Each rule's round: its call's answers, typed by the rule's reply, added up as the rule says. */
  readonly #rules: QuorumRules<Round> = {
    grant: (call, rule, round) => this.#acquire(call, rule, round),
    renew: async (call, rule, { gaveUp }) => {
      const n = this.#masters.length;
      const q = this.quorum;
      const decided = (got: readonly Answer<number[]>[]): boolean => {
        const pending = n - got.length;
        for (let i = 0; i < rule.holds; i++) {
          const renewed = got.filter((a) => a.ok && (a.value[i] ?? 0) > 0).length;
          if (renewed < q && renewed + pending >= q) return false;
        }
        return true;
      };
      return this.#renew(call.lock, await this.#askAll(call, rule, gaveUp).decide(decided), rule.holds);
    },
    release: async (call, { gaveUp }) => {
      const q = this.quorum;
      const decided = (got: readonly Answer<ReleaseReply>[]): boolean => {
        let released = 0;
        for (const a of got) if (a.ok && a.value.status === 'released') released++;
        return released >= q;
      };
      return this.#release(call.lock, await this.#askAll(call, call.quorum, gaveUp).decide(decided));
    },
    any: async (call, { gaveUp }) => {
      const decided = (got: readonly Answer<boolean>[]): boolean => got.filter((a) => a.ok).length >= this.quorum && got.some((a) => a.ok && a.value);
      return this.#any(call.lock, await this.#askAll(call, call.quorum, gaveUp).decide(decided));
    },
    read: async (call, { gaveUp }) => {
      const q = this.quorum;
      const decided = (got: readonly Answer<InspectReply>[]): boolean => {
        const replies = got.flatMap((a) => (a.ok ? [a.value] : []));
        const free = replies.filter((r) => r.fence === 0).length;
        const fence = agreed(replies.filter((r) => r.fence > 0).map((r) => r.fence));
        return free >= q || replies.filter((r) => r.fence === fence && fence > 0).length >= q;
      };
      return this.#inspect(call.lock, await this.#askAll(call, call.quorum, gaveUp).decide(decided));
    },
    reap: async (call, { gaveUp }) => this.#reap(call.lock, await this.#askAll(call, call.quorum, gaveUp).all()),
    majority: async (call, { gaveUp }) => {
      const decided = (got: readonly Answer<true>[]): boolean => got.filter((a) => a.ok).length >= this.quorum;
      return this.#majority(call.lock, await this.#askAll(call, call.quorum, gaveUp).decide(decided));
    },
    // Refused before any master runs it: the kinds whose calls these are are refused here (REFUSALS).
    oneServer: (call) => Promise.reject(new TypeError(`Redlock has no rule for ${call.script.name}: only one server can decide it`)),
  };

  /**
   * Sends `call`, whose rule is `rule` (none for Redlock's own calls), to `masters` (every master
   * unless told), each bounded by one time-out `ms` they share; the answers come into one
   * {@link Answers}, which is tracked until the last master answered or timed out.
   */
  #askAll<Result>(call: Asked<Result>, rule: QuorumRule | undefined, gaveUp?: GaveUp, masters: readonly Master[] = this.#masters, ms = this.nodeTimeoutMs(rule === undefined ? undefined : leaseOf(rule))): Answers<Answer<Result>> {
    const sent = new Sent<Result>(masters, call.lock, ms);
    // A fresh attempt and a renewal run the epoch check in the same script (master-epoch.ts): its keys are the same on every master.
    const checked = rule !== undefined && checks(rule) ? rule : undefined;
    const script = checked === undefined ? undefined : checkedScript(call.script);
    const keys = checked === undefined ? call.keys : [...call.keys, this.#marker];
    const longestMs = checked === undefined ? 0 : this.#longestOf(checked);
    for (let i = 0; i < masters.length; i++) {
      const node = masters[i] as Master;
      if (checked === undefined || script === undefined) this.#ask(node, sent, i, call, rule, gaveUp);
      else this.#askChecked(node, sent, i, call, checked, script, keys, longestMs, gaveUp);
    }
    const { answers } = sent;
    if (!answers.complete) {
      // Tracked while any round has masters to hear from: one promise per busy spell, not one per round.
      if (this.#outstanding++ === 0) this.#host.track(new Promise<void>((resolve) => (this.#idle = resolve)));
      answers.whenAll(() => {
        if (--this.#outstanding === 0) this.#idle?.();
      });
    }
    return answers;
  }

  /** A grant (acquire, enqueue, re-enter): a fresh hold is proposed a fence the masters can agree on. */
  async #acquire(asked: ScriptCall<AcquireReply>, rule: GrantRule, { startedAt, gaveUp }: Round): Promise<AcquireReply> {
    const { fresh } = rule;
    const call = fresh && asked.proposing !== undefined ? asked.proposing(this.#fences.propose()) : asked;
    const round = this.#askAll(call, rule, gaveUp);
    const n = this.#masters.length;
    const q = this.quorum;
    // Decided once a majority granted (a slow master's answer only adds to the hold), or once too few
    // can still grant and it is known whether a majority answered at all.
    const decided = (got: readonly Answer<AcquireReply>[]): boolean => {
      let granted = 0;
      let answered = 0;
      let unresolved = false;
      for (const a of got) {
        if (!a.ok) continue;
        answered++;
        if (counts(a)) granted++;
        if (a.epoch?.state === 'unresolved') unresolved = true;
      }
      const pending = n - got.length;
      // A new epoch counts only on a first use, which every master that answers in time may rule
      // out (one marker is enough): wait for them while it is still possible.
      if (pending > 0 && unresolved && mayBeFirstUse(got)) return false;
      return granted >= q || (granted + pending < q && (answered >= q || answered + pending < q));
    };
    const answers = await round.decide(decided);
    // A first use: its grants count once their masters' epochs are resolved, so that a later round
    // can tell these masters from new ones (one more round trip, on new masters and after a quiet spell).
    const confirmed = firstUse(answers, q) ? await this.#resolveNow(answers) : undefined;
    if (confirmed === undefined) this.#resolveEpochs(round);
    const reply = await this.#grant(call, rule, answers, startedAt, confirmed);
    if (reply.status === 'acquired') {
      if (fresh) {
        this.#raiseStragglers(call, rule, round, answers.length, reply.fence);
        this.#unqueue(call, round);
      }
    } else {
      this.#giveBackStragglers(call, rule, round, answers.length);
    }
    return reply;
  }

  /**
   * An attempt decided without some masters' answers (it failed on a majority already): what those
   * masters grant when their answer comes is given back, as for the answered ones; a master that never
   * answers a fresh owner's attempt gets the clean-up an unanswered call gets. `counted`: how many of
   * the round's answers the decision saw.
   */
  #giveBackStragglers(call: ScriptCall<AcquireReply>, { owner, fresh }: GrantRule, round: Answers<Answer<AcquireReply>>, counted: number): void {
    round.forEach((a) => {
      // A later attempt of the same owner, still unanswered there, accounts for this grant (see #ask).
      if (a.ok) {
        if (!a.covered) this.#undo(a.node, call, a.value);
      } else if (fresh && !a.node.attempts.pending(owner)) {
        this.#undo(a.node, call, undefined);
      }
    }, counted);
  }

  /**
   * A hold granted by a majority while other masters queued its owner (they found the lock held, by
   * a contender's partial grant): takes the owner out of those queues, or it stays there as a ghost
   * that those masters' next releases would wake instead of a real waiter.
   */
  #unqueue(call: ScriptCall<AcquireReply>, round: Answers<Answer<AcquireReply>>): void {
    const { unqueue } = call;
    if (unqueue === undefined) return;
    round.forEach((a) => {
      if (a.ok && a.value.status === 'acquired') return;
      this.#sendAside(a.node, unqueue);
    });
  }

  /**
   * Sends `call` to one master and hands its answer to `answer` (which says whether it still
   * counted: false once the round's time-out passed). A grant that comes after that is given back
   * there, unless a later attempt of the same owner is still on its way to that master: a master
   * answers in order, so that attempt's answer, which comes next, found the grant already made and
   * counts it as its own (it is that attempt's to keep or give back).
   */
  #ask<Result>(node: Master, sent: Sent<Result>, i: number, call: Asked<Result>, rule: QuorumRule | undefined, gaveUp?: GaveUp): void {
    node.evictions.check(call.keys); // once per master: beside this call, never before it
    const owner = rule?.name === 'grant' ? rule.owner : undefined;
    if (owner !== undefined) node.attempts.sent(owner);
    node.runner.send(call.script, call.keys, call.args, call.lock, gaveUp).then(
      (value) => {
        // Read as the reply comes, before the next reply of that master (which may be the later attempt's) is handled.
        let covered = false;
        if (owner !== undefined) {
          node.attempts.settled(owner);
          covered = node.attempts.pending(owner);
        }
        if (!sent.answer(i, { node, ok: true, value, covered, epoch: undefined }) && !covered) this.#undo(node, call, value);
      },
      (error: unknown) => {
        if (owner !== undefined) node.attempts.settled(owner);
        sent.answer(i, { node, ok: false, error });
      },
    );
  }

  /**
   * As {@link #ask}, for a call followed by the epoch check in the same script (`script`, whose keys
   * are `keys`: the marker's, then the call's), which records `longestMs`: its answer carries the
   * epoch of the process that ran it.
   */
  #askChecked<Result>(
    node: Master,
    sent: Sent<Result>,
    i: number,
    call: Asked<Result>,
    rule: QuorumRule,
    script: ScriptSend<Checked<Result>>['script'],
    keys: readonly string[],
    longestMs: number,
    gaveUp?: GaveUp,
  ): void {
    node.evictions.check(call.keys); // once per master: beside this call, never before it
    // The run id the master's marker must name for the check to skip its INFO: known only over the connection it was read on.
    const session = node.connection.session();
    const knownRun = session !== undefined && node.known?.session === session ? node.known.run : '';
    const owner = rule.name === 'grant' ? rule.owner : undefined;
    if (owner !== undefined) node.attempts.sent(owner);
    node.runner.send(script, keys, [...call.args, ...checkArgs(longestMs, knownRun)], call.lock, gaveUp).then(
      ({ value, epoch }) => {
        let covered = false;
        if (owner !== undefined) {
          node.attempts.settled(owner);
          covered = node.attempts.pending(owner);
        }
        // Answered over another connection than the one it was sent on (a reconnect sent it again):
        // the process that ran it may be a restarted one that took the run id it was told for its own.
        const sameSession = session !== undefined && node.connection.session() === session;
        const reply: Answer<Result> =
          sameSession || knownRun === ''
            ? { node, ok: true, value, covered, epoch }
            : { node, ok: false, error: new RedisUnavailableError(call.lock, new Error(`${node.address}: reconnected while the call was in flight`)) };
        if (!sent.answer(i, reply)) {
          if (!covered) this.#undo(node, call, value);
          return;
        }
        if (!reply.ok) return;
        if (sameSession && (node.known?.run !== epoch.run || node.known.session !== session)) node.known = { run: epoch.run, session };
        if (epoch.longestMs > this.#longestMs) this.#longestMs = epoch.longestMs;
      },
      (error: unknown) => {
        if (owner !== undefined) node.attempts.settled(owner);
        sent.answer(i, { node, ok: false, error });
      },
    );
  }

  /** The longest lease a check records: the call's own, or a longer one this client knows of. */
  #longestOf(rule: QuorumRule): number {
    const lease = leaseOf(rule) ?? 0;
    if (lease > this.#longestMs) this.#longestMs = lease;
    return this.#longestMs;
  }

  /**
   * Once every master of a fresh attempt answered: sets the sit-out of the new epochs it found to the
   * longest lease known, and a drift (a first use resolves them at once instead: #resolveNow).
   */
  #resolveEpochs(round: Answers<Answer<AcquireReply>>): void {
    round.whenAll((answers) => {
      if (!answers.some((a) => a.ok && a.epoch?.state === 'unresolved') || firstUse(answers, this.quorum)) return;
      const sitOutMs = this.#longestMs + driftMs(this.#longestMs);
      for (const a of answers) {
        if (a.ok && a.epoch?.state === 'unresolved') this.#sendAside(a.node, { script: epochScript, keys: [this.#marker], args: resolveArgs(a.epoch, sitOutMs, this.#longestMs), lock: undefined });
      }
    });
  }

  /**
   * A first use: resolves every answering master's new epoch with no sit-out; the masters where that
   * very epoch (the process and `born` the attempt's check read) is now ready.
   */
  async #resolveNow(answers: readonly Answer<AcquireReply>[]): Promise<ReadonlySet<Master>> {
    const ms = this.nodeTimeoutMs();
    const resolved = await Promise.all(
      answers.flatMap((a) => {
        const read = a.ok ? a.epoch : undefined;
        if (read === undefined) return [];
        const asked = this.#askAll({ script: epochScript, keys: [this.#marker], args: resolveArgs(read, 0, this.#longestMs), lock: undefined }, undefined, undefined, [a.node], ms).all();
        return [asked.then(([r]) => (r?.ok === true && r.value.state === 'ready' && r.value.born === read.born && r.value.run === read.run ? [r.node] : []))];
      }),
    );
    return new Set(resolved.flat());
  }

  /** Gives back, on one master, what `reply` granted there (best effort). */
  #undo<Result>(node: Master, call: Asked<Result>, reply: Result | undefined): void {
    const undo = reply === undefined ? call.undoUnanswered : call.grants?.(reply)?.undo;
    if (undo !== undefined) this.#sendAside(node, undo);
  }

  /** Sends a clean-up call to one master, bounded by the reply time-out; its outcome is nobody's (best effort). */
  #sendAside(node: Master, call: PlainCall): void {
    const ms = this.replyTimeoutMs;
    void bound(node.runner.send(call.script, call.keys, call.args, call.lock), { ms, timeout: () => new Error(`no reply within ${formatMs(ms)}`) }).catch(() => undefined);
  }

  async #grant(call: ScriptCall<AcquireReply>, rule: GrantRule, answers: readonly Answer<AcquireReply>[], startedAt: number, confirmed?: ReadonlySet<Master>): Promise<AcquireReply> {
    const { fresh } = rule;
    const granted = answers.filter((a): a is Answer<AcquireReply> & { ok: true; value: { status: 'acquired'; fence: number; holdCount: number; pttl: number } } => counts(a, confirmed));
    const counted: readonly Answer<AcquireReply>[] = granted;
    // A master sitting out (it may have lost grants): its grant is given back, whatever the outcome.
    for (const answer of answers) {
      if (answer.ok && answer.value.status === 'acquired' && !counted.includes(answer)) this.#undo(answer.node, call, answer.value);
    }
    if (granted.length >= this.quorum) {
      let pttl = Infinity;
      let highest = 0;
      let holdCount = 0;
      for (const { value } of granted) {
        pttl = Math.min(pttl, value.pttl);
        highest = Math.max(highest, value.fence);
        holdCount = Math.max(holdCount, value.holdCount);
      }
      const validity = pttl - (monotonicNow() - startedAt) - driftMs(pttl);
      // A fresh hold's fence: the greatest any granting master gave (then written back). A re-entry's:
      // the one a majority holds (a master that granted late may still show its own until raised).
      const fence = fresh ? highest : agreed(granted.map((a) => a.value.fence));
      if (fresh) this.#fences.observe(fence);
      // Where every granting master gave the proposed fence, a majority has it already: one round.
      const behind = fresh ? granted.filter((a) => a.value.fence < fence).map((a) => a.node) : [];
      if (validity > 0 && (!fresh || behind.length === 0 || (await this.#raiseFence(call, rule, behind, fence, granted.length - behind.length)))) {
        return { status: 'acquired', fence, holdCount, pttl };
      }
    }
    // No majority in time: give back every grant, and, for a fresh owner, try where no answer came.
    for (const answer of answers) {
      if (answer.ok) {
        if (counted.includes(answer)) this.#undo(answer.node, call, answer.value);
      } else if (fresh) {
        this.#undo(answer.node, call, undefined);
      }
    }
    if (answers.filter((a) => a.ok).length < this.quorum) throw this.#noQuorum(call.lock, 'no majority of masters answered', answers);
    const busy = answers.flatMap((a) => (a.ok && a.value.status === 'busy' ? [a.value.pttl] : []));
    if (answers.filter((a) => a.ok && a.value.status === 'not-held').length >= this.quorum) return { status: 'not-held' };
    // Held by another: sleep until its lease ends (the majority's longest), or a wake-up.
    if (busy.length >= this.quorum) return { status: 'busy', pttl: Math.max(...busy), holder: holderOf(answers) };
    // Masters sitting out kept the majority from forming: sleep until they count again (or a wake-up).
    const sitting = answers.flatMap((a) => (a.ok && a.epoch?.state === 'sitting' ? [a.epoch.waitMs] : []));
    if (sitting.length > 0) return { status: 'busy', pttl: Math.max(...sitting, ...busy) };
    // A split vote (or a majority come too late): back off a random moment, so contenders part.
    return { status: 'busy', pttl: randomInt(5, 50) };
  }

  /**
   * Masters whose grant came after the hold was returned (a majority had already granted): raise
   * their fence to the hold's too, so that every master shows the same fence. `counted`: how many of
   * the round's answers the decision saw.
   */
  #raiseStragglers(call: ScriptCall<AcquireReply>, rule: GrantRule, round: Answers<Answer<AcquireReply>>, counted: number, fence: number): void {
    round.forEach((a) => {
      if (!a.ok || a.value.status !== 'acquired' || a.value.fence === fence) return;
      void this.#raiseFence(call, rule, [a.node], fence);
    }, counted);
  }

  /** Writes `fence` back to granting `masters` that gave less; true when a majority has it, counting the `having` ones that gave it. */
  async #raiseFence(call: ScriptCall<AcquireReply>, rule: GrantRule, masters: readonly Master[], fence: number, having = 0): Promise<boolean> {
    if (having >= this.quorum) return true;
    const [lock] = call.keys;
    if (lock === undefined) return false;
    const raise = { script: raiseFenceScript, keys: [lock], args: [rule.owner, fence.toFixed(0)], lock: call.lock };
    const raised = await this.#askAll(raise, undefined, undefined, masters, this.nodeTimeoutMs(rule.leaseMs)).all();
    return having + raised.filter((a) => a.ok).length >= this.quorum;
  }

  /** Each hold's lease where a majority renewed it; `answers` may lack the masters that could not change that (not yet heard from). */
  #renew(lock: string | undefined, answers: readonly Answer<number[]>[], size: number): number[] {
    const replies = answers.flatMap((a) => (a.ok ? [a.value] : []));
    // Masters that failed or have not answered yet: they might have renewed.
    const failed = this.#masters.length - replies.length;
    return Array.from({ length: size }, (_, i) => {
      const renewed = replies.map((r) => r[i] ?? 0).filter((pttl) => pttl > 0).sort((a, b) => b - a);
      if (renewed.length >= this.quorum) return renewed[this.quorum - 1] ?? 0;
      // Undecided while masters are silent: fail the round (the watchdog retries; the deadline stands).
      if (renewed.length + failed >= this.quorum) throw this.#noQuorum(lock, 'no majority renewed', answers);
      return 0;
    });
  }

  #release(lock: string | undefined, answers: readonly Answer<ReleaseReply>[]): ReleaseReply {
    const released = answers.flatMap((a) => (a.ok && a.value.status === 'released' ? [a.value.remaining] : []));
    if (released.length > 0) return { status: 'released', remaining: Math.max(...released) };
    if (answers.filter((a) => a.ok).length >= this.quorum) return { status: 'not-held' };
    throw this.#noQuorum(lock, 'no majority answered the release', answers);
  }

  #any(lock: string | undefined, answers: readonly Answer<boolean>[]): boolean {
    if (answers.every((a) => !a.ok)) throw this.#noQuorum(lock, 'no master answered', answers);
    return answers.some((a) => a.ok && a.value);
  }

  #inspect(lock: string | undefined, answers: readonly Answer<InspectReply>[]): InspectReply {
    const replies = answers.flatMap((a) => (a.ok ? [a.value] : []));
    if (replies.length < this.quorum) throw this.#noQuorum(lock, 'no majority answered', answers);
    const held = replies.filter((r) => r.fence > 0);
    const fence = agreed(held.map((r) => r.fence));
    const majority = held.find((r) => r.fence === fence);
    return held.length >= this.quorum && majority !== undefined ? majority : { fence: 0, pttl: -2, holders: new Map(), clients: '' };
  }

  /** Reaped where any master freed it (each decides by its own copy of the liveness keys); else alive if any said so. */
  #reap(lock: string | undefined, answers: readonly Answer<ReapReply>[]): ReapReply {
    const replies = answers.flatMap((a) => (a.ok ? [a.value] : []));
    if (replies.length === 0) throw this.#noQuorum(lock, 'no master answered', answers);
    return replies.includes('reaped') ? 'reaped' : replies.includes('alive') ? 'alive' : 'changed';
  }

  /** Done once a majority of masters did it. */
  #majority(lock: string | undefined, answers: readonly Answer<true>[]): true {
    if (answers.filter((a) => a.ok).length < this.quorum) throw this.#noQuorum(lock, 'no majority of masters answered', answers);
    return true;
  }

  #noQuorum(lock: string | undefined, why: string, answers: readonly Answer<unknown>[]): QuorumError {
    const nodes: NodeOutcome[] = answers.map((a) =>
      a.ok ? { node: a.node.address, outcome: outcomeOf(a.value) } : { node: a.node.address, outcome: 'error', error: a.error },
    );
    return new QuorumError(lock ?? '', `${why} (${this.quorum} of ${answers.length} needed): ${nodes.map((n) => `${n.node} ${n.outcome}`).join(', ')}`, nodes);
  }
}

/** The holder a majority of the answers name, if any (to check its liveness). */
function holderOf(answers: readonly Answer<AcquireReply>[]): HolderReply | undefined {
  const named = answers.flatMap((a) => (a.ok && a.value.status === 'busy' && a.value.holder !== undefined ? [a.value.holder] : []));
  const counts = new Map<string, number>();
  for (const h of named) counts.set(`${h.owner}|${h.clients}`, (counts.get(`${h.owner}|${h.clients}`) ?? 0) + 1);
  let best: HolderReply | undefined;
  let bestCount = 0;
  for (const h of named) {
    const n = counts.get(`${h.owner}|${h.clients}`) ?? 0;
    if (n > bestCount) [best, bestCount] = [h, n];
  }
  return best;
}

function outcomeOf(reply: unknown): 'acquired' | 'held' {
  return typeof reply === 'object' && reply !== null && 'status' in reply && reply.status === 'acquired' ? 'acquired' : 'held';
}

/** A master's grant that counts: made in an epoch that is ready, or new on a first use and since `confirmed` ready. */
function counts(a: Answer<AcquireReply>, confirmed?: ReadonlySet<Master>): boolean {
  if (!a.ok || a.value.status !== 'acquired') return false;
  return (a.epoch?.state ?? 'ready') === 'ready' || confirmed?.has(a.node) === true;
}

/**
 * A first use of the set: a majority answered and every master that did was on a bare new epoch (its
 * marker had run out, or it never had one: no hold it granted lives). A live hold whose every master
 * that ran its last round lost its data or stays silent looks the same: see docs/protocol.md.
 */
function firstUse(answers: readonly Answer<unknown>[], quorum: number): boolean {
  return answers.filter((a) => a.ok).length >= quorum && mayBeFirstUse(answers);
}

/** Whether the answers so far leave a first use possible: every master that answered is on a bare new epoch. */
function mayBeFirstUse(answers: readonly Answer<unknown>[]): boolean {
  return answers.every((a) => !a.ok || (a.epoch?.state === 'unresolved' && a.epoch.bare));
}

/** The lease a call asks for, if its rule carries one: an attempt's or a re-entry's, a renewal's shortest. */
function leaseOf(rule: QuorumRule): number | undefined {
  return rule.name === 'grant' || rule.name === 'renew' ? rule.leaseMs : undefined;
}

/**
 * Whether a call is followed by the epoch check: a fresh attempt (whose grant must not count on a
 * master that may have lost grants) and a renewal (which keeps the marker alive while a lock is held).
 */
function checks(rule: QuorumRule): boolean {
  return (rule.name === 'grant' && rule.fresh) || rule.name === 'renew';
}

/** The value most of `values` share (the greatest of those tied): what a majority of masters says. */
function agreed(values: readonly number[]): number {
  const counts = new Map<number, number>();
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
  let best = 0;
  let bestCount = 0;
  for (const [value, count] of counts) {
    if (count > bestCount || (count === bestCount && value > best)) {
      best = value;
      bestCount = count;
    }
  }
  return best;
}
