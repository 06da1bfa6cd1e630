/**
 * Uncontended: one client, sequential acquire+release on its own key, and the ping round trip of the
 * same server. Rounds are interleaved across contenders so that a noisy moment on the machine hits
 * every contender alike; each contender's result is its median round.
 */
import { randomBytes } from 'node:crypto';
import { readCommandMeter, resetCommandMeter, totalCount } from './command-meter.js';
import { openContender, type Contender, type ContenderSpec } from './contenders.js';
import { median, nowMs, percentile, sorted } from './stats.js';
import { connectData } from './workload.js';

export interface UncontendedResult {
  readonly label: string;
  readonly library: ContenderSpec['library'];
  /** Median over rounds of acquire+release pairs per second. */
  readonly opsPerSecond: number;
  /** Every round's rate, in run order. */
  readonly rounds: readonly number[];
  /** Commands the client sent per acquire+release. */
  readonly commandsPerOp: number;
}

export interface UncontendedOptions {
  readonly rounds: number;
  readonly roundMs: number;
}

export interface PingResult {
  readonly p50: number;
  readonly p99: number;
  readonly samples: number;
}

/** Sequential PINGs on a fresh connection; round-trip times in ms. */
export async function measurePing(url: string, samples = 2_000): Promise<PingResult> {
  const client = connectData(url);
  try {
    for (let i = 0; i < Math.min(200, samples); i++) await client.ping();
    const times: number[] = [];
    for (let i = 0; i < samples; i++) {
      const start = nowMs();
      await client.ping();
      times.push(nowMs() - start);
    }
    const ordered = sorted(times);
    return { p50: percentile(ordered, 50), p99: percentile(ordered, 99), samples };
  } finally {
    await client.quit().catch(() => client.disconnect());
  }
}

async function cycle(contender: Contender, key: string): Promise<void> {
  const held = await contender.acquire(key, 1_000);
  if (held === null) throw new Error(`uncontended acquire of ${key} failed`);
  await held.release();
}

/** Acquire+release pairs per second over `ms`, and the commands they sent. */
async function round(contender: Contender, key: string, ms: number): Promise<{ rate: number; commands: number; ops: number }> {
  resetCommandMeter();
  const start = nowMs();
  const end = start + ms;
  let ops = 0;
  while (nowMs() < end) {
    await cycle(contender, key);
    ops++;
  }
  const commands = totalCount(readCommandMeter());
  return { rate: ops / ((nowMs() - start) / 1000), commands, ops };
}

/** Measures every spec, interleaving their rounds. */
export async function runUncontended(specs: readonly ContenderSpec[], url: string, options: UncontendedOptions): Promise<UncontendedResult[]> {
  const opened: Array<{ spec: ContenderSpec; contender: Contender; key: string; rates: number[]; commands: number; ops: number }> = [];
  try {
    for (const spec of specs) {
      const contender = await openContender(spec, url);
      const key = `bench:uncontended:${randomBytes(4).toString('hex')}`;
      opened.push({ spec, contender, key, rates: [], commands: 0, ops: 0 });
      for (let i = 0; i < 200; i++) await cycle(contender, key);
    }
    for (let r = 0; r < options.rounds; r++) {
      // Alternate the order so that no contender always runs right after the same one.
      const order = r % 2 === 0 ? opened : [...opened].reverse();
      for (const entry of order) {
        const result = await round(entry.contender, entry.key, options.roundMs);
        entry.rates.push(result.rate);
        entry.commands += result.commands;
        entry.ops += result.ops;
      }
    }
    return opened.map((e) => ({
      label: e.spec.label,
      library: e.spec.library,
      opsPerSecond: median(e.rates),
      rounds: e.rates,
      commandsPerOp: e.commands / e.ops,
    }));
  } finally {
    for (const entry of opened) await entry.contender.close().catch(() => undefined);
  }
}
