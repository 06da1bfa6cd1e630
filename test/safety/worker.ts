/**
 * A checker worker: an OS process that runs critical sections through a lock client and reports
 * each one to its parent over IPC. Inside each section it does a fenced read-modify-write on the
 * store. Configured by the SAFETY_WORKER environment variable (JSON of `WorkerConfig`), so it can
 * also be started through `ip netns exec`.
 */
import { Cluster, Redis } from 'ioredis';
import type { ReplicaOptions } from '../../src/options.js';
import { FencedStore } from './fenced-store.js';
import { shiftWallClock } from './fake-clock.js';
import { createLockClient, type HeldLock, type LockKind } from './lock-clients.js';
import { Random } from './random.js';
import { toWire, type ParentMessage, type SectionRecord, type WorkerMessage } from './records.js';
import { sendToParent, errorName } from './worker-ipc.js';

/** Reports to the parent (typed: only this worker's messages). */
const send: (message: WorkerMessage) => Promise<void> = sendToParent;

export interface Endpoint {
  readonly host: string;
  readonly port: number;
}

/** Where the lock lives when it is not one server: a Cluster's nodes, or a Sentinel set. */
export type LockTopology =
  | { readonly cluster: readonly Endpoint[] }
  | { readonly sentinels: readonly Endpoint[]; readonly name: string }
  | { readonly masters: readonly Endpoint[] };

export interface WorkerConfig {
  readonly worker: number;
  readonly kind: LockKind;
  /** The lock's server (ignored when `lockTopology` is given). */
  readonly lockServer: Endpoint;
  readonly lockTopology?: LockTopology;
  readonly replicas?: ReplicaOptions;
  readonly storeServer: Endpoint;
  /** Lock name, also the store's name. */
  readonly name: string;
  /** Sections per slot (M). */
  readonly sections: number;
  /** Concurrent acquirers in this process, each its own owner. */
  readonly slots: number;
  readonly leaseMs: number;
  readonly waitMs: number;
  /** Work inside a section (async sleep), uniform in [min, max] ms. */
  readonly workMs: readonly [number, number];
  /** With this probability a section blocks the event loop (`Atomics.wait`) for `ms` between its read and write. */
  readonly stall?: { readonly probability: number; readonly ms: number };
  /**
   * At section `seq` of slot 0, after the read: send 'holding', then block the loop for `stallMs`
   * if given, else wait for the parent's 'continue'.
   */
  readonly linger?: { readonly seq: number; readonly stallMs?: number };
  /** Shift `Date` by `offsetMs`, then by `jumpMs` more after `jumpAfterMs`. */
  readonly clock?: { readonly offsetMs: number; readonly jumpMs?: number; readonly jumpAfterMs?: number };
  /** Wait for the parent's 'go' before the first section (the fleet sends it when a worker first reports holding). */
  readonly waitForGo?: boolean;
  readonly seed: number;
}

