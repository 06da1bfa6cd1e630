/**
 * The mutual-exclusion checker: reads the sections every worker recorded and the fenced store's
 * log, and reports what went wrong. It judges only what it can prove from the records:
 *
 * - two holds overlap when one was acquired before the other's last confirmed-valid instant (both
 *   intervals lie inside the true server-side holds, so an overlap here is a real one);
 * - a lost update is an accepted write whose holder had read a value that was no longer current;
 * - a stale write accepted is one the store took although a higher fence had been seen;
 * - fences must be unique, and a valid hold acquired after another's validity ended must have a higher one;
 * - liveness: every section that was asked for was served.
 */
import type { StoreEntry } from './fenced-store.js';
import { ms, type AcquireFailure, type SectionRecord } from './records.js';

/** Two holds that were valid at once. */
export interface Overlap {
  readonly first: SectionRecord;
  readonly second: SectionRecord;
  /** How long both were valid, in ms. */
  readonly overlapMs: number;
}

export interface SafetyReport {
  /** Critical sections acquired (complete or cut short by a crash). */
  readonly sections: number;
  readonly overlaps: readonly Overlap[];
  readonly lostUpdates: number;
  readonly staleWritesAccepted: number;
  readonly staleReadsAccepted: number;
  /** Stale operations the store refused (the fence doing its job). */
  readonly staleRefused: number;
  readonly fenceViolations: readonly string[];
  /** Sections whose lease was declared lost while they ran. */
  readonly lostHolds: number;
  /** The first few of them, each as worker, section, reason, time held and release's error. */
  readonly lostExamples: readonly string[];
  /** Sections asked for but never served. */
  readonly unserved: number;
  /** Longest wait for the lock, in ms. */
  readonly maxWaitMs: number;
  /** Rejected acquire calls, by error name. */
  readonly acquireFailures: Readonly<Record<string, number>>;
  /** The counter in the store and the accepted writes that should have produced it. */
  readonly finalValue: number;
  readonly acceptedWrites: number;
}

export interface CheckInput {
  readonly sections: readonly SectionRecord[];
  readonly store: readonly StoreEntry[];
  readonly finalValue: number;
  /** Sections the run asked for (K × slots × M), or `sections.length` when it stopped early on purpose. */
  readonly expectedSections: number;
  readonly failures?: readonly AcquireFailure[];
}

export function check(input: CheckInput): SafetyReport {
  const { sections, store } = input;
  const writes = store.filter((e) => e.op === 'write' && e.accepted);
  const failures: Record<string, number> = {};
  for (const f of input.failures ?? []) failures[f.error] = (failures[f.error] ?? 0) + 1;
  return {
    sections: sections.length,
    overlaps: findOverlaps(sections),
    lostUpdates: writes.filter((e) => e.expected !== e.current).length,
    staleWritesAccepted: writes.filter((e) => e.stale).length,
    staleReadsAccepted: store.filter((e) => e.op === 'read' && e.accepted && e.stale).length,
    staleRefused: store.filter((e) => !e.accepted).length,
    fenceViolations: findFenceViolations(sections),
    lostHolds: sections.filter((s) => s.lost !== null).length,
    lostExamples: sections.filter((s) => s.lost !== null).slice(0, 3).map(describeLoss),
    unserved: Math.max(0, input.expectedSections - sections.length),
    maxWaitMs: sections.reduce((max, s) => Math.max(max, ms(s.acquiredAt - s.waitStartedAt)), 0),
    acquireFailures: failures,
    finalValue: input.finalValue,
    acceptedWrites: writes.length,
  };
}

/** Mutual exclusion held and the store stayed consistent. */
export function isSafe(report: SafetyReport): boolean {
  return (
    report.overlaps.length === 0 &&
    report.lostUpdates === 0 &&
    report.staleWritesAccepted === 0 &&
    report.staleReadsAccepted === 0 &&
    report.fenceViolations.length === 0 &&
    report.finalValue === report.acceptedWrites
  );
}

/** Every section asked for was served. */
export function isLive(report: SafetyReport): boolean {
  return report.unserved === 0;
}

