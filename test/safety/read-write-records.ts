/**
 * What a read/write safety worker reports to its parent: one record per section, with the times
 * (process.hrtime, CLOCK_MONOTONIC: one clock for every process of the machine) between which its
 * hold was known valid. Sent over IPC as strings (bigints do not survive JSON).
 */
import type { ReadWriteSide } from '../../src/stores/redis/kinds/read-write-protocol.js';

export interface ReadWriteSection {
  readonly worker: number;
  readonly slot: number;
  readonly seq: number;
  readonly side: ReadWriteSide;
  readonly owner: string;
  readonly fence: number;
  /** When acquire returned. */
  readonly acquiredAt: bigint;
  /** The last instant the client confirmed the hold valid (`lease.isHeld`); null: never. */
  readonly validUntil: bigint | null;
  /** The `LockLostError` reason, if the lease signal fired. */
  readonly lost: string | null;
}

export type WireSection = Omit<ReadWriteSection, 'acquiredAt' | 'validUntil'> & { readonly acquiredAt: string; readonly validUntil: string | null };

export type ReadWriteWorkerMessage =
  | { readonly type: 'holding'; readonly section: WireSection }
  | { readonly type: 'section'; readonly section: WireSection }
  | { readonly type: 'failed'; readonly error: string }
  | { readonly type: 'done' };

export function toWire(section: ReadWriteSection): WireSection {
  return { ...section, acquiredAt: String(section.acquiredAt), validUntil: section.validUntil === null ? null : String(section.validUntil) };
}

export function fromWire(wire: WireSection): ReadWriteSection {
  return { ...wire, acquiredAt: BigInt(wire.acquiredAt), validUntil: wire.validUntil === null ? null : BigInt(wire.validUntil) };
}
