/**
 * The one-shot stop padlock's waits listen to (src/interrupt.ts), and `bound` stopped by it. The
 * waits that use them (aborting, closing, waitMs) are covered end to end in locks.test.ts.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { bound } from '../src/clock.js';
import { Interrupt } from '../src/interrupt.js';
import { Deadline, pendingDeadlines } from '../src/deadlines.js';

describe('Interrupt', () => {
  it('tells each listener once, with the first reason only, and never one that stopped listening', () => {
    const interrupt = new Interrupt();
    const heard: string[] = [];
    interrupt.onAbort(() => heard.push(`a:${String(interrupt.reason)}`));
    const stopB = interrupt.onAbort(() => heard.push('b'));
    interrupt.onAbort(() => heard.push(`c:${String(interrupt.reason)}`));
    stopB();
    assert.equal(interrupt.aborted, false);
    interrupt.abort('first');
    interrupt.abort('second');
    assert.equal(interrupt.aborted, true);
    assert.equal(interrupt.reason, 'first');
    assert.deepEqual(heard, ['a:first', 'c:first']);
    assert.throws(() => interrupt.throwIfAborted(), (error: unknown) => error === 'first');
  });

  it('a stale stop (its listener already gone) never removes the listener that came after it', () => {
    const interrupt = new Interrupt();
    const heard: string[] = [];
    const stopA = interrupt.onAbort(() => heard.push('a'));
    stopA();
    interrupt.onAbort(() => heard.push('b'));
    const stopC = interrupt.onAbort(() => heard.push('c'));
    stopA();
    stopC();
    stopC();
    interrupt.onAbort(() => heard.push('d'));
    interrupt.abort('now');
    assert.deepEqual(heard, ['b', 'd']);
  });

  it('does not call a listener added after it aborted (callers check `aborted` first)', () => {
    const interrupt = new Interrupt();
    interrupt.abort(new Error('gone'));
    let called = false;
    const stop = interrupt.onAbort(() => (called = true));
    stop();
    assert.equal(called, false);
  });

  it('stops a bound at once with its reason, and hands a value that comes later to `late`', async () => {
    const interrupt = new Interrupt();
    let deliver: (value: number) => void = () => undefined;
    const work = new Promise<number>((resolve) => (deliver = resolve));
    const late: number[] = [];
    const bounded = bound(work, { ms: 60_000, timeout: () => new Error('timed out'), interrupt, late: (v) => late.push(v) });
    interrupt.abort(new Error('caller gave up'));
    await assert.rejects(bounded, /caller gave up/);
    deliver(7);
    await work;
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(late, [7]);
  });

  it('rejects a bound at once when already aborted, and leaves a bound that settled first alone', async () => {
    const aborted = new Interrupt();
    aborted.abort(new Error('closed'));
    await assert.rejects(bound(Promise.resolve(1), { ms: 1_000, timeout: () => new Error('timed out'), interrupt: aborted }), /closed/);
    const later = new Interrupt();
    assert.equal(await bound(Promise.resolve(2), { ms: 1_000, timeout: () => new Error('timed out'), interrupt: later }), 2);
    later.abort(new Error('too late to matter'));
  });
});

describe('Deadline', () => {
  it('fires the ones not cancelled (head, middle and tail cancelled), oldest first, and leaves none pending', async () => {
    const before = pendingDeadlines();
    const fired: number[] = [];
    const deadlines = [0, 1, 2, 3, 4, 5].map((i) => new Deadline(5, () => fired.push(i)));
    for (const i of [5, 2, 0]) deadlines[i]?.cancel();
    deadlines[2]?.cancel(); // a second cancel changes nothing
    assert.equal(pendingDeadlines(), before + 3);
    await new Promise((resolve) => setTimeout(resolve, 30));
    assert.deepEqual(fired, [1, 3, 4]);
    assert.equal(pendingDeadlines(), before);
    deadlines[1]?.cancel(); // after it fired: nothing
    assert.equal(pendingDeadlines(), before);
  });
});
