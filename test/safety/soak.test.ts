/**
 * The soak, bounded for CI: random shapes and faults for ~10 s (`npm run soak` runs it for minutes).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { connect, startServer } from '../harness/redis.js';
import { soak } from './soak-run.js';

describe('soak (bounded)', () => {
  it('random faults for 10 s: every round safe and live', async (t) => {
    const seed = 20_261_121;
    const result = await soak({ provider: { startServer, connect }, durationMs: 10_000, seed, maxWorkers: 4, log: (line) => t.diagnostic(line) });
    t.diagnostic(`${result.rounds} rounds, ${result.sections} sections, faults ${JSON.stringify(result.faults)}`);
    assert.ok(result.rounds >= 3, `ran ${result.rounds} rounds`);
    assert.deepEqual(result.failures, []);
  });
});
