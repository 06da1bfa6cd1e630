/**
 * The read/write checker: from the valid intervals the workers recorded, whether a writer ever
 * overlapped anyone (a reader or another writer), whether readers did share the lock, and whether
 * the fences ordered the holds as the protocol says (docs/protocol.md, "Read/write lock").
 */
import type { ReadWriteSection } from './read-write-records.js';

interface Valid {
  readonly section: ReadWriteSection;
  readonly from: bigint;
  readonly until: bigint;
}

export interface ReadWriteReport {
  readonly sections: number;
  readonly writes: number;
  /** Pairs of holds of different owners, at least one a write, valid at once. */
  readonly writerOverlaps: readonly string[];
  /** Pairs of read holds valid at once (the lock was shared). */
  readonly readerOverlaps: number;
  readonly fenceViolations: readonly string[];
  /** Sections whose lease was declared lost. */
  readonly lost: number;
}

function valid(sections: readonly ReadWriteSection[]): Valid[] {
  return sections
    .filter((s) => s.validUntil !== null && s.validUntil >= s.acquiredAt)
    .map((s) => ({ section: s, from: s.acquiredAt, until: s.validUntil! }))
    .sort((a, b) => (a.from < b.from ? -1 : a.from > b.from ? 1 : 0));
}

export function checkReadWrite(sections: readonly ReadWriteSection[]): ReadWriteReport {
  const intervals = valid(sections);
  const writerOverlaps: string[] = [];
  let readerOverlaps = 0;
  let active: Valid[] = [];
  for (const current of intervals) {
    active = active.filter((a) => a.until > current.from);
    for (const a of active) {
      if (a.section.owner === current.section.owner) continue;
      if (a.section.side === 'read' && current.section.side === 'read') readerOverlaps++;
      else writerOverlaps.push(`${a.section.side} (fence ${a.section.fence}) and ${current.section.side} (fence ${current.section.fence})`);
    }
    active.push(current);
  }
  // A hold acquired after another's validity ended was granted after it: a write then has a greater
  // fence; a read at least the same (it shares the last write's).
  const fenceViolations: string[] = [];
  const writeFences = new Map<number, string>();
  for (const s of sections) {
    if (s.side !== 'write') continue;
    const other = writeFences.get(s.fence);
    if (other !== undefined && other !== s.owner) fenceViolations.push(`write fence ${s.fence} given twice`);
    writeFences.set(s.fence, s.owner);
  }
  for (const later of intervals) {
    for (const earlier of intervals) {
      if (earlier.until >= later.from || earlier.section.owner === later.section.owner) continue;
      const ok = later.section.side === 'write' ? later.section.fence > earlier.section.fence : later.section.fence >= earlier.section.fence;
      if (!ok) fenceViolations.push(`${later.section.side} fence ${later.section.fence} after ${earlier.section.side} fence ${earlier.section.fence} had ended`);
    }
  }
  return {
    sections: sections.length,
    writes: sections.filter((s) => s.side === 'write').length,
    writerOverlaps,
    readerOverlaps,
    fenceViolations,
    lost: sections.filter((s) => s.lost !== null).length,
  };
}
