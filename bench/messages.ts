/** The messages between the bench and its worker processes (child_process IPC). */
import type { ContenderSpec, Servers } from './contenders.js';
import type { ClientUsage } from './workload.js';
import type { RunPlan, WorkerOutcome, Workload } from './workload.js';

export type ToWorker =
  /** Open the contender and warm up; `workers` are the ids of the workers this process runs. */
  | { readonly type: 'open'; readonly spec: ContenderSpec; readonly servers: Servers; readonly workers: readonly number[]; readonly workload: Workload }
  | { readonly type: 'go'; readonly plan: RunPlan }
  /** After the parent's last measurement: close the connections and exit. */
  | { readonly type: 'close' };

export type FromWorker =
  | { readonly type: 'ready' }
  /** One outcome per worker of the process, and what the process's clients cost. */
  | { readonly type: 'result'; readonly outcomes: readonly WorkerOutcome[]; readonly usage: ClientUsage }
  | { readonly type: 'error'; readonly message: string };
