/**
 * Shared pieces of the property-based tests: an independent oracle of what padlock's options accept,
 * generators of valid and invalid values, Redis Cluster's key slot (CRC16, computed here rather than
 * asked of Redis), and a bound that turns a hang into a failure.
 */
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { freePort } from '../../src/devserver/redis-server.js';

/** Longest timer Node can schedule: padlock's upper bound on every duration. */
export const MAX_MS = 2_147_483_647;

// ---------------------------------------------------------------------------------------------
// The oracle: what the documentation says is valid, written independently of src/options.ts.

/** A duration in ms: a number, not NaN, from `min` to MAX_MS, or Infinity when allowed. */
export function isValidMs(value: unknown, min: number, allowInfinity: boolean): boolean {
  if (typeof value !== 'number' || Number.isNaN(value)) return false;
  if (value === Infinity) return allowInfinity;
  return value >= min && value <= MAX_MS;
}

/** No lone surrogate: every high surrogate is followed by a low one, every low one preceded by a high one. */
export function isWellFormedUtf16(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff) {
      const next = text.charCodeAt(i + 1);
      if (!(next >= 0xdc00 && next <= 0xdfff)) return false;
      i++;
    } else if (unit >= 0xdc00 && unit <= 0xdfff) {
      return false;
    }
  }
  return true;
}

/** A lock name: a string of 1 to 1 000 UTF-16 code units, well-formed Unicode. */
export function isValidName(name: unknown): boolean {
  return typeof name === 'string' && name.length >= 1 && name.length <= 1_000 && isWellFormedUtf16(name);
}

const TOKEN_CHARS = new Set('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-');
const PREFIX_CHARS = new Set('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.:-');

/** An owner token: 16 to 128 characters of `A–Z a–z 0–9 _ -`. */
export function isValidOwner(owner: unknown): boolean {
  return typeof owner === 'string' && owner.length >= 16 && owner.length <= 128 && [...owner].every((c) => TOKEN_CHARS.has(c));
}

/** A key prefix: 1 to 64 characters of `A–Z a–z 0–9 _ . : -`. */
export function isValidPrefix(prefix: unknown): boolean {
  return typeof prefix === 'string' && prefix.length >= 1 && prefix.length <= 64 && [...prefix].every((c) => PREFIX_CHARS.has(c));
}

// ---------------------------------------------------------------------------------------------
// Generators.

/** Values of every JavaScript type, with the edge cases of numbers and strings well represented. */
export function anyValue(): fc.Arbitrary<unknown> {
  return fc.oneof(
    fc.constantFrom<unknown>(undefined, null, true, false, NaN, Infinity, -Infinity, 0, -0, 9, 9.999, 10, MAX_MS, MAX_MS + 1, 2 ** 53, Number.MIN_VALUE, -1, '', '10', ' ', Symbol('padlock')),
    fc.double(),
    fc.integer({ min: -10, max: 100 }),
    fc.integer(),
    fc.bigInt(),
    fc.string(),
    fc.string({ unit: 'binary', maxLength: 200 }),
    fc.array(fc.integer(), { maxLength: 3 }),
    fc.dictionary(fc.string({ maxLength: 5 }), fc.integer(), { maxKeys: 3 }),
    fc.constant(() => undefined),
    fc.constant(new AbortController().signal),
    fc.constant(new Date(0)),
  );
}

/** Valid owner tokens, including the bounds of the length range. */
export function validOwner(): fc.Arbitrary<string> {
  const unit = fc.constantFrom(...TOKEN_CHARS);
  return fc.oneof(fc.string({ unit, minLength: 16, maxLength: 128 }), fc.string({ unit, minLength: 16, maxLength: 16 }), fc.string({ unit, minLength: 128, maxLength: 128 }));
}

