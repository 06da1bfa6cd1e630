/**
 * Bad input, property-based, without Redis: validation accepts exactly what the documentation
 * allows, every refusal is a PadlockOptionError naming the option and the value, and no refused
 * call sends anything (the client it would use was never connected and recorded no command).
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Padlock, PadlockOptionError } from '../../src/index.js';
import type { AcquireOptions, Lockable } from '../../src/index.js';
import { hashTag, lockKeys, type LockKeys } from '../../src/keys.js';
import { resolveAcquireOptions, resolvePadlockOptions, checkName } from '../../src/options.js';
import {
  MAX_MS,
  anyValue,
  crc16,
  describeOutcome,
  invalidNameString,
  isValidMs,
  isValidName,
  isValidOwner,
  isValidPrefix,
  keySlot,
  nearMs,
  nearOwner,
  outcomeOf,
  runs,
  show,
  spyClient,
  validName,
  validOwner,
  type SpyClient,
} from './support.js';

const ACQUIRE_KEYS = ['waitMs', 'leaseMs', 'autoExtend', 'signal', 'owner'] as const;
const PADLOCK_KEYS = ['redis', 'prefix', 'leaseMs', 'replyTimeoutMs', 'livenessMs', 'reapDeadHolders'] as const;
/** What padlock calls on a client, and the connection state it reads: a client lacking any is refused. */
const CLIENT_METHODS = ['evalsha', 'eval', 'duplicate', 'subscribe', 'unsubscribe', 'on', 'quit', 'disconnect'] as const;

/** The oracle's view of a usable client: an object with every method padlock calls and a `status` string. */
function isClient(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const record = value as Record<string, unknown>;
  return CLIENT_METHODS.every((method) => typeof record[method] === 'function') && typeof record['status'] === 'string';
}

/** Keys that are not options, including near misses of real ones. */
function unknownKey(known: readonly string[]): fc.Arbitrary<string> {
  return fc
    .oneof(fc.constantFrom('wait', 'waitms', 'WaitMs', 'lease', 'leasems', 'ttl', 'timeout', 'retry', 'owners', 'fence', 'redis', 'prefix'), fc.string({ minLength: 1, maxLength: 8 }))
    .filter((key) => !known.includes(key) && key !== '__proto__');
}

/** Mostly valid, sometimes near the edge, sometimes anything at all. */
function mostlyValid<T>(valid: fc.Arbitrary<T>, near: fc.Arbitrary<unknown>, any: fc.Arbitrary<unknown> = anyValue()): fc.Arbitrary<unknown> {
  return fc.oneof({ weight: 4, arbitrary: valid }, { weight: 2, arbitrary: near }, { weight: 1, arbitrary: any });
}

/** Acquire options: known keys with values of every kind, sometimes an unknown key, sometimes not an object at all. */
function acquireOptions(): fc.Arbitrary<unknown> {
  const known = fc.record(
    {
      waitMs: mostlyValid(fc.oneof(fc.integer({ min: 0, max: MAX_MS }), fc.constant(Infinity)), nearMs(0)),
      leaseMs: mostlyValid(fc.integer({ min: 10, max: MAX_MS }), nearMs(10)),
      // `null` is left to its own test below (it is accepted today as "not given").
      autoExtend: mostlyValid(fc.boolean(), fc.constantFrom(0, 1, 'true', 'false'), anyValue().filter((v) => v !== null)),
      signal: mostlyValid(fc.constantFrom(new AbortController().signal, AbortSignal.timeout(MAX_MS)), fc.constantFrom({ aborted: false }, new EventTarget())),
      owner: mostlyValid(validOwner(), nearOwner()),
    },
    { requiredKeys: [] },
  );
  const extra = fc.oneof({ weight: 5, arbitrary: fc.constant({}) }, { weight: 1, arbitrary: fc.dictionary(unknownKey(ACQUIRE_KEYS), anyValue(), { minKeys: 1, maxKeys: 2 }) });
  return fc.oneof(
    { weight: 10, arbitrary: fc.tuple(known, extra).map(([k, e]) => ({ ...e, ...k })) },
    { weight: 1, arbitrary: anyValue() },
  );
}

