/**
 * The queue of one lock on etcd, read from the keys under its prefix: who holds, and what each
 * waiter watches. Pure functions over one range read, so that one read tells everything.
 *
 * Every participant (holder or waiter) is a key `<lock prefix><role>.<owner>.<permits>.<lease hex>`,
 * attached to its client's lease: its role (`lock` for the mutex and the writer, `read`, `permit`),
 * its owner token, the permits it takes (1 but for the semaphore) and the lease it lives by (one
 * client's keys are told apart from another's, and an operator sees whose lease holds). The key's
 * create revision orders the queue, across the whole cluster; its value is its hold count.
 *
 * Who holds:
 * - `lock` (mutex, fair mutex, writer): the first key.
 * - `read`: no `lock` key before it but its own owner's or the one it passes (a downgrade: the
 *   writer's own read holds at once; see `passes`).
 * - `permit`: the permits of every key up to and including it fit in the semaphore's limit (FIFO:
 *   a large request is not overtaken by small ones).
 *
 * What a waiter watches (one watch each, so a release wakes one waiter, never a herd):
 * - `lock`: its predecessor.
 * - `read`: the nearest `lock` key before it that it may not pass.
 * - `permit`: the first waiter watches every holder (any release may let it in); each later waiter
 *   watches its predecessor, which writes its key when it becomes a holder (a cascade, not a herd).
 */
import type { Entry } from './etcd-client.js';

/** A participant's role in the queue. */
export type Role = 'lock' | 'read' | 'permit';

/** One key of a lock's queue. */
export interface Participant {
  /** The key's last segment (no prefix). */
  readonly name: string;
  readonly role: Role;
  readonly owner: string;
  readonly permits: number;
  /** Creation order under the lock's prefix; the holder's fence. */
  readonly createRevision: number;
  /** The key's last write, for compare-and-set. */
  readonly modRevision: number;
  /** Its hold count (its value's leading number: `<count>[ <tag>]`). */
  readonly count: number;
  /** A read taken inside a write hold (a downgrade under a new owner): the writer's owner, whose `lock` key it passes. */
  readonly passes: string | undefined;
  /** A semaphore participant: the limit its semaphore was made with (by this participant's code). */
  readonly limit: number | undefined;
}

/** Where a participant stands. */
export interface Turn {
  /** Whether it holds the lock now. */
  readonly holds: boolean;
  /** The keys (last segments) whose change may let it in (empty when it holds). */
  readonly watch: readonly string[];
  /** A semaphore's first waiter: a raise of the stored limit may let it in too. */
  readonly first?: boolean;
}

const NAME = /^(lock|read|permit)\.([A-Za-z0-9_-]{16,128})(?:~([A-Za-z0-9_-]{16,128}))?\.(\d+)(?:of(\d+))?\.([0-9a-f]+)$/;

/**
 * The last segment of a participant's key: `<role>.<owner>[~<passes>].<permits>[of<limit>].<lease hex>`
 * (`limit`: a semaphore's creation value, so that an operator's read can tell its holders apart
 * from its waiters while no limit is stored).
 */
export function participantName(role: Role, owner: string, permits: number, leaseId: string, passes?: string, limit?: number): string {
  return `${role}.${owner}${passes === undefined ? '' : `~${passes}`}.${permits}${limit === undefined ? '' : `of${limit}`}.${BigInt(leaseId).toString(16)}`;
}

/** Reads one key of the queue; `undefined` for a key that is not a participant's. */
export function parseParticipant(entry: Entry): Participant | undefined {
  const match = NAME.exec(entry.name);
  if (match === null) return undefined;
  return {
    name: entry.name,
    role: match[1] as Role,
    owner: match[2] ?? '',
    passes: match[3],
    permits: Number(match[4]),
    limit: match[5] === undefined ? undefined : Number(match[5]),
    createRevision: entry.createRevision,
    modRevision: entry.modRevision,
    count: Number.parseInt(entry.value, 10) || 1,
  };
}

/** The participants among `entries`, in queue order (create revision). */
export function queueOf(entries: readonly Entry[]): Participant[] {
  const queue: Participant[] = [];
  for (const entry of entries) {
    const participant = parseParticipant(entry);
    if (participant !== undefined) queue.push(participant);
  }
  // Keys created in one transaction share a revision, but one transaction makes one key per lock.
  return queue.sort((a, b) => a.createRevision - b.createRevision);
}

/** Whether `p`, before the reader `reader` in the queue, keeps it waiting: another owner's writer. */
function blocksRead(p: Participant, reader: Participant): boolean {
  return p.role === 'lock' && p.owner !== reader.owner && p.owner !== reader.passes;
}

/** Whether the participant at `index` holds, for a semaphore of `limit` permits (ignored for other roles). */
export function holdsAt(queue: readonly Participant[], index: number, limit: number): boolean {
  const me = queue[index];
  if (me === undefined) return false;
  if (me.role === 'lock') return index === 0;
  if (me.role === 'read') return !queue.slice(0, index).some((p) => blocksRead(p, me));
  let used = 0;
  for (let i = 0; i <= index; i++) used += queue[i]?.permits ?? 0;
  return used <= limit;
}

/** Where the participant named `name` stands; `undefined` when it is not in the queue (gone). */
export function turnOf(queue: readonly Participant[], name: string, limit: number): Turn | undefined {
  const index = queue.findIndex((p) => p.name === name);
  if (index < 0) return undefined;
  if (holdsAt(queue, index, limit)) return { holds: true, watch: [] };
  const me = queue[index] as Participant;
  if (me.role === 'lock') return { holds: false, watch: [(queue[index - 1] as Participant).name] };
  if (me.role === 'read') {
    const writers = queue.slice(0, index).filter((p) => blocksRead(p, me));
    return { holds: false, watch: [(writers[writers.length - 1] as Participant).name] };
  }
  // The first waiter: every key before it holds, and any of them leaving may let it in.
  if (holdsAt(queue, index - 1, limit)) return { holds: false, watch: queue.slice(0, index).map((p) => p.name), first: true };
  return { holds: false, watch: [(queue[index - 1] as Participant).name] };
}

/** The holders of the queue, in order. */
export function holdersOf(queue: readonly Participant[], limit: number): Participant[] {
  return queue.filter((_, index) => holdsAt(queue, index, limit));
}
