/**
 * Semaphore limits that disagree are loud: the limit in force is visible (`limit()`, and what
 * `available()` counts from), and a client whose code makes a semaphore with another limit than
 * the one stored, or than other clients', gets a `PADLOCK_SEMAPHORE_LIMIT` process warning, once
 * per semaphore. Between Padlocks of one process, and between OS processes (the second process's
 * warning read from its stderr, as Node prints it).
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { RedisServer } from '../src/devserver/redis-server.js';
import { SEMAPHORE_LIMIT_WARNING } from '../src/stores/redis/kinds/semaphore-limits.js';
import type { Padlock } from '../src/index.js';
import { delay, eventually, padlockOn, startServer } from './harness/redis.js';

let server: RedisServer;
const padlocks: Padlock[] = [];
const warnings: Error[] = [];
const onWarning = (warning: Error): void => void warnings.push(warning);
before(async () => {
  server = await startServer();
  process.on('warning', onWarning);
});
after(async () => {
  process.off('warning', onWarning);
  for (const p of padlocks) await p.close();
});

function padlock(): Padlock {
  const p = padlockOn(server, { prefix: 'semlimits' });
  padlocks.push(p);
  return p;
}

/** The limit warnings about the semaphore `name` so far. */
function warnedAbout(name: string): Error[] {
  return warnings.filter((w) => (w as Error & { code?: string }).code === SEMAPHORE_LIMIT_WARNING && w.message.includes(`semaphore "${name}"`));
}

describe('semaphore limits', () => {
  it('warns once when two Padlocks make one semaphore with different limits, and limit() says which applies', async () => {
    const a = padlock().semaphore('mixed', 2);
    const b = padlock().semaphore('mixed', 10);
    const leaseA = await a.acquire();
    assert.equal(await a.limit(), 2);
    assert.deepEqual(warnedAbout('mixed'), [], 'nothing to disagree with yet');
    const leaseB = await b.acquire();
    assert.ok(await eventually(() => warnedAbout('mixed').length === 1), 'the second Padlock is warned');
    const [warning] = warnedAbout('mixed');
    assert.equal(warning?.name, 'PadlockWarning');
    assert.match(warning?.message ?? '', /clients disagree on its limit: this code makes it with 10, others with 2 .*up to 10 permits may be held at once/);
    assert.equal(await b.limit(), 10);
    assert.equal(await b.available(), 8, 'each counts from its own limit: the disagreement the warning is about');
    // Once per semaphore per process, whatever more is done with it.
    await (await padlock().semaphore('mixed', 10).acquire()).release();
    await b.available();
    await delay(200);
    assert.equal(warnedAbout('mixed').length, 1);
    await leaseA.release();
    await leaseB.release();
  });

  it('warns when a stored limit overrides the code, but not the Padlock that stored it', async () => {
    const uploads = padlock().semaphore('uploads', 8);
    await uploads.setPermits(16);
    assert.equal(await uploads.limit(), 16);
    assert.equal(await uploads.available(), 16);
    await delay(200);
    assert.deepEqual(warnedAbout('uploads'), [], 'the Padlock that called setPermits asked for it');

    const later = padlock().semaphore('uploads', 5);
    assert.equal(await later.limit(), 16, 'the stored limit is the one in force');
    assert.ok(await eventually(() => warnedAbout('uploads').length === 1));
    assert.match(warnedAbout('uploads')[0]?.message ?? '', /its limit stored by setPermits\(\) is 16, but this code makes it with 5; the stored limit applies/);
  });

  it('says nothing when the limits agree', async () => {
    const leases = await Promise.all([padlock().semaphore('agreed', 4).acquire(), padlock().semaphore('agreed', 4).acquire()]);
    assert.equal(await padlock().semaphore('agreed', 4).available(), 2);
    await delay(200);
    assert.deepEqual(warnedAbout('agreed'), []);
    for (const lease of leases) await lease.release();
  });

  it('warns across OS processes: a process that makes it with another limit prints the warning', async () => {
    const held = await padlock().semaphore('across', 2).acquire();
    const index = fileURLToPath(new URL('../src/index.js', import.meta.url));
    const ioredis = import.meta.resolve('ioredis');
    const code = `
      const { Padlock } = await import(${JSON.stringify(index)});
      const { Redis } = await import(${JSON.stringify(ioredis)});
      const redis = new Redis(${JSON.stringify(server.url)});
      const padlock = new Padlock({ redis, prefix: 'semlimits' });
      const warned = new Promise((resolve) => process.once('warning', resolve));
      const lease = await padlock.semaphore('across', 10).acquire();
      await warned;
      await lease.release();
      await padlock.close();
      await redis.quit();
    `;
    // Killed if it hangs (no warning came): the assertions below then say so.
    const child = spawn(process.execPath, ['--input-type=module', '-e', code], { stdio: ['ignore', 'pipe', 'pipe'], timeout: 30_000 });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const exit = await new Promise<number | null>((resolve) => child.on('close', resolve));
    assert.equal(exit, 0, stderr);
    assert.match(stderr, /\[PADLOCK_SEMAPHORE_LIMIT\] PadlockWarning: semaphore "across": clients disagree on its limit: this code makes it with 10, others with 2/);
    await held.release();
  });
});
