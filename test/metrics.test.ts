/**
 * Metrics through a real OpenTelemetry SDK (`@opentelemetry/sdk-metrics`: a MeterProvider whose
 * reader exports to an in-memory exporter), from real acquisitions against a real redis-server.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { metrics as otelMetrics } from '@opentelemetry/api';
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
  type DataPoint,
  type Histogram,
} from '@opentelemetry/sdk-metrics';
import type { RedisServer } from '../src/devserver/redis-server.js';
import type { Padlock } from '../src/index.js';
import { Metrics } from '../src/observability/metrics.js';
import type { PadlockOptions } from '../src/options.js';
import { connect, delay, eventually, padlockOn, startServer } from './harness/redis.js';
import { lockKeys } from '../src/keys.js';
import { internals } from '../src/testing.js';

let server: RedisServer;
before(async () => {
  server = await startServer();
});

/** A real SDK pipeline: MeterProvider → PeriodicExportingMetricReader → InMemoryMetricExporter, read on demand. */
class Sdk {
  readonly exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  // Exports only when flushed by read(); the hour-long interval never fires in a test.
  readonly reader = new PeriodicExportingMetricReader({ exporter: this.exporter, exportIntervalMillis: 3_600_000 });
  readonly provider = new MeterProvider({ readers: [this.reader] });

  /** The data points of instrument `name` as of now. */
  async points<T extends number | Histogram>(name: string): Promise<DataPoint<T>[]> {
    await this.reader.forceFlush();
    const latest = this.exporter.getMetrics().at(-1);
    const metric = latest?.scopeMetrics.flatMap((scope) => scope.metrics).find((m) => m.descriptor.name === name);
    return (metric?.dataPoints ?? []) as DataPoint<T>[];
  }

  /** The histogram point of `name` whose attributes include `attributes`, if any. */
  async histogram(name: string, attributes: Record<string, string>): Promise<Histogram | undefined> {
    return pick(await this.points<Histogram>(name), attributes)?.value;
  }

  /** The sum of `name` (a counter) over points whose attributes include `attributes`. */
  async total(name: string, attributes: Record<string, string>): Promise<number> {
    return (await this.points<number>(name)).filter((p) => matches(p.attributes, attributes)).reduce((sum, p) => sum + p.value, 0);
  }

  shutdown(): Promise<void> {
    return this.provider.shutdown();
  }
}

function matches(actual: Record<string, unknown>, wanted: Record<string, string>): boolean {
  return Object.entries(wanted).every(([key, value]) => actual[key] === value);
}

function pick<T>(points: readonly DataPoint<T>[], attributes: Record<string, string>): DataPoint<T> | undefined {
  const found = points.filter((p) => matches(p.attributes, attributes));
  assert.ok(found.length <= 1, `one point for ${JSON.stringify(attributes)}, got ${found.length}`);
  return found[0];
}

const sdks: Sdk[] = [];
after(async () => {
  await Promise.all(sdks.map((sdk) => sdk.shutdown()));
});

function withSdk(options: Omit<PadlockOptions, 'redis' | 'metrics'> & { lockNames?: boolean } = {}): { sdk: Sdk; padlock: Padlock } {
  const sdk = new Sdk();
  sdks.push(sdk);
  const { lockNames, ...rest } = options;
  // The SDK's own MeterProvider type goes in as it is: padlock's structural type accepts it.
  const padlock = padlockOn(server, { ...rest, metrics: { meterProvider: sdk.provider, lockNames } });
  return { sdk, padlock };
}

const MUTEX = { 'padlock.lock.kind': 'mutex' };