/** What the oracle refuses in acquire options: option name → refused value (empty: all valid). */
function refusedAcquireOptions(options: unknown): Map<string, unknown> {
  const refused = new Map<string, unknown>();
  if (options === undefined) return refused;
  if (typeof options !== 'object' || options === null || Array.isArray(options)) return refused.set('options', options);
  const record = options as Record<string, unknown>;
  for (const [key, value] of Object.entries(record)) {
    const ok =
      key === 'waitMs' ? value === undefined || isValidMs(value, 0, true)
      : key === 'leaseMs' ? value === undefined || isValidMs(value, 10, false)
      : key === 'autoExtend' ? value === undefined || typeof value === 'boolean'
      : key === 'signal' ? value === undefined || value instanceof AbortSignal
      : key === 'owner' ? value === undefined || isValidOwner(value)
      : false;
    if (!ok) refused.set((ACQUIRE_KEYS as readonly string[]).includes(key) ? key : `options.${key}`, value);
  }
  return refused;
}

/** Asserts `error` is a PadlockOptionError for one of the refused options, carrying its value. */
function assertNamesARefusedOption(error: unknown, refused: ReadonlyMap<string, unknown>, context: string): void {
  assert.ok(error instanceof PadlockOptionError, `${context}: expected PadlockOptionError, got ${String(error)}`);
  assert.equal(error.code, 'INVALID_OPTION');
  assert.ok(refused.has(error.option), `${context}: the error names ${error.option}, but the refused options are ${[...refused.keys()].join(', ')}`);
  assert.ok(Object.is(error.value, refused.get(error.option)), `${context}: the error carries the refused value`);
  assert.ok(error.message.startsWith(`${error.option} must be`), `${context}: the message names the option: ${error.message}`);
}

const spies: SpyClient[] = [];
after(() => {
  for (const spy of spies) spy.redis.disconnect();
});

