/**
 * How a Redlock round gathers its masters' answers (src/stores/redis/topology/answers.ts): what the
 * round decides on, and what the clean-ups that run after it see. The rounds themselves, on real
 * masters, are in redlock.test.ts, redlock-faults.test.ts and redlock-restart.test.ts.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Answers } from '../src/stores/redis/topology/answers.js';

describe('Answers', () => {
  it('decides on the answers that decide it; later ones change nothing it saw, and go to the listeners that came after', async () => {
    const answers = new Answers<string>(5);
    const decided = answers.decide((got) => got.filter((a) => a === 'yes').length >= 2);
    answers.add('no');
    answers.add('yes');
    answers.add('yes');
    const seen = await decided;
    assert.deepEqual(seen, ['no', 'yes', 'yes']);
    answers.add('late');
    assert.deepEqual(seen, ['no', 'yes', 'yes'], 'the decision is a copy');
    const after: string[] = [];
    answers.forEach((a) => after.push(a), seen.length);
    assert.deepEqual(after, ['late'], 'an answer that came between the decision and the listener is not lost');
    const all: string[] = [];
    answers.forEach((a) => all.push(a));
    let whenAll: readonly string[] = [];
    answers.whenAll((got) => (whenAll = [...got]));
    assert.deepEqual(whenAll, [], 'not all in yet');
    answers.add('last');
    assert.deepEqual(after, ['late', 'last']);
    assert.deepEqual(all, ['no', 'yes', 'yes', 'late', 'last']);
    assert.deepEqual(whenAll, ['no', 'yes', 'yes', 'late', 'last']);
    assert.deepEqual(await answers.all(), whenAll, 'asked once all are in: at once');
  });

  it('decides once every answer is in, even when they never decide it; asked after they came, at once', async () => {
    const undecided = new Answers<number>(2);
    const outcome = undecided.decide(() => false);
    undecided.add(1);
    undecided.add(2);
    assert.deepEqual(await outcome, [1, 2]);
    const early = new Answers<number>(3);
    early.add(7);
    assert.deepEqual(await early.decide((got) => got.includes(7)), [7]);
  });
});
