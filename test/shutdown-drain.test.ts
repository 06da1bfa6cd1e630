/**
 * Shutdown never hands a lock to another process while the code that holds it runs unwarned. An
 * application server debits an account under a lock (test/fixtures/account-app.ts) and is shut
 * down while that request runs — by `close()`, by SIGTERM with `releaseOnExit`, and by SIGTERM
 * with the application's own handler too (every way for the mutex; the app's handler for the other
 * kinds: the drain is the runtime's) — while another server (this process) debits the same
 * account under the same lock at once. On every kind: the request in flight finishes first (the
 * drain), and no update is lost; past the drain, its signal aborts with `PadlockClosedError` before
 * the lock is released and its `withLock` rejects with it.
 */
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import type { RedisServer } from '../src/devserver/redis-server.js';
import { Padlock, PadlockClosedError, PadlockOptionError, type Lease } from '../src/index.js';
import { forkFixture } from './harness/children.js';
import { EVERY_KIND, exclusiveLock, type EveryKind } from './harness/every-kind.js';
import { connect, delay, eventually, padlockOn, startServer } from './harness/redis.js';

type AppMode = 'close' | 'exit' | 'app-handler';
interface AppReport {
  started?: true;
  told?: string;
  toldAt?: number;
  finished?: string;
  closed?: true;
  appHandled?: string;
}

let server: RedisServer;
before(async () => {
  server = await startServer();
});

/** An application process and every report it has sent so far. */
class App {
  readonly reports: AppReport[] = [];
  readonly child: ChildProcess;
  stderr = '';

  constructor(kind: EveryKind, account: string, mode: AppMode, workMs: number, drainMs: number) {
    this.child = forkFixture('account-app', [server.url, kind, account, mode, String(workMs), String(drainMs)]);
    this.child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (this.stderr += chunk));
    this.child.on('message', (message) => this.reports.push(message as AppReport));
  }

  /** The first report that has `field`, once it came. */
  async report<K extends keyof AppReport>(field: K, ms = 30_000): Promise<AppReport> {
    const found = (): AppReport | undefined => this.reports.find((report) => report[field] !== undefined);
    assert.ok(await eventually(() => found() !== undefined || this.child.exitCode !== null || this.child.signalCode !== null, ms), `no '${field}' report in ${ms} ms`);
    const report = found();
    assert.ok(report !== undefined, `the app ended without a '${field}' report (${this.child.exitCode ?? this.child.signalCode}): ${this.stderr}`);
    return report;
  }

  /** How the process ended. */
  async ended(): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    if (this.child.exitCode === null && this.child.signalCode === null) await once(this.child, 'exit');
    return { code: this.child.exitCode, signal: this.child.signalCode };
  }
}

/** Shuts the app down as `mode` says. */
function shutDown(app: App, mode: AppMode): void {
  if (mode === 'close') app.child.send('close');
  else app.child.kill('SIGTERM');
}

/** Another server's request: debits `account` under the same lock, and says when it held the lock. */
async function otherDebit(kind: EveryKind, account: string): Promise<number> {
  const admin = connect(server);
  return exclusiveLock(padlockOn(server), kind, account).withLock(
    async () => {
      const heldAt = Date.now();
      await admin.set(account, Number(await admin.get(account)) - 1);
      return heldAt;
    },
    { waitMs: 60_000 },
  );
}

/**
 * The drain is the runtime's, the same for every kind: the mutex goes through every way to shut
 * down; each other kind through the app's own handler (the one that needs both the drain and the
 * release at exit) and past drainMs, which is what sees its own release path.
 */
const MODES_OF = (kind: EveryKind): readonly AppMode[] => (kind === 'mutex' ? ['close', 'exit', 'app-handler'] : ['app-handler']);

