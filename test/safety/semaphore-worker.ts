/**
 * A semaphore checker worker: an OS process whose `slots` loops each take `permits` permits
 * `sections` times and report every section to the parent over IPC, with the last instant the
 * client still claimed its permits (`validUntil`). Configured by SEMAPHORE_WORKER (JSON of
 * {@link SemaphoreWorkerConfig}).
 */
import { Redis } from 'ioredis';
import { LockLostError, Padlock, type Lease } from '../../src/index.js';
import { sendToParent } from './worker-ipc.js';

/** Reports to the parent (typed: only this worker's messages). */
const send: (message: SemaphoreWorkerMessage) => Promise<void> = sendToParent;

export interface SemaphoreWorkerConfig {
  readonly worker: number;
  readonly host: string;
  readonly port: number;
  readonly name: string;
  /** The semaphore's limit. */
  readonly limit: number;
  /** Permits each section takes. */
  readonly permits: number;
  /** Sections per slot, at most: a 'stop' from the parent ends the loops sooner. */
  readonly sections: number;
  readonly slots: number;
  readonly leaseMs: number;
  /** Work inside a section (async sleep), in ms. */
  readonly workMs: number;
  /** At this section of slot 0: tell the parent ('holding') and wait for its 'continue' (it may pause or kill this process meanwhile). */
  readonly lingerAt?: number;
}

/** One section, as the worker saw it (times: `process.hrtime.bigint()` ns as decimal text, shared by every process on the machine). */
export interface PermitSection {
  readonly worker: number;
  readonly owner: string;
  readonly fence: number;
  readonly permits: number;
  readonly acquiredAt: string;
  /** The last instant at which the client still said it held its permits; `null` if it never did. */
  readonly validUntil: string | null;
  /** Why the lease's signal fired during the section, if it did. */
  readonly lost: string | null;
}

export type SemaphoreWorkerMessage =
  | { readonly type: 'acquired' | 'holding' | 'section'; readonly section: PermitSection }
  | { readonly type: 'done' };

async function main(): Promise<void> {
  const raw = process.env['SEMAPHORE_WORKER'];
  if (raw === undefined) throw new Error('SEMAPHORE_WORKER is not set');
  const config = JSON.parse(raw) as SemaphoreWorkerConfig;
  let onContinue: (() => void) | undefined;
  let stopping = false;
  process.on('message', (message: { type?: string }) => {
    if (message.type === 'continue') onContinue?.();
    if (message.type === 'stop') stopping = true;
  });
  const redis = new Redis({ host: config.host, port: config.port });
  redis.on('error', () => undefined);
  const padlock = new Padlock({ redis, leaseMs: config.leaseMs });
  padlock.on('error', () => undefined);
  const semaphore = padlock.semaphore(config.name, config.limit);

  const section = async (slot: number, seq: number): Promise<void> => {
    const lease: Lease = await semaphore.acquire({ permits: config.permits });
    let validUntil: bigint | null = null;
    const confirm = (): void => {
      const t = process.hrtime.bigint();
      if (lease.isHeld) validUntil = t;
    };
    const acquiredAt = process.hrtime.bigint();
    confirm();
    const record = (): PermitSection => {
      const reason: unknown = lease.signal.reason;
      return {
        worker: config.worker, owner: lease.owner, fence: lease.fence, permits: config.permits, acquiredAt: String(acquiredAt),
        validUntil: validUntil === null ? null : String(validUntil),
        lost: !lease.signal.aborted ? null : reason instanceof LockLostError ? reason.reason : String(reason),
      };
    };
    await send({ type: 'acquired', section: record() });
    if (slot === 0 && seq === config.lingerAt) {
      const resumed = new Promise<void>((resolve) => (onContinue = resolve));
      await send({ type: 'holding', section: record() });
      await resumed;
    } else {
      await new Promise((resolve) => setTimeout(resolve, config.workMs));
    }
    confirm();
    await lease.release().catch(() => undefined);
    await send({ type: 'section', section: record() });
  };

  await Promise.all(
    Array.from({ length: config.slots }, async (_, slot) => {
      for (let seq = 0; seq < config.sections && !stopping; seq++) await section(slot, seq);
    }),
  );
  await padlock.close();
  redis.disconnect();
  await send({ type: 'done' });
  if (process.connected) process.disconnect();
}

main().catch((error: unknown) => {
  console.error('semaphore worker failed:', error);
  process.exitCode = 1;
  if (process.connected) process.disconnect();
});
