/**
 * Child process of fault-unavailable.test.ts: uses padlock while no Redis is reachable, prints what
 * happened as one JSON line, closes everything, and must then exit by itself (no open handle).
 */
import { Redis } from 'ioredis';
import { freePort, startRedisServer } from '../../src/devserver/redis-server.js';
import { LockTimeoutError, Padlock, PadlockError, RedisUnavailableError } from '../../src/index.js';

export interface Outcome {
  readonly error: string;
  readonly code: string | null;
  readonly tookMs: number;
  /** The error tells that Redis was unreachable (it is, or its cause is, a RedisUnavailableError). */
  readonly saysUnavailable: boolean;
}

export interface UnavailableReport {
  readonly tryAcquire: Outcome;
  readonly acquireWithWait: Outcome;
  readonly holderLost: { readonly reason: string; readonly afterMs: number };
  readonly releaseAfterLoss: Outcome;
  readonly closeMs: number;
}

async function outcome(call: () => Promise<unknown>): Promise<Outcome> {
  const started = performance.now();
  try {
    await call();
    return { error: 'none', code: null, tookMs: performance.now() - started, saysUnavailable: false };
  } catch (error) {
    const saysUnavailable =
      error instanceof RedisUnavailableError || (error instanceof LockTimeoutError && error.cause instanceof RedisUnavailableError);
    return {
      error: error instanceof Error ? error.name : String(error),
      code: error instanceof PadlockError ? error.code : null,
      tookMs: performance.now() - started,
      saysUnavailable,
    };
  }
}

async function main(): Promise<void> {
  // Nothing listens on this port.
  const down = new Redis({ port: await freePort(), host: '127.0.0.1' });
  down.on('error', () => undefined);
  const padlock = new Padlock({ redis: down });
  const [tryAcquire, acquireWithWait] = await Promise.all([
    outcome(() => padlock.mutex('down').tryAcquire()),
    outcome(() => padlock.mutex('down').acquire({ waitMs: 1_000 })),
  ]);

  // A holder whose only Redis dies.
  const server = await startRedisServer();
  const live = new Redis({ port: server.port, host: server.host });
  live.on('error', () => undefined);
  const holderPadlock = new Padlock({ redis: live, leaseMs: 300 });
  const lease = await holderPadlock.mutex('dies').acquire();
  await server.kill();
  const killedAt = performance.now();
  const reason = await new Promise<string>((resolve) => {
    lease.signal.addEventListener('abort', () => {
      const why: unknown = lease.signal.reason;
      resolve(why instanceof Error && 'reason' in why ? String(why.reason) : String(why));
    });
  });
  const holderLost = { reason, afterMs: performance.now() - killedAt };
  const releaseAfterLoss = await outcome(() => lease.release());

  const closing = performance.now();
  await Promise.all([padlock.close(), holderPadlock.close()]);
  const closeMs = performance.now() - closing;
  down.disconnect();
  live.disconnect();
  await server.stop();
  const report: UnavailableReport = { tryAcquire, acquireWithWait, holderLost, releaseAfterLoss, closeMs };
  process.stdout.write(`${JSON.stringify(report)}\n`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