describe('shutdown while a request holds a lock', () => {
  for (const kind of EVERY_KIND) {
    describe(kind, () => {
      for (const mode of MODES_OF(kind)) {
        it(`${mode === 'close' ? 'close()' : mode === 'exit' ? 'SIGTERM with releaseOnExit' : "SIGTERM with releaseOnExit and the app's own handler"}: the request finishes before another process gets the lock; no update is lost`, async () => {
          const admin = connect(server);
          const account = `account:${kind}:${mode}`;
          await admin.set(account, 100);
          const app = new App(kind, account, mode, 800, 10_000);
          await app.report('started');
          shutDown(app, mode);
          await otherDebit(kind, account);
          assert.equal(Number(await admin.get(account)), 98, 'both debits landed: the lock was not handed over while the request ran');
          if (mode === 'exit') {
            assert.deepEqual(await app.ended(), { code: null, signal: 'SIGTERM' }, 'then the process ended by the signal, as without padlock');
          } else {
            assert.equal((await app.report('finished')).finished, 'ok', 'its withLock resolved: the lock covered the whole request');
            if (mode === 'app-handler') assert.equal((await app.report('appHandled')).appHandled, 'SIGTERM');
            else await app.report('closed');
            assert.equal(app.child.exitCode, null, 'the app keeps running');
            app.child.kill('SIGKILL');
          }
          assert.equal(app.reports.find((report) => report.told !== undefined), undefined, 'the request was never told to stop');
        });
      }

      it('past drainMs: the request is told (PadlockClosedError) before another process can take the lock, and its withLock rejects with it', async () => {
        const admin = connect(server);
        const account = `account:${kind}:drain`;
        await admin.set(account, 100);
        const app = new App(kind, account, 'close', 60_000, 300);
        await app.report('started');
        shutDown(app, 'close');
        const heldAt = await otherDebit(kind, account);
        const { told, toldAt } = await app.report('told');
        assert.equal(told, 'CLOSED');
        assert.ok(toldAt !== undefined && toldAt <= heldAt, `told at ${toldAt}, the other held at ${heldAt}`);
        assert.equal((await app.report('finished')).finished, 'CLOSED', 'withLock rejected with PadlockClosedError');
        assert.equal(Number(await admin.get(account)), 99, 'the told request did not write');
        app.child.kill('SIGKILL');
      });
    });
  }
});

describe('close() in one process', () => {
  it('rejects pending waits at once, lets a running withLock re-enter its lock, refuses new acquisitions while it drains', async () => {
    const padlock = padlockOn(server, { drainMs: 20_000 });
    const other = padlockOn(server);
    const blocker = await other.mutex('drain:busy').acquire();
    const waiting = padlock.mutex('drain:busy').acquire({ waitMs: 60_000 });
    let reentered: Lease | undefined;
    let fresh: unknown;
    let release!: () => void;
    const running = padlock.withLock('drain:mine', async (lease) => {
      await new Promise<void>((resolve) => (release = resolve));
      reentered = await padlock.mutex('drain:mine').acquire();
      fresh = await padlock.mutex('drain:other').acquire().catch((error: unknown) => error);
      await reentered.release();
      return lease.fence;
    });
    await delay(100);
    const closing = padlock.close();
    await assert.rejects(waiting, PadlockClosedError);
    await assert.rejects(padlock.mutex('drain:new').acquire(), PadlockClosedError);
    release();
    assert.equal(typeof (await running), 'number', 'the running function finished and its withLock resolved');
    assert.equal(reentered?.holdCount, 2, 're-entered while draining');
    assert.ok(fresh instanceof PadlockClosedError, 'a fresh lock is refused while draining');
    await closing;
    assert.equal(await other.mutex('drain:mine').isLocked(), false);
    await blocker.release();
  });

  it("an acquire()'s lease is told before its release, and close() does not wait for it", async () => {
    // One connection for the Padlock and the check: the check sent when the signal aborts reaches
    // Redis before anything close() sends after it.
    const redis = connect(server);
    const padlock = new Padlock({ redis, drainMs: 20_000 });
    const lease = await padlock.mutex('drain:idle').acquire();
    let lockedWhenTold: boolean | undefined;
    lease.signal.addEventListener('abort', () => void redis.exists('padlock:{drain:idle}:lock').then((n) => (lockedWhenTold = n === 1)));
    const started = Date.now();
    await padlock.close();
    assert.ok(Date.now() - started < 10_000, 'no drain for a lease that no withLock runs under');
    assert.ok(lease.signal.reason instanceof PadlockClosedError);
    assert.equal(lease.isHeld, false);
    assert.ok(await eventually(() => lockedWhenTold !== undefined));
    assert.equal(lockedWhenTold, true, 'the signal aborted while the lock was still held');
    await lease.release(); // released by close(): nothing more to do, no error
  });

  it('refuses a drainMs that is not a duration, and changes nothing', async () => {
    assert.throws(() => padlockOn(server, { drainMs: -1 }), (e: unknown) => e instanceof PadlockOptionError && e.option === 'drainMs');
    const padlock = padlockOn(server);
    const lease = await padlock.mutex('drain:bad').acquire();
    await assert.rejects(padlock.close({ drainMs: Number.NaN }), (e: unknown) => e instanceof PadlockOptionError && e.option === 'drainMs');
    await assert.rejects(padlock.close({ drain: 5 } as never), (e: unknown) => e instanceof PadlockOptionError && e.option === 'options.drain');
    assert.equal(lease.isHeld, true, 'nothing was closed');
    await padlock.close({ drainMs: 0 });
    assert.equal(lease.isHeld, false);
  });
});
