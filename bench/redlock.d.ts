/**
 * Types for `redlock@5.0.0-beta.2`, whose package ships `dist/index.d.ts` but whose `exports` map
 * gives no `types` condition, so NodeNext resolution cannot find it. Only what the bench uses,
 * copied from that file.
 */
declare module 'redlock' {
  import { EventEmitter } from 'node:events';
  import type { Cluster, Redis } from 'ioredis';

  export interface Settings {
    readonly driftFactor: number;
    readonly retryCount: number;
    readonly retryDelay: number;
    readonly retryJitter: number;
    readonly automaticExtensionThreshold: number;
  }

  export class ExecutionError extends Error {}

  export class Lock {
    readonly value: string;
    release(): Promise<unknown>;
  }

  export default class Redlock extends EventEmitter {
    constructor(clients: Iterable<Redis | Cluster>, settings?: Partial<Settings>);
    acquire(resources: string[], duration: number, settings?: Partial<Settings>): Promise<Lock>;
    using<T>(resources: string[], duration: number, settings: Partial<Settings>, routine?: (signal: AbortSignal & { error?: Error }) => Promise<T>): Promise<T>;
  }
}
