/**
 * Calls made while Redis is down end within padlock's own bounds, whichever client library (and
 * ioredis major) the caller passed in, and say that Redis was unreachable (with the client's error,
 * or padlock's own "no reply", as the cause). The bounds asserted are the documented ones plus a second of slack: a
 * correct program cannot miss them on a loaded machine; before padlock bounded its own calls, these
 * took 10–74 s (see test/harness/outage.ts, and `npm run bench:outage` for the measured table).
 */
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { CALLS, CLIENTS, FAULTS, measure, type Call, type ClientVersion, type Fault, type Outcome } from './harness/outage.js';

/** The README's bounds: reply time-out 5 s, grace 1 s, close() 5 s. */
const REPLY_TIMEOUT_MS = 5_000;
const GRACE_MS = 1_000;
const SLACK_MS = 1_000;

interface Expected {
  /** The error class the call ends with. */
  readonly error: string;
  /** It ends before this many ms. */
  readonly withinMs: number;
}

const expected: Record<Call, Expected> = {
  'acquire()': { error: 'RedisUnavailableError', withinMs: REPLY_TIMEOUT_MS + SLACK_MS },
  'acquire({ waitMs: 1000 })': { error: 'RedisUnavailableError', withinMs: 1_000 + GRACE_MS + SLACK_MS },
  'queued acquire({ waitMs: 8000 })': { error: 'RedisUnavailableError', withinMs: 8_000 + GRACE_MS + SLACK_MS },
  'abort a queued wait': { error: 'Error', withinMs: SLACK_MS },
  'close() with a hold and a waiter': { error: 'resolved', withinMs: 5_000 + SLACK_MS },
  'release()': { error: 'RedisUnavailableError', withinMs: REPLY_TIMEOUT_MS + SLACK_MS },
  'tryAcquire()': { error: 'RedisUnavailableError', withinMs: GRACE_MS + SLACK_MS },
};

const outcomes = new Map<string, Outcome>();
const key = (fault: Fault, client: ClientVersion, call: Call): string => `${fault} ${client} ${call}`;

before(async () => {
  // Each scenario has its own server and mostly sleeps: all of them side by side take ~10 s.
  const runs = FAULTS.flatMap((fault) => CLIENTS.flatMap((client) => CALLS.map((call) => ({ fault, client, call }))));
  const results = await Promise.all(runs.map(({ fault, client, call }) => measure(client, fault, call)));
  runs.forEach(({ fault, client, call }, i) => outcomes.set(key(fault, client, call), results[i]!));
});

for (const fault of FAULTS) {
  for (const client of CLIENTS) {
    describe(`Redis ${fault}, ${client}`, () => {
      for (const call of CALLS) {
        it(`${call} ends with ${expected[call].error} within ${expected[call].withinMs} ms`, () => {
          const outcome = outcomes.get(key(fault, client, call))!;
          const summary = JSON.stringify(outcome);
          assert.equal(outcome.error, expected[call].error, summary);
          assert.ok(outcome.ms < expected[call].withinMs, summary);
          if (outcome.error === 'RedisUnavailableError') {
            assert.ok(outcome.cause !== undefined && !/^(Lock|Padlock)/.test(outcome.cause), `the cause is the client's error or padlock's own "no reply": ${summary}`);
          }
        });
      }
    });
  }
}
