/**
 * A read/write safety worker: an OS process whose slots (each its own owner) take the read lock or
 * the write lock at random and report each section's valid interval to the parent. Configured by
 * the RW_WORKER environment variable (JSON of `ReadWriteWorkerConfig`).
 */
import { Redis } from 'ioredis';
import { Padlock, type Lease } from '../../src/index.js';
import type { ReadWriteSide } from '../../src/stores/redis/kinds/read-write-protocol.js';
import { Random } from './random.js';
import { toWire, type ReadWriteSection, type ReadWriteWorkerMessage } from './read-write-records.js';
import { sendToParent } from './worker-ipc.js';

/** Reports to the parent (typed: only this worker's messages). */
const send: (message: ReadWriteWorkerMessage) => Promise<void> = sendToParent;

export interface ReadWriteWorkerConfig {
  readonly worker: number;
  readonly url: string;
  readonly name: string;
  /** Sections per slot. */
  readonly sections: number;
  /** Concurrent acquirers in this process. */
  readonly slots: number;
  readonly leaseMs: number;
  /** Share of sections that read, 0..1. */
  readonly readShare: number;
  /** Work inside a section, uniform in [min, max] ms. */
  readonly workMs: readonly [number, number];
  /** Slot 0's first section takes this side, reports 'holding', and waits for the parent's 'continue'. */
  readonly linger?: ReadWriteSide;
  /** Starts its sections only when the parent says 'go' (once the lingering holder holds). */
  readonly waitForGo?: boolean;
  readonly seed: number;
}

const now = (): bigint => process.hrtime.bigint();
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function main(): Promise<void> {
  const raw = process.env['RW_WORKER'];
  if (raw === undefined) throw new Error('RW_WORKER is not set');
  const config = JSON.parse(raw) as ReadWriteWorkerConfig;
  const random = new Random(config.seed);
  let onContinue: (() => void) | undefined;
  let onGo: (() => void) | undefined;
  const go = new Promise<void>((resolve) => (onGo = resolve));
  process.on('message', (message: { type?: string }) => {
    if (message.type === 'continue') onContinue?.();
    if (message.type === 'go') onGo?.();
  });
  const redis = new Redis(config.url);
  redis.on('error', () => undefined);
  const padlock = new Padlock({ redis, leaseMs: config.leaseMs });
  padlock.on('error', () => undefined); // renewal trouble is expected under faults: the checker judges
  const lock = padlock.readWrite(config.name);

  const section = async (slot: number, seq: number): Promise<void> => {
    const lingers = config.linger !== undefined && slot === 0 && seq === 0;
    const side: ReadWriteSide = lingers ? config.linger : random.chance(config.readShare) ? 'read' : 'write';
    let lease: Lease;
    try {
      lease = await lock[side].acquire({ waitMs: 60_000 });
    } catch (error) {
      await send({ type: 'failed', error: String(error) });
      return;
    }
    const acquiredAt = now();
    let validUntil: bigint | null = null;
    const confirm = (): void => {
      const t = now();
      if (lease.isHeld) validUntil = t;
    };
    const record = (): ReadWriteSection => ({
      worker: config.worker, slot, seq, side, owner: lease.owner, fence: lease.fence, acquiredAt, validUntil,
      lost: lease.signal.aborted ? String((lease.signal.reason as { reason?: string }).reason) : null,
    });
    confirm();
    if (lingers) {
      const resumed = new Promise<void>((resolve) => (onContinue = resolve));
      await send({ type: 'holding', section: toWire(record()) });
      await resumed;
    } else {
      await sleep(random.int(config.workMs[0], config.workMs[1]));
    }
    confirm();
    await lease.release().catch(() => undefined);
    await send({ type: 'section', section: toWire(record()) });
  };

  if (config.waitForGo === true) await go;
  await Promise.all(
    Array.from({ length: config.slots }, async (_, slot) => {
      for (let seq = 0; seq < config.sections; seq++) await section(slot, seq);
    }),
  );
  await padlock.close();
  await redis.quit();
  await send({ type: 'done' });
  process.removeAllListeners('message');
  if (process.connected) process.disconnect();
}

main().catch((error: unknown) => {
  console.error('read/write worker failed:', error);
  process.exitCode = 1;
  if (process.connected) process.disconnect();
});