describe('properties: validation accepts exactly what is documented', () => {
  it('acquire options: valid ones resolve with their defaults, any refused one is named with its value', { timeout: 60_000 }, () => {
    fc.assert(
      fc.property(acquireOptions(), fc.constantFrom(0, Infinity), (options, defaultWaitMs) => {
        const refused = refusedAcquireOptions(options);
        let resolved: ReturnType<typeof resolveAcquireOptions> | undefined;
        let error: unknown;
        try {
          resolved = resolveAcquireOptions(options, { waitMs: defaultWaitMs, leaseMs: 30_000 });
        } catch (e) {
          error = e;
        }
        if (refused.size > 0) {
          assertNamesARefusedOption(error, refused, 'resolveAcquireOptions');
          return;
        }
        assert.equal(error, undefined, `valid options were refused: ${show(error)}`);
        assert.ok(resolved !== undefined);
        const given = (options ?? {}) as Partial<Record<(typeof ACQUIRE_KEYS)[number], unknown>>;
        assert.equal(resolved.waitMs, given.waitMs ?? defaultWaitMs);
        assert.equal(resolved.leaseMs, given.leaseMs === undefined ? 30_000 : Math.ceil(given.leaseMs as number), 'a fraction is rounded up');
        assert.equal(resolved.autoExtend, given.autoExtend ?? given.leaseMs === undefined);
        assert.equal(resolved.owner, given.owner);
        assert.equal(resolved.signal, given.signal);
      }),
      { numRuns: runs(3_000) },
    );
  });

  it('Padlock options: valid ones construct, any refused one throws naming it', { timeout: 60_000 }, async () => {
    const spy = await spyClient();
    spies.push(spy);
    // The look-alike of an older check (evalsha and duplicate only), now refused.
    const fakeClient = { evalsha: () => Promise.resolve(null), duplicate: () => fakeClient };
    const options = fc.oneof(
      {
        weight: 10,
        arbitrary: fc
          .tuple(
            fc.record(
              {
                redis: fc.oneof({ weight: 5, arbitrary: fc.constantFrom<unknown>(spy.redis, fakeClient) }, { weight: 1, arbitrary: fc.constantFrom({ evalsha: () => null }, { duplicate: () => null }) }, { weight: 1, arbitrary: anyValue() }),
                prefix: mostlyValid(
                  fc.string({ unit: fc.constantFrom(...'abcXYZ019_.:-'), minLength: 1, maxLength: 64 }),
                  fc.oneof(fc.constantFrom('', 'a{b}', 'a b', 'pad/lock', 'é', 'x'.repeat(65)), fc.string({ unit: fc.constantFrom('a', '{', '}', ' ', '*', '🔒'), minLength: 1, maxLength: 70 })),
                ),
                leaseMs: mostlyValid(fc.integer({ min: 10, max: MAX_MS }), nearMs(10)),
                replyTimeoutMs: mostlyValid(fc.integer({ min: 100, max: MAX_MS }), nearMs(100)),
                livenessMs: mostlyValid(fc.integer({ min: 1_000, max: MAX_MS }), nearMs(1_000)),
                reapDeadHolders: mostlyValid(fc.boolean(), fc.constantFrom(0, 1, 'true', null)),
              },
              { requiredKeys: ['redis'] },
            ),
            fc.oneof({ weight: 5, arbitrary: fc.constant({}) }, { weight: 1, arbitrary: fc.dictionary(unknownKey(PADLOCK_KEYS), anyValue(), { minKeys: 1, maxKeys: 2 }) }),
          )
          .map(([known, extra]) => ({ ...extra, ...known })),
      },
      { weight: 1, arbitrary: anyValue() },
    );
    fc.assert(
      fc.property(options, (opts) => {
        const refused = new Map<string, unknown>();
        if (typeof opts !== 'object' || opts === null || Array.isArray(opts)) refused.set('options', opts);
        else {
          const record = opts as Record<string, unknown>;
          for (const [key, value] of Object.entries(record)) {
            const ok =
              key === 'redis' ? isClient(value)
              : key === 'prefix' ? value === undefined || isValidPrefix(value)
              : key === 'leaseMs' ? value === undefined || isValidMs(value, 10, false)
              : key === 'replyTimeoutMs' ? value === undefined || isValidMs(value, 100, false)
              : key === 'livenessMs' ? value === undefined || isValidMs(value, 1_000, false)
              : key === 'reapDeadHolders' ? value === undefined || typeof value === 'boolean'
              : false;
            if (!ok) refused.set((PADLOCK_KEYS as readonly string[]).includes(key) ? key : `options.${key}`, value);
            // An array is Redlock's masters: a bad element is named by its index.
            if (key === 'redis' && Array.isArray(value)) value.forEach((element: unknown, i) => isClient(element) || refused.set(`redis[${i}]`, element));
          }
          if (!('redis' in record)) refused.set('redis', undefined);
        }
        let error: unknown;
        try {
          const padlock = resolvePadlockOptions(opts);
          const given = opts as { prefix?: string; leaseMs?: number; livenessMs?: number };
          assert.equal(padlock.prefix, given.prefix ?? 'padlock');
          assert.equal(padlock.livenessMs, given.livenessMs === undefined ? 10_000 : Math.ceil(given.livenessMs));
          assert.equal(padlock.leaseMs, given.leaseMs === undefined ? 30_000 : Math.ceil(given.leaseMs));
        } catch (e) {
          error = e;
        }
        if (refused.size === 0) assert.equal(error, undefined, `valid options were refused: ${show(error)}`);
        else assertNamesARefusedOption(error, refused, 'new Padlock');
        // The public constructor agrees with the resolver.
        let constructorError: unknown;
        try {
          new Padlock(opts as never);
        } catch (e) {
          constructorError = e;
        }
        assert.equal(constructorError === undefined, error === undefined);
      }),
      { numRuns: runs(2_000) },
    );
    assert.deepEqual(spy.sent, [], 'constructing a Padlock sends nothing');
  });

  it('names: 1 to 1 000 UTF-16 units of well-formed Unicode, anything else refused as `name`', { timeout: 60_000 }, () => {
    const names = fc.oneof(validName(), invalidNameString(), anyValue());
    fc.assert(
      fc.property(names, (name) => {
        let error: unknown;
        try {
          assert.equal(checkName(name), name);
        } catch (e) {
          error = e;
        }
        if (isValidName(name)) assert.equal(error, undefined, `valid name refused: ${show(error)}`);
        else assertNamesARefusedOption(error, new Map([['name', name]]), 'checkName');
      }),
      { numRuns: runs(2_000) },
    );
  });

  it('autoExtend: null is refused like any other non-boolean', () => {
    assert.throws(() => resolveAcquireOptions({ autoExtend: null }, { waitMs: 0, leaseMs: 30_000 }), (e: unknown) => e instanceof PadlockOptionError && e.option === 'autoExtend');
  });
});

