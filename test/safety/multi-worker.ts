/**
 * A checker worker for the multi-lock: an OS process whose critical sections each hold a set of
 * names — a multi-lock over several (in the order its config gives them), or a plain mutex over
 * one — and do a fenced read-modify-write on every held name's own store, with that name's fence.
 * It reports one section record per name held, so the checker judges each name on its own: whoever
 * holds a name (a multi-lock or a mutex) must never overlap another holder of it. Configured like
 * worker.ts (SAFETY_WORKER), with the fields of {@link MultiWorkerConfig} added.
 */
import { Redis } from 'ioredis';
import { LockLostError, Padlock, type Lease } from '../../src/index.js';
import type { MultiLease } from '../../src/locks/multi-lease.js';
import { FencedStore } from './fenced-store.js';
import { Random } from './random.js';
import { toWire, type ParentMessage, type SectionRecord, type WorkerMessage } from './records.js';
import { RESOURCE_SLOTS, type MultiWorkerConfig } from './multi-records.js';
import { sendToParent, errorName } from './worker-ipc.js';

/** Reports to the parent (typed: only this worker's messages). */
const send: (message: WorkerMessage) => Promise<void> = sendToParent;

function now(): bigint {
  return process.hrtime.bigint();
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** What one name of a section did. */
interface NameState {
  readonly name: string;
  readonly resource: number;
  readonly fence: number;
  read: SectionRecord['read'];
  write: SectionRecord['write'];
  value: number;
}

async function main(): Promise<void> {
  const raw = process.env['SAFETY_WORKER'];
  if (raw === undefined) throw new Error('SAFETY_WORKER is not set');
  const config = JSON.parse(raw) as MultiWorkerConfig;
  const random = new Random(config.seed);
  let stopping = false;
  let onContinue: (() => void) | undefined;
  let onGo: (() => void) | undefined;
  const go = new Promise<void>((resolve) => (onGo = resolve));
  process.on('message', (message: ParentMessage) => {
    if (message.type === 'stop') stopping = true;
    if (message.type === 'continue') onContinue?.();
    if (message.type === 'go' || message.type === 'stop') onGo?.();
  });

  const lockRedis = new Redis({ ...config.lockServer, connectionName: `safety-multi-w${config.worker}` });
  const storeRedis = new Redis({ ...config.storeServer, connectionName: `safety-multi-w${config.worker}-store` });
  lockRedis.on('error', () => undefined);
  storeRedis.on('error', () => undefined);
  const padlock = new Padlock({ redis: lockRedis, leaseMs: config.leaseMs });
  padlock.on('error', () => undefined);
  const stores = config.resources.map((resource) => new FencedStore(storeRedis, `${config.name}:${resource}`));

  const section = async (slot: number, seq: number): Promise<boolean> => {
    const set = random.pick(config.sets);
    const waitStartedAt = now();
    let lease: Lease;
    try {
      lease = set.length === 1 ? await padlock.mutex(set[0] ?? '').acquire({ waitMs: config.waitMs }) : await padlock.multi([...set]).acquire({ waitMs: config.waitMs });
    } catch (error) {
      await send({ type: 'acquire-failed', failure: { worker: config.worker, error: errorName(error), message: String(error), tookMs: Number(now() - waitStartedAt) / 1e6 } });
      await sleep(20);
      return false;
    }
    const acquiredAt = now();
    const fences = set.length === 1 ? new Map([[lease.name, lease.fence]]) : (lease as MultiLease).fences;
    const names: NameState[] = [...fences].map(([name, fence]) => ({ name, resource: config.resources.indexOf(name), fence, read: 'none', write: 'none', value: 0 }));
    let validUntil: bigint | null = null;
    const confirm = (): void => {
      const t = now();
      if (lease.isHeld) validUntil = t;
    };
    confirm();
    let releasedAt: bigint | null = null;
    let releaseError: string | null = null;
    const lost = (): string | null => {
      if (!lease.signal.aborted) return null;
      const reason: unknown = lease.signal.reason;
      return reason instanceof LockLostError ? reason.reason : String(reason);
    };
    const records = (): SectionRecord[] =>
      names.map((state) => ({
        worker: config.worker, slot: slot * RESOURCE_SLOTS + state.resource, seq, owner: lease.owner, fence: state.fence,
        waitStartedAt, acquiredAt, validUntil, releasedAt, read: state.read, write: state.write, lost: lost(), releaseError,
      }));
    for (const record of records()) await send({ type: 'acquired', record: toWire(record) });

    for (const state of names) {
      try {
        const reply = await stores[state.resource]!.read(state.fence, lease.owner);
        state.read = reply.accepted ? 'ok' : 'refused';
        state.value = reply.value;
      } catch {
        state.read = 'error';
      }
    }
    confirm();
    if (config.linger !== undefined && config.linger.seq === seq && slot === 0) {
      // Holding every name, having read: the parent injects its fault now, then says 'continue'.
      const resumed = new Promise<void>((resolve) => (onContinue = resolve));
      for (const record of records()) await send({ type: 'holding', record: toWire(record) });
      await resumed;
      onContinue = undefined;
    } else {
      await sleep(random.int(config.workMs[0], config.workMs[1]));
    }
    confirm();
    // The writes go out whatever the client now believes: a paused process does not know it was paused.
    for (const state of names) {
      if (state.read !== 'ok') {
        state.write = 'skipped';
        continue;
      }
      try {
        state.write = (await stores[state.resource]!.write(state.fence, lease.owner, state.value)).accepted ? 'ok' : 'refused';
      } catch {
        state.write = 'error';
      }
    }
    confirm();
    try {
      await lease.release();
    } catch (error) {
      releaseError = errorName(error);
    }
    releasedAt = now();
    for (const record of records()) await send({ type: 'section', record: toWire(record) });
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
  await padlock.close();
  await Promise.allSettled([lockRedis.quit(), storeRedis.quit()]);
  await send({ type: 'done', worker: config.worker });
  process.removeAllListeners('message');
  if (process.connected) process.disconnect();
}

main().catch((error: unknown) => {
  console.error('multi safety worker failed:', error);
  process.exitCode = 1;
  if (process.connected) process.disconnect();
});