function now(): bigint {
  return process.hrtime.bigint();
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function blockLoop(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

async function main(): Promise<void> {
  const raw = process.env['SAFETY_WORKER'];
  if (raw === undefined) throw new Error('SAFETY_WORKER is not set');
  const config = JSON.parse(raw) as WorkerConfig;
  const random = new Random(config.seed);
  if (config.clock !== undefined) {
    const { offsetMs, jumpMs = 0, jumpAfterMs = Infinity } = config.clock;
    const started = performance.now();
    shiftWallClock(() => offsetMs + (performance.now() - started >= jumpAfterMs ? jumpMs : 0));
  }

  let stopping = false;
  let onContinue: (() => void) | undefined;
  let onGo: (() => void) | undefined;
  const go = new Promise<void>((resolve) => (onGo = resolve));
  process.on('message', (message: ParentMessage) => {
    if (message.type === 'stop') stopping = true;
    if (message.type === 'continue') onContinue?.();
    if (message.type === 'go' || message.type === 'stop') onGo?.();
  });

  // Named, so that a test can find this worker's connections in CLIENT LIST.
  const connectionName = `safety-w${config.worker}`;
  const where = config.lockTopology;
  const lockRedis =
    where === undefined ? new Redis({ ...config.lockServer, connectionName })
    : 'cluster' in where ? new Cluster([...where.cluster], { redisOptions: { connectionName } })
    : 'masters' in where ? where.masters.map((master) => new Redis({ ...master, connectionName }))
    : new Redis({ sentinels: [...where.sentinels], name: where.name, connectionName });
  const storeRedis = new Redis({ ...config.storeServer, connectionName: `safety-w${config.worker}-store` });
  const lockClients = Array.isArray(lockRedis) ? lockRedis : [lockRedis];
  for (const client of lockClients) client.on('error', () => undefined);
  storeRedis.on('error', () => undefined);
  const lock = createLockClient({ kind: config.kind, redis: lockRedis, name: config.name, leaseMs: config.leaseMs, replicas: config.replicas });
  const store = new FencedStore(storeRedis, config.name);

  const pause = async (seq: number, slot: number, report: () => SectionRecord): Promise<void> => {
    const linger = config.linger;
    if (linger !== undefined && linger.seq === seq && slot === 0) {
      const resumed = new Promise<void>((resolve) => (onContinue = resolve));
      await send({ type: 'holding', record: toWire(report()) });
      if (linger.stallMs !== undefined) blockLoop(linger.stallMs);
      else await resumed;
      onContinue = undefined;
    } else if (config.stall !== undefined && random.chance(config.stall.probability)) {
      blockLoop(config.stall.ms);
    } else {
      await sleep(random.int(config.workMs[0], config.workMs[1]));
    }
  };

  const section = async (slot: number, seq: number): Promise<boolean> => {
    const waitStartedAt = now();
    let held: HeldLock;
    try {
      held = await lock.acquire(config.waitMs);
    } catch (error) {
      const tookMs = Number(now() - waitStartedAt) / 1e6;
      await send({ type: 'acquire-failed', failure: { worker: config.worker, error: errorName(error), message: String(error), tookMs } });
      await sleep(20);
      return false;
    }
    const acquiredAt = now();
    let validUntil: bigint | null = null;
    const confirm = (): void => {
      const t = now();
      if (held.isHeld()) validUntil = t;
    };
    confirm();
    let read: SectionRecord['read'] = 'none';
    let write: SectionRecord['write'] = 'none';
    let releasedAt: bigint | null = null;
    let releaseError: string | null = null;
    const record = (): SectionRecord => ({
      worker: config.worker, slot, seq, owner: held.owner, fence: held.fence, waitStartedAt, acquiredAt,
      validUntil, releasedAt, read, write, lost: held.lostReason(), releaseError,
    });
    await send({ type: 'acquired', record: toWire(record()) });

    let value = 0;
    try {
      const reply = await store.read(held.fence, held.owner);
      read = reply.accepted ? 'ok' : 'refused';
      value = reply.value;
    } catch {
      read = 'error';
    }
    confirm();
    await pause(seq, slot, record);
    confirm();
    // The write goes out whatever the client now believes: a paused process does not know it was paused.
    if (read === 'ok') {
      try {
        write = (await store.write(held.fence, held.owner, value)).accepted ? 'ok' : 'refused';
      } catch {
        write = 'error';
      }
    } else {
      write = 'skipped';
    }
    confirm();
    try {
      await held.release();
    } catch (error) {
      releaseError = errorName(error);
    }
    releasedAt = now();
    await send({ type: 'section', record: toWire(record()) });
    return true;
  };

  const loop = async (slot: number): Promise<void> => {
    for (let seq = 0; seq < config.sections && !stopping; ) {
      if (await section(slot, seq)) seq++;
    }
  };

  await send({ type: 'ready', worker: config.worker });
  if (config.waitForGo === true) await go;
  await Promise.all(Array.from({ length: config.slots }, (_, slot) => loop(slot)));
  await lock.close();
  await Promise.allSettled([...lockClients.map((client) => client.quit()), storeRedis.quit()]);
  await send({ type: 'done', worker: config.worker });
  process.removeAllListeners('message');
  if (process.connected) process.disconnect();
}

main().catch((error: unknown) => {
  console.error('safety worker failed:', error);
  process.exitCode = 1;
  if (process.connected) process.disconnect();
});
