/**
 * padlock's metrics, through OpenTelemetry: one meter, `padlock`, and its instruments (see
 * {@link INSTRUMENTS} and docs/operating.md). The meter comes from the `meterProvider` option, or
 * else from the global provider of `@opentelemetry/api` when the application has it installed:
 * that package is an optional peer, loaded only then, once per process, by a dynamic `import()`.
 * Without it, padlock records nothing and loads nothing more.
 *
 * Attributes stay few, for cardinality: the lock kind and the outcome; the lock's name only when
 * asked (`metrics: { lockNames: true }`), since one lock per entity means millions of series.
 */
import { monotonicNow } from '../clock.js';
import { LockTimeoutError, PadlockClosedError, QuorumError, RedisUnavailableError, type LockLostReason } from '../errors.js';
import type { AcquireOutcome, ObservedLock, Observer, RenewalOutcome } from './observer.js';
import type { CounterLike, HistogramLike, InstrumentOptions, MeterLike, MeterProviderLike, MetricAttributes } from './otel-types.js';

/** The instrumentation scope's name (the meter's). */
export const METER_NAME = 'padlock';

/** Bucket boundaries, in seconds, for waits and acquire times: 0.5 ms to 5 min. */
const WAIT_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];
/** Bucket boundaries, in seconds, for hold times: 1 ms to 1 h. */
const HOLD_BUCKETS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900, 3600];

/** Every instrument padlock makes: name, kind, and options. Documented in docs/operating.md. */
export const INSTRUMENTS = {
  acquireDuration: {
    name: 'padlock.lock.acquire.duration',
    type: 'histogram',
    options: { unit: 's', description: 'Time from an acquire, tryAcquire or withLock call to its outcome', advice: { explicitBucketBoundaries: WAIT_BUCKETS } },
  },
  waitDuration: {
    name: 'padlock.lock.wait.duration',
    type: 'histogram',
    options: { unit: 's', description: 'Time an acquisition waited while another owner held the lock, from its first refused attempt to its outcome', advice: { explicitBucketBoundaries: WAIT_BUCKETS } },
  },
  holdDuration: {
    name: 'padlock.lock.hold.duration',
    type: 'histogram',
    options: { unit: 's', description: 'Time a hold lasted, from its grant to its release or loss', advice: { explicitBucketBoundaries: HOLD_BUCKETS } },
  },
  contendedAttempts: {
    name: 'padlock.lock.contended_attempts',
    type: 'counter',
    options: { unit: '{attempt}', description: 'Acquire attempts that found the lock held by another owner' },
  },
  waiters: {
    name: 'padlock.lock.waiters',
    type: 'updowncounter',
    options: { unit: '{acquisition}', description: 'Acquisitions in this process waiting for a lock another owner holds' },
  },
  renewals: {
    name: 'padlock.lock.renewals',
    type: 'counter',
    options: { unit: '{renewal}', description: "The watchdog's renewals of held locks, by outcome (renewed, refused, failed)" },
  },
  lost: {
    name: 'padlock.lock.lost',
    type: 'counter',
    options: { unit: '{hold}', description: 'Held locks lost, by reason (taken, expired)' },
  },
} as const satisfies Record<string, { name: string; type: 'histogram' | 'counter' | 'updowncounter'; options: InstrumentOptions }>;

/** Attribute keys. */
export const ATTRIBUTES = {
  kind: 'padlock.lock.kind',
  name: 'padlock.lock.name',
  outcome: 'padlock.outcome',
  reason: 'padlock.lost.reason',
} as const;

interface Instruments {
  readonly acquireDuration: HistogramLike;
  readonly waitDuration: HistogramLike;
  readonly holdDuration: HistogramLike;
  readonly contendedAttempts: CounterLike;
  readonly waiters: CounterLike;
  readonly renewals: CounterLike;
  readonly lost: CounterLike;
}

function instruments(meter: MeterLike): Instruments {
  const { acquireDuration, waitDuration, holdDuration, contendedAttempts, waiters, renewals, lost } = INSTRUMENTS;
  return {
    acquireDuration: meter.createHistogram(acquireDuration.name, acquireDuration.options),
    waitDuration: meter.createHistogram(waitDuration.name, waitDuration.options),
    holdDuration: meter.createHistogram(holdDuration.name, holdDuration.options),
    contendedAttempts: meter.createCounter(contendedAttempts.name, contendedAttempts.options),
    waiters: meter.createUpDownCounter(waiters.name, waiters.options),
    renewals: meter.createCounter(renewals.name, renewals.options),
    lost: meter.createCounter(lost.name, lost.options),
  };
}

/** What `@opentelemetry/api` exports that padlock uses. */
interface OtelApi {
  readonly metrics: { getMeterProvider(): MeterProviderLike };
  /** The meter of the API's no-op provider (one object), which the global provider is until an SDK registers. */
  readonly createNoopMeter?: () => unknown;
}

/** The global provider's source: loading, loaded (the api module), or absent (`null`). */
let globalApi: Promise<OtelApi | null> | undefined;

/**
 * Loads `@opentelemetry/api` once per process, if the application has it; `null` when it does not.
 * The specifier is a variable so that bundlers do not try to include an optional peer.
 */
function loadGlobalApi(): Promise<OtelApi | null> {
  const specifier = '@opentelemetry/api';
  globalApi ??= import(specifier).then(
    (module: unknown) => (isOtelApi(module) ? module : null),
    () => null,
  );
  return globalApi;
}

function isOtelApi(module: unknown): module is OtelApi {
  if (typeof module !== 'object' || module === null || !('metrics' in module)) return false;
  const { metrics } = module;
  return typeof metrics === 'object' && metrics !== null && 'getMeterProvider' in metrics && typeof metrics.getMeterProvider === 'function';
}

