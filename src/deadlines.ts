/**
 * One timer for many deadlines. padlock bounds every call to Redis by its reply time-out and every
 * finite wait by its `waitMs`; with a Node timer each, every acquire+release armed and cleared two
 * or three of them, nearly all cancelled (the reply came). Deadlines here share one timer, armed
 * at the earliest: cancelling one is a Set delete, and the timer, when it fires with nothing due
 * (its deadline was cancelled), re-arms at the next one or stops. A deadline still fires no sooner
 * than its `ms` on the monotonic clock.
 */
import { monotonicNow } from './clock.js';

/**
 * The pending deadlines, a list linked through the deadlines themselves: adding and cancelling one
 * allocates nothing and never rehashes (a Set that a deadline enters and leaves per call did both:
 * about a microsecond per call, twice per acquire+release).
 */
let head: Deadline | undefined;
let pendingCount = 0;
let timer: NodeJS.Timeout | undefined;
/** When the armed timer fires (monotonic ms); Infinity when none is armed. */
let timerAt = Infinity;
/** Pending deadlines that keep the process alive (the timer is unref'd while there are none). */
let keepingAlive = 0;

/** A call to `fire` after `ms`, unless cancelled first. */
export class Deadline {
  /** Monotonic time at which it fires. */
  readonly at: number;
  readonly #fire: () => void;
  readonly #keepAlive: boolean;
  /** Its neighbours in the pending list, while pending. */
  #prev: Deadline | undefined = undefined;
  #next: Deadline | undefined = undefined;
  #pending = true;

  /**
   * @param keepAlive whether it keeps the process alive until it fires or is cancelled (as a
   *   ref'd timer does); a bound on a call need not, a caller's `waitMs` does
   */
  constructor(ms: number, fire: () => void, keepAlive = false) {
    this.at = monotonicNow() + Math.max(0, ms);
    this.#fire = fire;
    this.#keepAlive = keepAlive;
    Deadline.#push(this);
    arm(this.at);
    if (keepAlive && keepingAlive++ === 0) timer?.ref();
  }

  /** Puts `deadline` at the head of the pending list. */
  static #push(deadline: Deadline): void {
    deadline.#next = head;
    if (head !== undefined) head.#prev = deadline;
    head = deadline;
    pendingCount++;
  }

  /** Stops it from firing; later calls do nothing. */
  cancel(): void {
    if (!this.#pending) return;
    this.#pending = false;
    const prev = this.#prev;
    const next = this.#next;
    if (prev === undefined) head = next;
    else prev.#next = next;
    if (next !== undefined) next.#prev = prev;
    this.#prev = this.#next = undefined;
    pendingCount--;
    if (this.#keepAlive && --keepingAlive === 0) timer?.unref();
  }

  /** @internal Fires it (once it has been taken out of the pending list). */
  fire(): void {
    this.#fire();
  }

  /** @internal The next pending deadline after this one. */
  get next(): Deadline | undefined {
    return this.#next;
  }
}

/** Pending deadlines (for tests). */
export function pendingDeadlines(): number {
  return pendingCount;
}

function arm(at: number): void {
  if (at >= timerAt) return;
  if (timer !== undefined) clearTimeout(timer);
  timerAt = at;
  // Whole milliseconds, rounded up: a timer never fires before its deadline by a fraction, and
  // timers of one duration share Node's list of that duration.
  timer = setTimeout(sweep, Math.ceil(at - monotonicNow()));
  if (keepingAlive === 0) timer.unref();
}

function sweep(): void {
  timer = undefined;
  timerAt = Infinity;
  const now = monotonicNow();
  const due: Deadline[] = [];
  let next = Infinity;
  for (let deadline = head; deadline !== undefined; deadline = deadline.next) {
    if (deadline.at <= now) due.push(deadline);
    else if (deadline.at < next) next = deadline.at;
  }
  // Oldest first, as they were made (the list runs newest first).
  due.reverse();
  for (const deadline of due) deadline.cancel();
  if (next !== Infinity) arm(next);
  for (const deadline of due) deadline.fire();
}
