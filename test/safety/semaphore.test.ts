/**
 * The safety checker's semaphore property, across OS processes: the permits held at once by
 * holders that still claim them never exceed the limit, with a holder paused (SIGSTOP) past its
 * lease and with a holder killed (SIGKILL) while others contend for its permits.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Redis } from 'ioredis';
import type { RedisServer } from '../../src/devserver/redis-server.js';
import { semaphoreKeys, semaphoreScriptKeys } from '../../src/stores/redis/kinds/semaphore-protocol.js';
import { connect, eventually, startServer } from '../harness/redis.js';
import { isStopped } from './fleet.js';
import { checkPermits } from './semaphore-checker.js';
import type { PermitSection, SemaphoreWorkerConfig, SemaphoreWorkerMessage } from './semaphore-worker.js';

const WORKER = fileURLToPath(new URL('./semaphore-worker.js', import.meta.url));
const LEASE_MS = 300;
const LIMIT = 3;

let server: RedisServer;
let admin: Redis;
before(async () => {
  server = await startServer();
  admin = connect(server);
});

const children: ChildProcess[] = [];
after(() => {
  for (const child of children) {
    child.kill('SIGCONT');
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
});

/** Workers of one run: what they reported (open sections of a dead worker included). */
class SemaphoreFleet {
  readonly children: ChildProcess[] = [];
  readonly exited: Promise<unknown>[] = [];
  readonly #open = new Map<string, PermitSection>();
  readonly #done: PermitSection[] = [];
  readonly #listeners: ((type: string, section: PermitSection) => void)[] = [];

  constructor(configs: readonly SemaphoreWorkerConfig[]) {
    for (const config of configs) {
      const child = spawn(process.execPath, [WORKER], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], env: { ...process.env, SEMAPHORE_WORKER: JSON.stringify(config) } });
      children.push(child);
      this.children.push(child);
      this.exited.push(new Promise((resolve) => child.once('exit', resolve)));
      child.on('message', (message: SemaphoreWorkerMessage) => {
        if (message.type === 'done') return;
        const key = `${message.section.worker}/${message.section.owner}`;
        if (message.type === 'section') {
          this.#open.delete(key);
          this.#done.push(message.section);
        } else this.#open.set(key, message.section);
        for (const listener of this.#listeners) listener(message.type, message.section);
      });
    }
  }

  get sections(): PermitSection[] {
    return [...this.#done, ...this.#open.values()];
  }

  /** Asks every worker to finish the section it is in and exit. */
  stop(): void {
    // A worker may exit between the check and the write (EPIPE): with a callback Node reports that
    // to it instead of an 'error' event nobody listens to, and a worker gone needs no stop.
    for (const child of this.children) if (child.connected) child.send({ type: 'stop' }, () => undefined);
  }

  get completed(): readonly PermitSection[] {
    return this.#done;
  }

  next(type: 'acquired' | 'holding', filter: (s: PermitSection) => boolean = () => true): Promise<PermitSection> {
    return new Promise((resolve) => {
      const listener = (t: string, s: PermitSection): void => {
        if (t !== type || !filter(s)) return;
        this.#listeners.splice(this.#listeners.indexOf(listener), 1);
        resolve(s);
      };
      this.#listeners.push(listener);
    });
  }
}

/** Worker 0 takes 2 permits and lingers in its first section; workers 1–3 take 1 permit at a time in 2 loops each (demand 6 of 3) until stopped. */
function configs(name: string): SemaphoreWorkerConfig[] {
  const base = { host: server.host, port: server.port, name, limit: LIMIT, leaseMs: LEASE_MS, workMs: 3 };
  return [
    { ...base, worker: 0, permits: 2, sections: 2, slots: 1, lingerAt: 0 },
    ...[1, 2, 3].map((worker) => ({ ...base, worker, permits: 1, sections: 10_000, slots: 2 })),
  ];
}