/** How a Padlock gets its meter. */
export interface ResolvedMetricsOptions {
  /** The provider to use; `undefined`: the global one, if `@opentelemetry/api` is installed. */
  readonly meterProvider: MeterProviderLike | undefined;
  /** Whether measurements carry the lock's name. */
  readonly lockNames: boolean;
}

/** Measurements recorded while the global provider loads, replayed once it has (then dropped if absent). */
const MAX_PENDING = 10_000;

/** The metrics of one Padlock: an {@link Observer} that records through OpenTelemetry instruments. */
export class Metrics implements Observer {
  #instruments: Instruments | undefined;
  /** Measurements waiting for the global provider to load; `undefined` once settled. */
  #pending: ((instruments: Instruments) => void)[] | undefined;
  readonly #lockNames: boolean;
  /** Attribute sets without the name, made once per kind and outcome, since they never change. */
  readonly #attributes = new Map<string, MetricAttributes>();

  constructor(options: ResolvedMetricsOptions) {
    this.#lockNames = options.lockNames;
    if (options.meterProvider !== undefined) {
      this.#instruments = instruments(options.meterProvider.getMeter(METER_NAME));
      return;
    }
    this.#pending = [];
    void loadGlobalApi().then((api) => {
      const pending = this.#pending ?? [];
      this.#pending = undefined;
      if (api === null) return;
      try {
        const meter = api.metrics.getMeterProvider().getMeter(METER_NAME);
        // No SDK registered: the global provider is the API's no-op one, for good (an SDK
        // registered later is not seen by meters taken before). Record nothing then, at no cost.
        if (meter === api.createNoopMeter?.()) return;
        this.#instruments = instruments(meter);
      } catch {
        return; // a broken global provider: record nothing rather than throw from a promise
      }
      for (const record of pending) record(this.#instruments);
    });
  }

  /**
   * Whether anything is recorded: false once the global provider turned out absent or a no-op
   * (then the Padlock stops telling this observer anything: metrics that record nothing cost nothing).
   */
  get recording(): boolean {
    return this.#instruments !== undefined || this.#pending !== undefined;
  }

  /** Resolves when the meter is known (at once with a `meterProvider`); for tests. */
  async ready(): Promise<void> {
    if (this.#pending !== undefined) await loadGlobalApi();
  }

  #record(record: (instruments: Instruments) => void): void {
    if (this.#instruments !== undefined) record(this.#instruments);
    else if (this.#pending !== undefined && this.#pending.length < MAX_PENDING) this.#pending.push(record);
  }

  /** The attributes of a measurement: the lock's kind, `key` = `value` if given, and the name when asked. */
  #attrs(lock: ObservedLock, key?: string, value?: string): MetricAttributes {
    const make = (): MetricAttributes => {
      const attributes: Record<string, string> = { [ATTRIBUTES.kind]: lock.kind };
      if (key !== undefined && value !== undefined) attributes[key] = value;
      if (this.#lockNames) attributes[ATTRIBUTES.name] = lock.name;
      return attributes;
    };
    if (this.#lockNames) return make();
    const id = `${lock.kind}\n${key}\n${value}`;
    let attributes = this.#attributes.get(id);
    if (attributes === undefined) {
      attributes = Object.freeze(make());
      this.#attributes.set(id, attributes);
    }
    return attributes;
  }

  held(lock: ObservedLock, first: boolean): void {
    const attributes = this.#attrs(lock);
    this.#record((i) => {
      i.contendedAttempts.add(1, attributes);
      if (first) i.waiters.add(1, attributes);
    });
  }

  acquireEnded(lock: ObservedLock, outcome: AcquireOutcome, ms: number, waitedMs: number | undefined): void {
    const attributes = this.#attrs(lock, ATTRIBUTES.outcome, outcome);
    const waiting = waitedMs === undefined ? undefined : this.#attrs(lock);
    this.#record((i) => {
      i.acquireDuration.record(ms / 1_000, attributes);
      if (waitedMs === undefined || waiting === undefined) return;
      i.waitDuration.record(waitedMs / 1_000, attributes);
      i.waiters.add(-1, waiting);
    });
  }

  holdEnded(lock: ObservedLock, ms: number, lost: LockLostReason | undefined): void {
    const attributes = this.#attrs(lock, ATTRIBUTES.outcome, lost === undefined ? 'released' : 'lost');
    const reason = lost === undefined ? undefined : this.#attrs(lock, ATTRIBUTES.reason, lost);
    this.#record((i) => {
      i.holdDuration.record(ms / 1_000, attributes);
      if (reason !== undefined) i.lost.add(1, reason);
    });
  }

  renewal(lock: ObservedLock, outcome: RenewalOutcome): void {
    const attributes = this.#attrs(lock, ATTRIBUTES.outcome, outcome);
    this.#record((i) => i.renewals.add(1, attributes));
  }
}

/** How an acquisition that threw ended, for the `padlock.outcome` attribute. */
export function failedOutcome(error: unknown, signal: AbortSignal | undefined): AcquireOutcome {
  if (error instanceof LockTimeoutError) return 'timeout';
  if (error instanceof PadlockClosedError) return 'closed';
  if (signal?.aborted === true && error === signal.reason) return 'aborted';
  if (error instanceof RedisUnavailableError || error instanceof QuorumError) return 'unavailable';
  return 'error';
}

/** Milliseconds since `since` (monotonic), or `undefined` when it is. */
export function since(since: number | undefined): number | undefined {
  return since === undefined ? undefined : monotonicNow() - since;
}
