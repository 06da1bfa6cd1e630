/** The messages between the bench and its worker processes (child_process IPC). */
import type { CommandCounts } from './command-meter.js';
import type { ContenderSpec } from './contenders.js';
import type { RunPlan, WorkerOutcome } from './workload.js';

export type ToWorker =
  | { readonly type: 'open'; readonly spec: ContenderSpec; readonly url: string; readonly worker: number; readonly key: string; readonly counterKey: string }
  | { readonly type: 'go'; readonly plan: RunPlan }
  /** After the parent's last measurement: close the connections and exit. */
  | { readonly type: 'close' };

export type FromWorker =
  | { readonly type: 'ready' }
  | { readonly type: 'result'; readonly outcome: WorkerOutcome; readonly sent: CommandCounts }
  | { readonly type: 'error'; readonly message: string };
