/** The messages between the bench and its worker processes (child_process IPC). */
import type { ContenderSpec, Servers } from './contenders.js';
import type { ClientUsage } from './workload.js';
import type { RunPlan, WorkerOutcome } from './workload.js';

export type ToWorker =
  | { readonly type: 'open'; readonly spec: ContenderSpec; readonly servers: Servers; readonly worker: number; readonly key: string; readonly counterKey: string }
  | { readonly type: 'go'; readonly plan: RunPlan }
  /** After the parent's last measurement: close the connections and exit. */
  | { readonly type: 'close' };

export type FromWorker =
  | { readonly type: 'ready' }
  | { readonly type: 'result'; readonly outcome: WorkerOutcome; readonly usage: ClientUsage }
  | { readonly type: 'error'; readonly message: string };
