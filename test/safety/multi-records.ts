/**
 * What a multi-lock checker worker (multi-worker.ts) is told and how its records tell names apart;
 * shared with the parent side (multi-scenario.ts), which must not import the worker itself.
 */
import type { WorkerConfig } from './worker.js';

/** A section's slot in its records: `slot * RESOURCE_SLOTS + the name's index in resources`. */
export const RESOURCE_SLOTS = 100;

export interface MultiWorkerConfig extends WorkerConfig {
  /** Every name any worker locks; a name's index here tells its records apart. Each has the store `<name>:<resource>`. */
  readonly resources: readonly string[];
  /** The sets this worker picks from for each section: one name is a mutex, several a multi-lock. */
  readonly sets: readonly (readonly string[])[];
}