/** One call of the public API with refused input. */
type BadCall =
  | { readonly kind: 'mutex' | 'fairMutex' | 'withLock-name'; readonly name: unknown }
  | { readonly kind: 'acquire' | 'tryAcquire' | 'withLock'; readonly options: unknown; readonly refused: ReadonlyMap<string, unknown> }
  | { readonly kind: 'withLock-fn'; readonly fn: unknown };

function badCall(): fc.Arbitrary<BadCall> {
  const badName = fc.oneof(invalidNameString(), anyValue().filter((v) => !isValidName(v)));
  const badOptions = acquireOptions()
    .map((options) => ({ options, refused: refusedAcquireOptions(options) }))
    .filter(({ refused }) => refused.size > 0);
  return fc.oneof(
    badName.map((name): BadCall => ({ kind: 'mutex', name })),
    badName.map((name): BadCall => ({ kind: 'fairMutex', name })),
    badName.map((name): BadCall => ({ kind: 'withLock-name', name })),
    fc.tuple(fc.constantFrom('acquire', 'tryAcquire', 'withLock') , badOptions).map(([kind, o]): BadCall => ({ kind, ...o })),
    anyValue()
      .filter((fn) => typeof fn !== 'function')
      .map((fn): BadCall => ({ kind: 'withLock-fn', fn })),
  );
}

function perform(padlock: Padlock, lock: Lockable, call: BadCall): unknown {
  switch (call.kind) {
    case 'mutex':
      return padlock.mutex(call.name as string);
    case 'fairMutex':
      return padlock.fairMutex(call.name as string);
    case 'withLock-name':
      return padlock.withLock(call.name as string, () => 1);
    case 'acquire':
      return lock.acquire(call.options as AcquireOptions);
    case 'tryAcquire':
      return lock.tryAcquire(call.options as AcquireOptions);
    case 'withLock':
      return lock.withLock(() => 1, call.options as AcquireOptions);
    case 'withLock-fn':
      return lock.withLock(call.fn as () => number);
  }
}