/** Strings that are almost owner tokens: a character outside the alphabet, or a length just outside. */
export function nearOwner(): fc.Arbitrary<string> {
  const unit = fc.constantFrom(...TOKEN_CHARS);
  const bad = fc.constantFrom(' ', '{', '}', '.', ':', '/', '+', '=', '\n', 'é', '🔒', '\u0000');
  return fc.oneof(
    fc.string({ unit, minLength: 0, maxLength: 15 }),
    fc.string({ unit, minLength: 129, maxLength: 200 }),
    fc.tuple(fc.string({ unit, minLength: 8, maxLength: 60 }), bad, fc.string({ unit, minLength: 8, maxLength: 60 })).map(([a, c, b]) => a + c + b),
  );
}

/** Durations near the edges of a valid range, valid or not. */
export function nearMs(min: number): fc.Arbitrary<number> {
  return fc.oneof(
    fc.integer({ min: min - 5, max: min + 5 }),
    fc.integer({ min: MAX_MS - 5, max: MAX_MS + 5 }),
    fc.double({ min: -1e12, max: 1e12 }),
    fc.constantFrom(NaN, Infinity, -Infinity, -0, min - 1e-9, min + 0.5),
  );
}

/**
 * Lock names the documentation promises to handle: braces (which Redis Cluster reads as a hash
 * tag), `%` (padlock's escape character), spaces and control characters, any Unicode, and the
 * 1 000-unit limit in ASCII and in astral characters.
 */
export function validName(): fc.Arbitrary<string> {
  const tricky = fc.constantFrom('{', '}', '%', '7', 'B', 'D', '2', '5', ' ', '\t', '\n', '\u0000', ':', '*', '\\', '"', 'é', '🔒', '\u200b');
  // One UTF-16 unit each, so that a string of 1 000 of them is exactly at the limit.
  const trickyBmp = fc.constantFrom('{', '}', '%', '7', 'B', ' ', '\n', '\u0000', 'é', '\u200b');
  return fc.oneof(
    fc.string({ unit: tricky, minLength: 1, maxLength: 40 }),
    fc.string({ unit: 'grapheme', minLength: 1, maxLength: 40 }),
    fc.string({ unit: 'binary', minLength: 1, maxLength: 60 }).filter(isWellFormedUtf16),
    fc.string({ unit: 'grapheme-ascii', minLength: 990, maxLength: 1_000 }),
    fc.string({ unit: trickyBmp, minLength: 1_000, maxLength: 1_000 }),
    fc.string({ unit: fc.constantFrom('🔒', '𝄞'), minLength: 500, maxLength: 500 }),
    fc.constantFrom('{', '}', '{}', '}{', '{{}}', '%7B', '%257B', ' ', '🔒'.repeat(500), '{'.repeat(1_000), '%'.repeat(1_000), 'x'.repeat(1_000)),
  );
}

/** Strings that are not valid names: empty, too long (also by one astral character), lone surrogates. */
export function invalidNameString(): fc.Arbitrary<string> {
  return fc.oneof(
    fc.constant(''),
    fc.string({ unit: 'grapheme-ascii', minLength: 1_001, maxLength: 1_100 }),
    fc.constant('x'.repeat(999) + '🔒'),
    fc.constant('🔒'.repeat(501)),
    fc.tuple(fc.string({ maxLength: 20 }), fc.constantFrom('\uD800', '\uDBFF', '\uDC00', '\uDFFF'), fc.string({ maxLength: 20 })).map(([a, s, b]) => a + s + b),
  );
}

// ---------------------------------------------------------------------------------------------
// Redis Cluster key slots, implemented here (CLUSTER KEYSLOT needs cluster mode).

const CRC16_TABLE = Array.from({ length: 256 }, (_, byte) => {
  let crc = byte << 8;
  for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  return crc;
});

/** CRC16-CCITT (XMODEM): polynomial 0x1021, initial value 0, as Redis Cluster uses. */
export function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes) crc = ((crc << 8) & 0xffff) ^ (CRC16_TABLE[((crc >> 8) ^ byte) & 0xff] ?? 0);
  return crc;
}

