/**
 * `releaseOnExit`, with real child processes and a real redis-server: on SIGTERM or SIGINT the
 * locks are free at once (not when their 60 s lease ends), and the process ends exactly as it
 * would have without padlock; with the application's own handler, it keeps running.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import type { RedisServer } from '../src/devserver/redis-server.js';
import { monotonicNow } from '../src/clock.js';
import { Padlock } from '../src/index.js';
import { connect, delay, eventually, padlockOn, startServer } from './harness/redis.js';

const fixture = fileURLToPath(new URL('./fixtures/shutdown-holder.js', import.meta.url));

interface Held {
  held: number;
  listeners: { SIGTERM: number; SIGINT: number };
  warnings: string[];
}

let server: RedisServer;
before(async () => {
  server = await startServer();
});

const children: ChildProcess[] = [];
after(() => {
  // A test that failed half-way must not leave a holder running (its IPC channel would keep this file alive).
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

/** Starts a holder and waits until it holds its locks. */
async function holder(lock: string, mode: 'release' | 'plain' | 'app-handler', count = 1): Promise<{ child: ChildProcess; held: Held }> {
  const child = fork(fixture, [server.url, lock, mode, String(count)], { stdio: ['ignore', 'ignore', 'pipe', 'ipc'] });
  children.push(child);
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const held = await new Promise<Held>((resolve, reject) => {
    child.once('message', (message) => resolve(message as Held));
    child.once('exit', (code, signal) => reject(new Error(`holder exited (${code ?? signal}) before holding: ${stderr}`)));
  });
  return { child, held };
}

/** How a child process ended. */
async function ended(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  if (child.exitCode !== null || child.signalCode !== null) return { code: child.exitCode, signal: child.signalCode };
  const [code, signal] = (await once(child, 'exit')) as [number | null, NodeJS.Signals | null];
  return { code, signal };
}

describe('releaseOnExit', () => {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`on ${signal}: the lock is free at once, a waiter gets it, and the process ends by ${signal} as it would have without padlock`, async () => {
      const admin = connect(server);
      const waiter = padlockOn(server);
      // Without releaseOnExit: the process dies of the signal, and its lock stays taken for its lease.
      const plain = await holder(`exit:plain:${signal}`, 'plain');
      assert.deepEqual(plain.held.listeners, { SIGTERM: 0, SIGINT: 0 });
      plain.child.kill(signal);
      const without = await ended(plain.child);
      assert.deepEqual(without, { code: null, signal });
      assert.equal(await waiter.mutex(`exit:plain:${signal}`).isLocked(), true);
      assert.ok((await admin.pttl(`padlock:{exit:plain:${signal}}:lock`)) > 50_000, 'its 60 s lease runs on');

      const released = await holder(`exit:release:${signal}`, 'release');
      assert.deepEqual(released.held.listeners, { SIGTERM: 1, SIGINT: 1 });
      const waiting = waiter.mutex(`exit:release:${signal}`).acquire({ waitMs: 30_000 });
      await delay(50); // the waiter is queued
      const start = monotonicNow();
      released.child.kill(signal);
      const lease = await waiting;
      const waited = monotonicNow() - start;
      assert.ok(waited < 5_000, `the waiter had the lock ${waited.toFixed(0)} ms after the signal (the lease was 60 s)`);
      assert.deepEqual(await ended(released.child), without, 'the process ended as it would have without padlock');
      await lease.release();
    });
  }

  it("with the application's own handler, releases the lock and leaves the process running", async () => {
    const waiter = padlockOn(server);
    const { child, held } = await holder('exit:app', 'app-handler');
    assert.deepEqual(held.listeners, { SIGTERM: 2, SIGINT: 2 }, "the application's and padlock's");
    const handled = once(child, 'message');
    child.kill('SIGTERM');
    assert.deepEqual((await handled)[0], { appHandled: 'SIGTERM' });
    assert.ok(await eventually(async () => !(await waiter.mutex('exit:app').isLocked()), 5_000), 'the lock was released');
    await delay(300);
    assert.equal(child.exitCode, null);
    assert.equal(child.signalCode, null, 'still running');
    const pong = once(child, 'message');
    child.send('ping');
    assert.deepEqual((await pong)[0], { pong: true, listeners: 1 }, "it answers, and only the application's listener is left");
    child.kill('SIGKILL');
    await ended(child);
  });

  it('twenty Padlocks in one process: one listener per signal, no MaxListeners warning, one re-raise, every lock free', async () => {
    const waiter = padlockOn(server);
    const { child, held } = await holder('exit:many', 'release', 20);
    assert.equal(held.held, 20);
    assert.deepEqual(held.listeners, { SIGTERM: 1, SIGINT: 1 });
    assert.deepEqual(held.warnings, []);
    child.kill('SIGTERM');
    assert.deepEqual(await ended(child), { code: null, signal: 'SIGTERM' });
    for (let i = 0; i < 20; i++) assert.equal(await waiter.mutex(`exit:many:${i}`).isLocked(), false, `exit:many:${i} is free`);
  });

  it('close() removes the listeners: the last Padlock closed leaves none', async () => {
    const before = { SIGTERM: process.listenerCount('SIGTERM'), SIGINT: process.listenerCount('SIGINT') };
    const redis = connect(server);
    const padlocks = Array.from({ length: 30 }, () => new Padlock({ redis, releaseOnExit: true }));
    assert.deepEqual({ SIGTERM: process.listenerCount('SIGTERM'), SIGINT: process.listenerCount('SIGINT') }, { SIGTERM: before.SIGTERM + 1, SIGINT: before.SIGINT + 1 });
    const off = new Padlock({ redis });
    assert.equal(process.listenerCount('SIGTERM'), before.SIGTERM + 1, 'a Padlock without the option adds none');
    await Promise.all(padlocks.slice(1).map((p) => p.close()));
    assert.equal(process.listenerCount('SIGTERM'), before.SIGTERM + 1, 'one Padlock still asks for it');
    await padlocks[0]!.close();
    await padlocks[0]!.close(); // twice is fine
    await off.close();
    assert.deepEqual({ SIGTERM: process.listenerCount('SIGTERM'), SIGINT: process.listenerCount('SIGINT') }, before);
  });

  it('refuses a releaseOnExit that is not a boolean', () => {
    assert.throws(() => new Padlock({ redis: connect(server), releaseOnExit: 'yes' as unknown as boolean }), { code: 'INVALID_OPTION', option: 'releaseOnExit' });
  });
});
