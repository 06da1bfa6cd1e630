/**
 * The slice of the OpenTelemetry metrics API that padlock uses, as structural types. An
 * `@opentelemetry/api` `MeterProvider` (the SDK's, or `metrics.getMeterProvider()`) fits them, so
 * padlock's published types do not need `@opentelemetry/api` installed: it is an optional peer.
 */

/** Attributes of one measurement. */
export type MetricAttributes = Readonly<Record<string, string>>;

/** Options of an instrument, as padlock sets them (OpenTelemetry's `MetricOptions`). */
export interface InstrumentOptions {
  /** What the instrument measures. */
  readonly description?: string;
  /** Its unit, in UCUM (`s`, `{attempt}`). */
  readonly unit?: string;
  /** Bucket boundaries the SDK should use for a histogram unless a View says otherwise (API ≥ 1.7). */
  readonly advice?: { readonly explicitBucketBoundaries?: number[] };
}

/** A histogram (OpenTelemetry's `Histogram`). */
export interface HistogramLike {
  /** Records one value. */
  record(value: number, attributes?: MetricAttributes): void;
}

/** A counter or up-down counter (OpenTelemetry's `Counter`, `UpDownCounter`). */
export interface CounterLike {
  /** Adds `value` (≥ 0 for a counter). */
  add(value: number, attributes?: MetricAttributes): void;
}

/** A meter (OpenTelemetry's `Meter`): makes instruments. */
export interface MeterLike {
  /** Makes a histogram. */
  createHistogram(name: string, options?: InstrumentOptions): HistogramLike;
  /** Makes a monotonic counter. */
  createCounter(name: string, options?: InstrumentOptions): CounterLike;
  /** Makes a counter that also goes down. */
  createUpDownCounter(name: string, options?: InstrumentOptions): CounterLike;
}

/** A meter provider (OpenTelemetry's `MeterProvider`), e.g. an SDK's `new MeterProvider({ readers })`. */
export interface MeterProviderLike {
  /** The meter of an instrumentation scope. */
  getMeter(name: string, version?: string): MeterLike;
}