/** The Cluster slot of `key`: CRC16 of its hash tag (the bytes between the first `{` and the next `}`, if any) mod 16384. */
export function keySlot(key: string): number {
  const bytes = Buffer.from(key, 'utf8');
  const open = bytes.indexOf(0x7b);
  if (open >= 0) {
    const close = bytes.indexOf(0x7d, open + 1);
    if (close > open + 1) return crc16(bytes.subarray(open + 1, close)) % 16_384;
  }
  return crc16(bytes) % 16_384;
}

// ---------------------------------------------------------------------------------------------
// Bounds and outcomes.

/** How a call ended: returned, threw synchronously, rejected, or did not settle in time. */
export type Outcome = { kind: 'value'; value: unknown } | { kind: 'error'; error: unknown; sync: boolean } | { kind: 'hang' };

/** Runs `call` and reports how it ended within `ms`; a synchronous throw counts as an error too. */
export async function outcomeOf(call: () => unknown, ms = 2_000): Promise<Outcome> {
  let result: unknown;
  try {
    result = call();
  } catch (error) {
    return { kind: 'error', error, sync: true };
  }
  let timer: NodeJS.Timeout | undefined;
  const hang = new Promise<Outcome>((resolve) => (timer = setTimeout(() => resolve({ kind: 'hang' }), ms)));
  const settled = Promise.resolve(result).then(
    (value): Outcome => ({ kind: 'value', value }),
    (error: unknown): Outcome => ({ kind: 'error', error, sync: false }),
  );
  try {
    return await Promise.race([settled, hang]);
  } finally {
    clearTimeout(timer);
  }
}

/** Any value as text, even one without a prototype. */
export function show(value: unknown): string {
  if (value instanceof Error) return `${value.name}: ${value.message}`;
  try {
    return String(value);
  } catch {
    return Object.prototype.toString.call(value);
  }
}

/** Describes an outcome for an assertion message. */
export function describeOutcome(outcome: Outcome): string {
  if (outcome.kind === 'hang') return 'did not settle (hang)';
  if (outcome.kind === 'value') return `returned ${show(outcome.value)}`;
  return `${outcome.sync ? 'threw' : 'rejected with'} ${show(outcome.error)}`;
}

// ---------------------------------------------------------------------------------------------
// A client that proves nothing was sent.

/** An ioredis client that was never connected, and a record of every command anyone tried to send. */
export interface SpyClient {
  readonly redis: Redis;
  /** Names of the commands sent through it (and through any duplicate of it). */
  readonly sent: string[];
  /** How many times `duplicate()` was called (padlock's subscriber connection). */
  readonly duplicates: () => number;
}

/**
 * A lazily connecting ioredis client to a port nobody listens on, with `sendCommand` and
 * `duplicate` recorded. A command sent through it would be recorded, would make the client leave
 * the 'wait' state, and would never be answered.
 */
export async function spyClient(): Promise<SpyClient> {
  const port = await freePort();
  const redis = new Redis({ host: '127.0.0.1', port, lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 });
  redis.on('error', () => undefined);
  const sent: string[] = [];
  let duplicates = 0;
  const send = redis.sendCommand.bind(redis);
  redis.sendCommand = (command, stream) => {
    sent.push(command.name);
    return send(command, stream);
  };
  const duplicate = redis.duplicate.bind(redis);
  redis.duplicate = (override) => {
    duplicates++;
    return duplicate(override);
  };
  return { redis, sent, duplicates: () => duplicates };
}

/** Total calls per command since the server started, from INFO commandstats, without INFO itself. */
export async function commandStats(admin: Redis): Promise<Map<string, number>> {
  const info = await admin.info('commandstats');
  const stats = new Map<string, number>();
  for (const match of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    const [, command, calls] = match;
    if (command !== undefined && calls !== undefined && command !== 'info') stats.set(command, Number(calls));
  }
  return stats;
}

/** Number of generated cases per property, scaled by PADLOCK_PROPERTY_SCALE (e.g. 10 for a long local run). */
export function runs(n: number): number {
  const scale = Number(process.env['PADLOCK_PROPERTY_SCALE'] ?? '1');
  return Math.max(1, Math.round(n * (Number.isFinite(scale) && scale > 0 ? scale : 1)));
}
