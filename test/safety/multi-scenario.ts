/**
 * A checker run of the multi-lock: workers (multi-worker.ts) lock sets of names, each name with its
 * own fenced store, and the checker judges every name on its own: the sections that held it (by a
 * multi-lock or a mutex) never overlap, and its store lost no update and took no stale write.
 */
import { fileURLToPath } from 'node:url';
import { check, type SafetyReport } from './checker.js';
import { FencedStore } from './fenced-store.js';
import { Fleet, type WorkerExit } from './fleet.js';
import { RESOURCE_SLOTS, type MultiWorkerConfig } from './multi-records.js';
import type { SectionRecord } from './records.js';
import type { Servers } from './scenario.js';

const MULTI_WORKER_PATH = fileURLToPath(new URL('./multi-worker.js', import.meta.url));

let runs = 0;

export interface MultiRunOptions {
  /** Every name locked in the run. */
  readonly resources: readonly string[];
  /** Per worker, the sets it picks from (one name: a mutex; several: a multi-lock, in the order given). */
  readonly sets: readonly (readonly (readonly string[])[])[];
  readonly sections: number;
  readonly slots?: number;
  readonly leaseMs?: number;
  readonly waitMs?: number;
  readonly workMs?: readonly [number, number];
  /**
   * Worker 0 holds at this section of its slot 0 and waits for 'continue' (a fault goes in then).
   * The others start only once it holds: on a busy machine they could otherwise finish every
   * section before it got there, and nobody would be left to take its names after the fault.
   */
  readonly lingerSeq?: number;
  readonly during?: (fleet: Fleet) => Promise<void>;
  readonly timeoutMs?: number;
}

export interface MultiRunResult {
  /** Each name's report, by name. */
  readonly reports: ReadonlyMap<string, SafetyReport>;
  readonly fleet: Fleet;
  readonly exits: readonly WorkerExit[];
}

/** The name of the resource a record is about. */
export function resourceOf(record: SectionRecord, resources: readonly string[]): string {
  return resources[record.slot % RESOURCE_SLOTS] ?? '?';
}

export async function runMultiChecked(servers: Servers, options: MultiRunOptions): Promise<MultiRunResult> {
  const name = `safety-multi-${process.pid}-${++runs}`;
  const stores = options.resources.map((resource) => new FencedStore(servers.storeClient, `${name}:${resource}`));
  await Promise.all(stores.map((store) => store.reset('checked')));
  const configs = options.sets.map((sets, worker): MultiWorkerConfig => ({
    worker,
    kind: 'mutex',
    lockServer: { host: servers.lock.host, port: servers.lock.port },
    storeServer: { host: servers.store.host, port: servers.store.port },
    name,
    sections: options.sections,
    slots: options.slots ?? 1,
    leaseMs: options.leaseMs ?? 1_000,
    waitMs: options.waitMs ?? 60_000,
    workMs: options.workMs ?? [0, 3],
    seed: 7_000 + worker,
    ...(options.lingerSeq === undefined ? {} : worker === 0 ? { linger: { seq: options.lingerSeq } } : { waitForGo: true }),
    resources: options.resources,
    sets,
  }));
  // The fleet runs this worker instead of worker.js.
  const fleet = new Fleet(configs, () => (command) => ({ command, args: [MULTI_WORKER_PATH] }));
  const during = (options.during?.(fleet) ?? Promise.resolve()).then(
    () => undefined,
    (error: unknown) => {
      void fleet.finish(0);
      return error instanceof Error ? error : new Error(String(error));
    },
  );
  const exits = await fleet.finish(options.timeoutMs ?? 60_000);
  const failed = await during;
  if (failed !== undefined) throw failed;
  const reports = new Map<string, SafetyReport>();
  for (const [i, resource] of options.resources.entries()) {
    const sections = fleet.sections.filter((record) => record.slot % RESOURCE_SLOTS === i);
    const store = stores[i]!;
    reports.set(resource, check({ sections, store: await store.log(), finalValue: await store.value(), expectedSections: sections.length, failures: fleet.failures }));
  }
  return { reports, fleet, exits };
}

/** Sections (not records) each worker completed: one per (slot, seq), whatever the names it held. */
export function completedSections(fleet: Fleet, worker: number): number {
  return new Set(fleet.completed.filter((record) => record.worker === worker).map((record) => `${Math.floor(record.slot / RESOURCE_SLOTS)}/${record.seq}`)).size;
}
