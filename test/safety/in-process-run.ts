/**
 * A checked run inside this process: `workers` Padlocks (one each, from `padlock()`) run `sections`
 * read-modify-write sections of one mutex on a fenced store while `during` injects a fault, and the
 * checker (checker.ts) judges the records. For stores whose faults are made by restarting or
 * freezing servers, not processes (etcd, PostgreSQL); scenario.ts runs workers as processes.
 */
import type { Redis } from 'ioredis';
import { setTimeout as delay } from 'node:timers/promises';
import { LockLostError, type Padlock } from '../../src/index.js';
import { check, type SafetyReport } from './checker.js';
import { FencedStore } from './fenced-store.js';
import type { AcquireFailure, SectionRecord } from './records.js';

export interface InProcessRun {
  /** The Redis the fenced store lives on. */
  readonly admin: Redis;
  /** The lock's name, and the fenced store's. */
  readonly name: string;
  readonly workers: number;
  readonly sections: number;
  /** Makes each worker's Padlock. */
  readonly padlock: () => Padlock;
  /** Workers stop starting sections after this (a run that cannot finish ends, and the checker says so). */
  readonly giveUpMs: number;
  /** The fault, given a promise that resolves once a worker first holds the lock. */
  readonly during: (holding: () => Promise<void>) => Promise<void>;
}

const now = (): bigint => process.hrtime.bigint();

/** Runs the workers and the fault together; the checker's report of what happened. */
export async function runInProcess(run: InProcessRun): Promise<SafetyReport> {
  const store = new FencedStore(run.admin, run.name);
  await store.reset('checked');
  const records: SectionRecord[] = [];
  const failures: AcquireFailure[] = [];
  let holding: (() => void) | undefined;
  const someoneHolds = new Promise<void>((resolve) => (holding = resolve));
  const giveUpAt = Date.now() + run.giveUpMs;
  const worker = async (index: number): Promise<void> => {
    const p = run.padlock();
    for (let seq = 0; seq < run.sections && Date.now() < giveUpAt; ) {
      const waitStartedAt = now();
      let lease;
      try {
        lease = await p.mutex(run.name).acquire({ waitMs: 10_000 });
      } catch (error) {
        failures.push({ worker: index, error: (error as Error).name, message: (error as Error).message, tookMs: Number(now() - waitStartedAt) / 1e6 });
        await delay(100);
        continue;
      }
      const acquiredAt = now();
      holding?.();
      let validUntil: bigint | null = null;
      const stamp = (): void => {
        const at = now();
        if (lease.isHeld) validUntil = at;
      };
      let read: SectionRecord['read'] = 'none';
      let write: SectionRecord['write'] = 'none';
      try {
        stamp();
        const r = await store.read(lease.fence, lease.owner);
        read = r.accepted ? 'ok' : 'refused';
        await delay(20 + Math.random() * 30);
        stamp();
        if (r.accepted) write = (await store.write(lease.fence, lease.owner, r.value)).accepted ? 'ok' : 'refused';
        else write = 'skipped';
        stamp();
      } catch {
        write = 'error';
      }
      const lost = lease.signal.reason instanceof LockLostError ? lease.signal.reason.reason : null;
      let releaseError: string | null = null;
      await lease.release().catch((error: unknown) => (releaseError = (error as Error).name));
      records.push({ worker: index, slot: 0, seq, owner: lease.owner, fence: lease.fence, waitStartedAt, acquiredAt, validUntil, releasedAt: now(), read, write, lost, releaseError });
      seq++;
    }
  };
  await Promise.all([...Array.from({ length: run.workers }, (_, i) => worker(i)), run.during(() => someoneHolds)]);
  return check({ sections: records, store: await store.log(), finalValue: await store.value(), expectedSections: run.workers * run.sections, failures });
}