/** Resolves once the lease of `owner` has run out on the server's clock (or was pruned). */
async function leaseOver(name: string, owner: string): Promise<void> {
  const leases = semaphoreScriptKeys(semaphoreKeys('padlock', name))[2]!;
  const over = async (): Promise<boolean> => {
    const [score, [seconds, micros]] = await Promise.all([admin.zscore(leases, owner), admin.time()]);
    return score === null || Number(score) <= Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  };
  assert.ok(await eventually(over, 10_000), 'the lease ran out on the server');
}

describe('safety: semaphore permits never exceed the limit', () => {
  it('the checker counts permits over valid intervals (4 held of 3 is found)', () => {
    const at = (ms: number): string => String(BigInt(ms) * 1_000_000n);
    const section = (owner: string, fence: number, permits: number, from: number, until: number): PermitSection => ({ worker: 0, owner, fence, permits, acquiredAt: at(from), validUntil: at(until), lost: null });
    assert.equal(checkPermits([section('a', 1, 2, 0, 10), section('b', 2, 1, 5, 20), section('c', 3, 1, 11, 30)]).maxHeld, 3);
    assert.equal(checkPermits([section('a', 1, 2, 0, 10), section('b', 2, 1, 5, 20), section('c', 3, 1, 9, 30)]).maxHeld, 4);
  });

  it('a holder paused (SIGSTOP) past its lease: its permits go to others, it is told it lost them, and no instant has more than the limit', { timeout: 60_000 }, async () => {
    const name = `safety:sem:paused:${process.hrtime.bigint()}`;
    const fleet = new SemaphoreFleet(configs(name));
    const held = await fleet.next('holding');
    const paused = fleet.children[0]!;
    paused.kill('SIGSTOP');
    assert.ok(await eventually(() => isStopped(paused.pid!), 2_000), 'the holder is stopped');
    await leaseOver(name, held.owner);
    // Others take the paused holder's permits: 3 sections at once need them.
    const expiredAt = process.hrtime.bigint();
    await fleet.next('acquired', (s) => s.worker !== 0 && BigInt(s.acquiredAt) > expiredAt);
    // And go on contending for a while (20 more sections) after the paused one comes back.
    let after = 0;
    const contended = new Promise<void>((resolve) => void fleet.next('acquired', (s) => s.worker !== 0 && ++after >= 20).then(() => resolve()));
    paused.kill('SIGCONT');
    paused.send({ type: 'continue' });
    await contended;
    fleet.stop();
    await Promise.all(fleet.exited);
    const report = checkPermits(fleet.sections);
    assert.ok(report.maxHeld <= LIMIT, `${report.maxHeld} permits held at once (limit ${LIMIT})`);
    assert.equal(report.duplicateFences, 0);
    const stale = fleet.completed.find((s) => s.owner === held.owner);
    assert.ok(stale !== undefined && stale.lost !== null, 'the paused holder\'s lease signal fired');
    assert.equal(fleet.completed.length, fleet.sections.length, 'every section that began also ended: nobody was left waiting');
    assert.equal(fleet.completed.filter((s) => s.worker === 0).length, 2);
  });

  it('a holder killed (SIGKILL) in its section: its permits return after its lease, the others are all served, no instant has more than the limit', { timeout: 60_000 }, async () => {
    const name = `safety:sem:killed:${process.hrtime.bigint()}`;
    const fleet = new SemaphoreFleet(configs(name));
    const held = await fleet.next('holding');
    const killed = fleet.children[0]!;
    killed.kill('SIGKILL');
    await leaseOver(name, held.owner);
    const killedAt = process.hrtime.bigint();
    let after = 0;
    await fleet.next('acquired', (s) => BigInt(s.acquiredAt) > killedAt && ++after >= 20);
    fleet.stop();
    await Promise.all(fleet.exited);
    const report = checkPermits(fleet.sections);
    assert.ok(report.maxHeld <= LIMIT, `${report.maxHeld} permits held at once (limit ${LIMIT})`);
    assert.equal(report.duplicateFences, 0);
    assert.equal(fleet.completed.filter((s) => s.worker !== 0).length, fleet.sections.filter((s) => s.worker !== 0).length, 'the survivors were all served');
  });
});
