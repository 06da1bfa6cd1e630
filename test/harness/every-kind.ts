/**
 * One lock of each kind, named alike, as an application would take it to guard one resource: the
 * shutdown tests run the same scenario on every kind.
 */
import type { Lease, Padlock } from '../../src/index.js';

/** The lock kinds, as their factories name them. */
export const EVERY_KIND = ['mutex', 'fairMutex', 'readWrite', 'semaphore', 'multi'] as const;
export type EveryKind = (typeof EVERY_KIND)[number];

/** The exclusive lock of kind `kind` over `name`: a read/write lock's write side, a one-permit semaphore, a multi-lock over `name` and a second name. */
export function exclusiveLock(padlock: Padlock, kind: EveryKind, name: string): { withLock<T>(fn: (lease: Lease) => Promise<T>, options?: { waitMs?: number }): Promise<T> } {
  switch (kind) {
    case 'mutex':
      return padlock.mutex(name);
    case 'fairMutex':
      return padlock.fairMutex(name);
    case 'readWrite':
      return padlock.readWrite(name).write;
    case 'semaphore':
      return padlock.semaphore(name, 1);
    case 'multi':
      return padlock.multi([name, `${name}:ledger`]);
  }
}

/** Whether `value` names a kind. */
export function isKind(value: unknown): value is EveryKind {
  return (EVERY_KIND as readonly unknown[]).includes(value);
}