/** One line per finding, for assertion messages and the soak's output. */
export function describeReport(report: SafetyReport): string {
  const first = report.overlaps[0];
  return [
    `sections ${report.sections} (lost ${report.lostHolds}, unserved ${report.unserved}, max wait ${report.maxWaitMs.toFixed(0)} ms)` +
      (report.lostExamples.length === 0 ? '' : `; lost: ${report.lostExamples.join('; ')}`),
    `overlapping valid holds ${report.overlaps.length}` +
      (first === undefined ? '' : ` (e.g. fence ${first.first.fence} and ${first.second.fence} for ${first.overlapMs.toFixed(1)} ms)`),
    `lost updates ${report.lostUpdates}, stale writes accepted ${report.staleWritesAccepted}, stale reads accepted ${report.staleReadsAccepted}, stale refused ${report.staleRefused}`,
    `fence violations ${report.fenceViolations.length}${report.fenceViolations.length > 0 ? `: ${report.fenceViolations.slice(0, 3).join('; ')}` : ''}`,
    `counter ${report.finalValue} for ${report.acceptedWrites} accepted writes`,
    `acquire failures ${JSON.stringify(report.acquireFailures)}`,
  ].join('\n');
}

/** Which section lost its lease, why, and how long it had held (to the release, or to the last sign of it). */
function describeLoss(s: SectionRecord): string {
  const end = s.releasedAt ?? s.validUntil ?? s.acquiredAt;
  const release = s.releaseError === null ? '' : `, release ${s.releaseError}`;
  return `worker ${s.worker} section ${s.seq} ${s.lost ?? ''} after ${ms(end - s.acquiredAt).toFixed(0)} ms held, valid for ${s.validUntil === null ? 'none' : `${ms(s.validUntil - s.acquiredAt).toFixed(0)} ms`}${release}`;
}

interface Valid {
  readonly record: SectionRecord;
  readonly from: bigint;
  readonly until: bigint;
}

function validIntervals(sections: readonly SectionRecord[]): Valid[] {
  const out: Valid[] = [];
  for (const record of sections) {
    if (record.validUntil !== null && record.validUntil >= record.acquiredAt) {
      out.push({ record, from: record.acquiredAt, until: record.validUntil });
    }
  }
  return out.sort((a, b) => (a.from < b.from ? -1 : a.from > b.from ? 1 : 0));
}

function findOverlaps(sections: readonly SectionRecord[]): Overlap[] {
  const overlaps: Overlap[] = [];
  let active: Valid[] = [];
  for (const current of validIntervals(sections)) {
    active = active.filter((a) => a.until > current.from);
    for (const a of active) {
      if (a.record.owner === current.record.owner) continue;
      const end = a.until < current.until ? a.until : current.until;
      overlaps.push({ first: a.record, second: current.record, overlapMs: ms(end - current.from) });
    }
    active.push(current);
  }
  return overlaps;
}

function findFenceViolations(sections: readonly SectionRecord[]): string[] {
  const violations: string[] = [];
  const owners = new Map<number, string>();
  for (const s of sections) {
    const other = owners.get(s.fence);
    if (other !== undefined && other !== s.owner) violations.push(`fence ${s.fence} given to two owners`);
    owners.set(s.fence, s.owner);
  }
  // A hold valid when its acquire returned, and acquired after another's validity ended, was granted
  // after that one, so its fence is higher. (A hold that was never valid may have been granted long
  // before its acquire returned: its process was paused in between.)
  const byStart = sections.filter((s) => s.validUntil !== null).sort((a, b) => (a.acquiredAt < b.acquiredAt ? -1 : a.acquiredAt > b.acquiredAt ? 1 : 0));
  const ended = validIntervals(sections).sort((a, b) => (a.until < b.until ? -1 : a.until > b.until ? 1 : 0));
  let next = 0;
  let highest: SectionRecord | undefined;
  for (const s of byStart) {
    for (; next < ended.length && ended[next]!.until < s.acquiredAt; next++) {
      const r = ended[next]!.record;
      if (highest === undefined || r.fence > highest.fence) highest = r;
    }
    if (highest !== undefined && s.fence <= highest.fence && s.owner !== highest.owner) {
      violations.push(`fence ${s.fence} acquired after fence ${highest.fence} had ended`);
    }
  }
  return violations;
}
