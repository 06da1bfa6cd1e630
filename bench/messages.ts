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

/** What the scale run's lease holder (`scale-process.ts`) is asked to do, in this order. */
export type ToHolder =
  /** Open the contender, warm up, then hold `count` leases `key:0…` renewed by the library. */
  | {
      readonly type: 'open';
      readonly spec: ContenderSpec;
      readonly servers: Servers;
      readonly key: string;
      readonly count: number;
      readonly leaseMs: number;
      readonly renewEveryMs: number;
    }
  /** Count what the process sends for `ms`. */
  | { readonly type: 'measure'; readonly ms: number }
  /** Collect garbage and report the heap. */
  | { readonly type: 'heap' }
  /** Start waiting (without awaiting) for `count` locks `key:0…`, held by another client; reply after `settleMs`. */
  | { readonly type: 'wait'; readonly key: string; readonly count: number; readonly settleMs: number }
  /** Release the held leases (the waiters go on waiting). */
  | { readonly type: 'release' }
  /** Everything is measured: exit at once (the parent cleans Redis up). */
  | { readonly type: 'close' };

export type FromHolder =
  /** The leases are held; the heap (after GC) before the first one, and how long they took. */
  | { readonly type: 'holding'; readonly heapBefore: number; readonly acquireMs: number }
  /** `renewals`: what the library reported (padlock's `extended` events), `null` when it reports none. */
  | { readonly type: 'measured'; readonly ms: number; readonly usage: ClientUsage; readonly renewals: number | null }
  /** Heap used after GC; leases the library no longer counts held; waits that ended (acquired, gave up or failed). */
  | { readonly type: 'heap'; readonly heapUsed: number; readonly lost: number; readonly waitsEnded: number }
  | { readonly type: 'waiting' }
  | { readonly type: 'released'; readonly ms: number }
  | { readonly type: 'error'; readonly message: string };