describe('properties: refused calls send nothing and never hang', () => {
  it('sequences of refused calls each fail with PadlockOptionError, and the client never connects', { timeout: 60_000 }, async () => {
    const spy = await spyClient();
    spies.push(spy);
    const padlock = new Padlock({ redis: spy.redis });
    const locks = [padlock.mutex('valid'), padlock.fairMutex('valid')] as const;
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(badCall(), fc.constantFrom(0, 1)), { minLength: 1, maxLength: 8 }), async (calls) => {
        for (const [call, which] of calls) {
          const lock = locks[which];
          const outcome = await outcomeOf(() => perform(padlock, lock, call), 1_000);
          const context = `${call.kind}: ${describeOutcome(outcome)}`;
          assert.equal(outcome.kind, 'error', context);
          if (outcome.kind !== 'error') return;
          const refused = 'refused' in call ? call.refused : call.kind === 'withLock-fn' ? new Map([['fn', call.fn]]) : new Map([['name', call.name]]);
          assertNamesARefusedOption(outcome.error, refused, context);
        }
        assert.deepEqual(spy.sent, [], 'no command was sent');
        assert.equal(spy.duplicates(), 0, 'no subscriber connection was opened');
        assert.equal(spy.redis.status, 'wait', 'the client was never asked to connect');
      }),
      { numRuns: runs(1_500) },
    );
    await padlock.close();
  });

  it('valid options with an already aborted signal reject with its reason, sending nothing', { timeout: 60_000 }, async () => {
    const spy = await spyClient();
    spies.push(spy);
    const padlock = new Padlock({ redis: spy.redis });
    const validOptions = acquireOptions().filter((o) => refusedAcquireOptions(o).size === 0 && typeof o === 'object' && o !== null);
    await fc.assert(
      fc.asyncProperty(validName(), validOptions, fc.constantFrom('acquire', 'tryAcquire', 'withLock'), anyValue(), async (name, options, method, reason) => {
        const controller = new AbortController();
        controller.abort(reason ?? 'aborted');
        const opts = { ...(options as AcquireOptions), signal: controller.signal };
        const lock = padlock.mutex(name);
        const outcome = await outcomeOf(() => (method === 'withLock' ? lock.withLock(() => 1, opts) : lock[method](opts)), 1_000);
        assert.equal(outcome.kind, 'error', describeOutcome(outcome));
        if (outcome.kind === 'error') assert.ok(Object.is(outcome.error, controller.signal.reason), `rejected with ${show(outcome.error)}`);
      }),
      { numRuns: runs(500) },
    );
    assert.deepEqual(spy.sent, []);
    assert.equal(spy.redis.status, 'wait');
    await padlock.close();
  });
});

/** Every key and channel of a lock (whatever kinds of lock add to the layout). */
function keysOf(keys: LockKeys): string[] {
  return Object.entries(keys).flatMap(([field, value]) => (field !== 'name' && typeof value === 'string' ? [value] : []));
}

describe('properties: key layout', () => {
  it('CRC16 and key slots match Redis Cluster on known vectors', { timeout: 60_000 }, () => {
    assert.equal(crc16(Buffer.from('123456789')), 0x31c3);
    for (const [key, slot] of [['foo', 12182], ['somekey', 11058], ['foo{hash_tag}', 2515], ['foo{}{bar}', 8363], ['foo{{bar}}zap', 4015], ['foo{bar}{zap}', 5061]] as const) {
      assert.equal(keySlot(key), slot, key);
    }
  });

  it('every key and channel of one lock shares one Cluster slot, and distinct locks get distinct keys', { timeout: 60_000 }, () => {
    const prefix = fc.string({ unit: fc.constantFrom(...'ab9_.:-'), minLength: 1, maxLength: 64 });
    fc.assert(
      fc.property(prefix, validName(), prefix, validName(), (prefixA, nameA, prefixB, nameB) => {
        const a = lockKeys(prefixA, nameA);
        const tag = hashTag(nameA);
        assert.ok(!/[{}]/.test(tag), 'the escaped name has no brace, so the tag ends where padlock ends it');
        assert.equal(tag.replace(/%7B|%7D|%25/g, (e) => (e === '%7B' ? '{' : e === '%7D' ? '}' : '%')), nameA, 'escaping is reversible');
        const slot = keySlot(a.lock);
        for (const key of [...keysOf(a), `${a.released}:client-1`]) assert.equal(keySlot(key), slot, key);
        assert.equal(slot, crc16(Buffer.from(tag, 'utf8')) % 16_384, 'the slot is that of the escaped name');
        const b = lockKeys(prefixB, nameB);
        const same = prefixA === prefixB && nameA === nameB;
        assert.equal(a.lock === b.lock, same, `${a.lock} vs ${b.lock}`);
        assert.equal(a.released === b.released, same);
      }),
      { numRuns: runs(2_000) },
    );
  });
});