describe('metrics through the OpenTelemetry SDK', () => {
  it('records acquire times and hold times of uncontended acquisitions, by kind and outcome, without lock names', async () => {
    const { sdk, padlock } = withSdk();
    for (let i = 0; i < 3; i++) {
      const lease = await padlock.mutex('m:plain').acquire();
      await delay(60);
      await lease.release();
    }
    await padlock.fairMutex('m:fair').withLock(() => delay(10));
    const acquired = await sdk.histogram('padlock.lock.acquire.duration', { ...MUTEX, 'padlock.outcome': 'acquired' });
    assert.equal(acquired?.count, 3);
    assert.ok(acquired.sum !== undefined && acquired.sum > 0 && acquired.sum < 3, `acquire sum ${acquired.sum} s`);
    const fair = await sdk.histogram('padlock.lock.acquire.duration', { 'padlock.lock.kind': 'fairMutex', 'padlock.outcome': 'acquired' });
    assert.equal(fair?.count, 1);
    const held = await sdk.histogram('padlock.lock.hold.duration', { ...MUTEX, 'padlock.outcome': 'released' });
    assert.equal(held?.count, 3);
    assert.ok(held.sum !== undefined && held.sum >= 0.18 && held.sum < 3, `three holds of 60 ms or more: ${held.sum} s`);
    assert.equal((await sdk.points('padlock.lock.wait.duration')).length, 0, 'nobody waited');
    assert.equal(await sdk.total('padlock.lock.contended_attempts', {}), 0);
    const all = [...(await sdk.points('padlock.lock.acquire.duration')), ...(await sdk.points('padlock.lock.hold.duration'))];
    assert.ok(all.every((p) => !('padlock.lock.name' in p.attributes)), 'no lock name unless asked');
  });

  it('records contention: refused attempts, the waiters gauge while they wait, and wait times', async () => {
    const { sdk, padlock } = withSdk();
    const holder = padlockOn(server);
    const lease = await holder.mutex('m:contended').acquire();
    // Each waiter, once it has the lock, gives it on to the other.
    const wait = async (): Promise<void> => (await padlock.mutex('m:contended').acquire({ waitMs: 5_000 })).release();
    const waits = [wait(), wait()];
    assert.ok(await eventually(async () => (await sdk.total('padlock.lock.waiters', MUTEX)) === 2), 'two waiters counted while they wait');
    await delay(200);
    await lease.release();
    await Promise.all(waits);
    const waited = await sdk.histogram('padlock.lock.wait.duration', { ...MUTEX, 'padlock.outcome': 'acquired' });
    assert.equal(waited?.count, 2);
    assert.ok(waited.sum !== undefined && waited.sum >= 0.35, `both waited about 200 ms or more: ${waited.sum} s`);
    assert.ok((await sdk.total('padlock.lock.contended_attempts', MUTEX)) >= 2, 'each found the lock held at least once');
    assert.equal(await sdk.total('padlock.lock.waiters', MUTEX), 0, 'no waiter left');
    const acquired = await sdk.histogram('padlock.lock.acquire.duration', { ...MUTEX, 'padlock.outcome': 'acquired' });
    assert.equal(acquired?.count, 2);
  });

  it('records each failed outcome: timeout (tryAcquire null too), aborted, closed; and re-entries', async () => {
    const { sdk, padlock } = withSdk();
    const lease = await padlockOn(server).mutex('m:outcomes').acquire();
    assert.equal(await padlock.mutex('m:outcomes').tryAcquire(), null);
    await assert.rejects(padlock.mutex('m:outcomes').acquire({ waitMs: 50 }), { code: 'LOCK_TIMEOUT' });
    const controller = new AbortController();
    const aborted = padlock.mutex('m:outcomes').acquire({ signal: controller.signal });
    setTimeout(() => controller.abort(new Error('changed my mind')), 50);
    await assert.rejects(aborted, /changed my mind/);
    await padlock.mutex('m:reenter').withLock(async () => {
      await padlock.mutex('m:reenter').withLock(() => undefined);
    });
    const outcome = async (value: string): Promise<number | undefined> => (await sdk.histogram('padlock.lock.acquire.duration', { ...MUTEX, 'padlock.outcome': value }))?.count;
    assert.equal(await outcome('timeout'), 2);
    assert.equal(await outcome('aborted'), 1);
    assert.equal(await outcome('reentered'), 1);
    assert.equal(await outcome('acquired'), 1);
    const pending = assert.rejects(padlock.mutex('m:outcomes').acquire(), { code: 'CLOSED' });
    await delay(20);
    await padlock.close();
    await pending;
    assert.equal(await outcome('closed'), 1);
    // Every wait that found the lock held and then ended has left the waiters gauge.
    assert.equal(await sdk.total('padlock.lock.waiters', MUTEX), 0);
    await lease.release();
  });

  it("counts the watchdog's renewals, and a lost lock with its reason", async () => {
    const { sdk, padlock } = withSdk({ leaseMs: 150 });
    const lease = await padlock.mutex('m:renewed').acquire();
    assert.ok(await eventually(async () => (await sdk.total('padlock.lock.renewals', { ...MUTEX, 'padlock.outcome': 'renewed' })) >= 2, 3_000), 'renewed twice');
    // Its key is deleted behind padlock's back (no notice, as a force-release gives): the next
    // renewal is refused and the lock is lost, taken.
    const raw = connect(server);
    assert.equal(await raw.del(lockKeys('padlock', 'm:renewed').lock), 1);
    raw.disconnect();
    assert.ok(await eventually(() => lease.signal.aborted, 3_000), 'the hold is lost');
    assert.equal(await sdk.total('padlock.lock.renewals', { ...MUTEX, 'padlock.outcome': 'refused' }), 1);
    assert.equal(await sdk.total('padlock.lock.lost', { ...MUTEX, 'padlock.lost.reason': 'taken' }), 1);
    const held = await sdk.histogram('padlock.lock.hold.duration', { ...MUTEX, 'padlock.outcome': 'lost' });
    assert.equal(held?.count, 1);
    // A fixed lease that runs out: lost, expired.
    await padlock.mutex('m:expired').acquire({ leaseMs: 50 });
    assert.ok(await eventually(async () => (await sdk.total('padlock.lock.lost', { ...MUTEX, 'padlock.lost.reason': 'expired' })) === 1, 3_000));
  });

  it('adds the lock name when asked (metrics: { lockNames: true })', async () => {
    const { sdk, padlock } = withSdk({ lockNames: true });
    await padlock.withLock('m:named', () => undefined);
    const point = pick(await sdk.points<Histogram>('padlock.lock.acquire.duration'), { 'padlock.lock.name': 'm:named' });
    assert.equal(point?.value.count, 1);
    assert.equal(point.attributes['padlock.lock.kind'], 'mutex');
  });

  it('uses the global MeterProvider of @opentelemetry/api by default, from the first acquisition on; metrics: false records nothing', async () => {
    const sdk = new Sdk();
    sdks.push(sdk);
    assert.equal(otelMetrics.setGlobalMeterProvider(sdk.provider), true);
    try {
      const padlock = padlockOn(server);
      await padlock.withLock('m:global', () => undefined);
      const off = padlockOn(server, { metrics: false });
      await off.withLock('m:off', () => undefined);
      await off.withLock('m:off', () => undefined);
      const acquired = await sdk.histogram('padlock.lock.acquire.duration', { ...MUTEX, 'padlock.outcome': 'acquired' });
      assert.equal(acquired?.count, 1, 'the default Padlock recorded; the one with metrics: false did not');
    } finally {
      otelMetrics.disable();
    }
  });

  it('tells metrics that record nothing (no SDK registered: the global no-op provider) nothing at all, and an SDK registered first everything', async () => {
    otelMetrics.disable();
    const noop = padlockOn(server);
    const pending = internals(noop).observer;
    assert.ok(pending instanceof Metrics, 'metrics are on by default while the global provider loads');
    await pending.ready();
    assert.equal(internals(noop).observer, undefined, 'a no-op provider: the Padlock stops telling its metrics anything');
    await noop.withLock('m:noop', () => undefined);
    const sdk = new Sdk();
    sdks.push(sdk);
    assert.equal(otelMetrics.setGlobalMeterProvider(sdk.provider), true);
    try {
      const recording = padlockOn(server);
      const metrics = internals(recording).observer;
      assert.ok(metrics instanceof Metrics);
      await metrics.ready();
      assert.equal(internals(recording).observer, metrics, 'a real provider: told everything');
      await recording.withLock('m:recorded', () => undefined);
      assert.equal((await sdk.histogram('padlock.lock.acquire.duration', { ...MUTEX, 'padlock.outcome': 'acquired' }))?.count, 1);
    } finally {
      otelMetrics.disable();
    }
  });

  it('refuses bad metrics options, naming them', () => {
    const bad: [unknown, string][] = [
      [true, 'metrics'],
      [{ meterProvider: {} }, 'metrics.meterProvider'],
      [{ lockNames: 'yes' }, 'metrics.lockNames'],
      [{ meter: {} }, 'metrics.meter'],
    ];
    for (const [metrics, option] of bad) {
      assert.throws(() => padlockOn(server, { metrics: metrics as PadlockOptions['metrics'] }), { code: 'INVALID_OPTION', option });
    }
  });

  it('works, saying nothing, where @opentelemetry/api is not installed', async () => {
    // A child process in which resolving '@opentelemetry/api' fails, as in an application without it.
    const hooks = `export async function resolve(specifier, context, next) {
      if (specifier.startsWith('@opentelemetry/')) { const e = new Error('Cannot find package ' + specifier); e.code = 'ERR_MODULE_NOT_FOUND'; throw e; }
      return next(specifier, context);
    }`;
    const index = new URL('../src/index.js', import.meta.url).href;
    const program = `
      import { register } from 'node:module';
      register('data:text/javascript,' + encodeURIComponent(${JSON.stringify(hooks)}));
      const { Redis } = await import('ioredis');
      const { Padlock } = await import(${JSON.stringify(index)});
      let otel = 'absent';
      try { await import('@opentelemetry/api'); otel = 'present'; } catch {}
      const redis = new Redis(${JSON.stringify(server.url)});
      const padlock = new Padlock({ redis });
      const fence = await padlock.withLock('m:no-otel', async (lease) => lease.fence);
      await padlock.close();
      await redis.quit();
      console.log(JSON.stringify({ otel, fence }));
    `;
    const child = spawn(process.execPath, ['--input-type=module', '-e', program], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    assert.equal(code, 0, stderr);
    const result = JSON.parse(stdout) as { otel: string; fence: number };
    assert.equal(result.otel, 'absent', 'the child cannot load @opentelemetry/api');
    assert.ok(result.fence > 0, 'the lock worked');
    assert.equal(stderr, '', 'and nothing was said about metrics');
  });
});
