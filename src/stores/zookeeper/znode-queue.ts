/**
 * The queue of one lock on ZooKeeper, read from its znode's children: who holds, and what each
 * waiter watches. Pure functions over child names, so that one `getChildren` tells everything.
 *
 * Every participant (holder or waiter) is an ephemeral sequential child named
 * `<role>.<owner>.<permits>[of<limit>]-<sequence>`: its role (`lock` for the mutex and the writer, `read`,
 * `down` for a read taken by a writer that holds (a downgrade), `permit`), its owner token, the
 * permits it takes (1 but for the semaphore; for `down`, the sequence of the writer that took it) and
 * the sequence number ZooKeeper appended. The sequence orders them by creation, across the ensemble.
 *
 * Who holds:
 * - `lock` (mutex, fair mutex, writer): the first child, while no `down` child of another writer is
 *   left (a downgraded read outlives its writer and excludes the writers after it).
 * - `read`: no `lock` child before it.
 * - `down`: always (it is created only while its writer holds, and reads beside it).
 * - `permit`: the permits of every child up to and including it fit in the semaphore's limit (FIFO:
 *   a large request is not overtaken by small ones).
 *
 * What a waiter watches (one watch each, so a release wakes one waiter, never a herd):
 * - `lock`: its predecessor; the first child, the first `down` child of another writer.
 * - `read`: the nearest `lock` child before it.
 * - `permit`: the first waiter watches every holder (any release may let it in); each later waiter
 *   watches its predecessor, whose data changes when it becomes a holder (a cascade, not a herd).
 */

/** A participant's role in the queue. */
export type Role = 'lock' | 'read' | 'down' | 'permit';

/** One child of a lock's znode. */
export interface Participant {
  /** The child's name (no path). */
  readonly name: string;
  readonly role: Role;
  readonly owner: string;
  readonly permits: number;
  /**
   * A semaphore participant's limit as its code passed it (used while none is stored), written into
   * its name so that an operator's read (zookeeper-catalog.ts) can tell holders from waiters.
   */
  readonly limit?: number | undefined;
  /** Creation order under the lock's znode. */
  readonly sequence: number;
}

/** Where a participant stands. */
export interface Turn {
  /** Whether it holds the lock now. */
  readonly holds: boolean;
  /** The children whose change may let it in (empty when it holds). */
  readonly watch: readonly string[];
}

const NAME = /^(lock|read|down|permit)\.([A-Za-z0-9_-]{16,128})\.(\d+)(?:of(\d+))?-(\d{10})$/;

/** The name stem a participant is created with (ZooKeeper appends `-<sequence>`): `<role>.<owner>.<permits>[of<limit>]`. */
export function stemOf(role: Role, owner: string, permits: number, limit?: number): string {
  return `${role}.${owner}.${permits}${limit === undefined ? '' : `of${limit}`}`;
}

/** Reads a child's name; `undefined` for a name that is not a participant's. */
export function parseParticipant(name: string): Participant | undefined {
  const match = NAME.exec(name);
  if (match === null) return undefined;
  return { name, role: match[1] as Role, owner: match[2] ?? '', permits: Number(match[3]), limit: match[4] === undefined ? undefined : Number(match[4]), sequence: Number(match[5]) };
}

/** The participants among `names`, in queue order. */
export function queueOf(names: readonly string[]): Participant[] {
  const queue: Participant[] = [];
  for (const name of names) {
    const participant = parseParticipant(name);
    if (participant !== undefined) queue.push(participant);
  }
  return queue.sort((a, b) => a.sequence - b.sequence);
}

/** Whether the participant at `index` holds, for a semaphore of `limit` permits (ignored for other roles). */
export function holdsAt(queue: readonly Participant[], index: number, limit: number): boolean {
  const me = queue[index];
  if (me === undefined) return false;
  if (me.role === 'down') return true;
  if (me.role === 'lock') return index === 0 && foreignDown(queue, me) === undefined;
  if (me.role === 'read') return !queue.slice(0, index).some((p) => p.role === 'lock');
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
  if (me.role === 'lock') return { holds: false, watch: [index === 0 ? (foreignDown(queue, me) as Participant).name : (queue[index - 1] as Participant).name] };
  if (me.role === 'read') {
    const writers = queue.slice(0, index).filter((p) => p.role === 'lock');
    return { holds: false, watch: [(writers[writers.length - 1] as Participant).name] };
  }
  const previous = queue[index - 1] as Participant;
  // The first waiter: every child before it holds, and any of them leaving may let it in.
  if (holdsAt(queue, index - 1, limit)) return { holds: false, watch: queue.slice(0, index).map((p) => p.name) };
  return { holds: false, watch: [previous.name] };
}

/** The holders of the queue, in order. */
export function holdersOf(queue: readonly Participant[], limit: number): Participant[] {
  return queue.filter((_, index) => holdsAt(queue, index, limit));
}

/** The first downgraded read of a writer other than `writer`: it excludes `writer` until it ends. */
function foreignDown(queue: readonly Participant[], writer: Participant): Participant | undefined {
  return queue.find((p) => p.role === 'down' && p.permits !== writer.sequence);
}
