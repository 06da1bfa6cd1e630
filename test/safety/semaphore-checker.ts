/**
 * The semaphore's checker: from the sections every worker recorded, the most permits that holders
 * held at once while their clients still claimed them. Each section counts over
 * [acquiredAt, validUntil], an interval inside its true hold on the server, so a total above the
 * limit is a real over-admission. Fences must also be unique.
 */
import type { PermitSection } from './semaphore-worker.js';

export interface PermitReport {
  readonly sections: number;
  /** The most permits held at once by sections valid at that instant. */
  readonly maxHeld: number;
  /** Fences handed to two owners. */
  readonly duplicateFences: number;
  /** Sections whose lease was declared lost while they ran. */
  readonly lost: number;
}

export function checkPermits(sections: readonly PermitSection[]): PermitReport {
  // +permits at the start of each valid interval, −permits just after its end; ends sort before
  // starts at the same instant only when they are strictly earlier (an interval is closed).
  const events: { at: bigint; delta: number }[] = [];
  for (const s of sections) {
    if (s.validUntil === null) continue;
    const from = BigInt(s.acquiredAt);
    const until = BigInt(s.validUntil);
    if (until < from) continue;
    events.push({ at: from, delta: s.permits }, { at: until + 1n, delta: -s.permits });
  }
  events.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : a.delta - b.delta));
  let held = 0;
  let maxHeld = 0;
  for (const e of events) {
    held += e.delta;
    maxHeld = Math.max(maxHeld, held);
  }
  const owners = new Map<number, string>();
  let duplicateFences = 0;
  for (const s of sections) {
    const other = owners.get(s.fence);
    if (other !== undefined && other !== s.owner) duplicateFences++;
    owners.set(s.fence, s.owner);
  }
  return { sections: sections.length, maxHeld, duplicateFences, lost: sections.filter((s) => s.lost !== null).length };
}
