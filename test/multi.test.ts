/**
 * The multi-lock (`padlock.multi(names)`) on every topology: all or nothing, one lease over every
 * name, the loss of any name aborting its signal, re-entry by context and by owner, and names in
 * different Cluster slots. Validation and the finer points of re-entry run once, on one server.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { Lease, LockLostError, LockNotHeldError, LockTimeoutError, MultiLease, PadlockClosedError, PadlockOptionError, type Padlock } from '../src/index.js';
import { lockKeys } from '../src/keys.js';
import { eventually } from './harness/redis.js';
import { isHeld, queuedOwners, readLock } from './harness/lock-state.js';
import { TOPOLOGIES, useTopology, type TopologyUnderTest } from './harness/suite.js';

/** Each topology with ioredis, and one server with node-redis too: the multi-lock adds no script of its own. */
const FACTORIES = TOPOLOGIES;

const lockKey = (name: string): string => lockKeys('padlock', name).lock;

/** Which of `names` Redis says are held (by anyone), as padlock's reads take it. */
function heldNames(topology: TopologyUnderTest, names: readonly string[]): Promise<string[]> {
  return topology.read(async (client) => {
    const held: string[] = [];
    for (const name of names) if (await isHeld(client, lockKey(name))) held.push(name);
    return held;
  });
}

/** The hold count `owner` has of each of `names` in Redis. */
function countsOf(topology: TopologyUnderTest, names: readonly string[], owner: string): Promise<number[]> {
  return topology.read(async (client) => {
    const counts: number[] = [];
    for (const name of names) {
      const state = await readLock(client, lockKey(name));
      counts.push(state?.owner === owner ? state.count : 0);
    }
    return counts;
  });
}

for (const factory of FACTORIES) {
  describe(`multi-lock · ${factory.name}`, () => {
    const topology = useTopology(factory);

    it('holds every name under one owner with one lease, fences each, and frees all on release', async () => {
      const a = await topology.padlock();
      const b = await topology.padlock();
      const names = ['m:one:c', 'm:one:a', 'm:one:b'];
      const multi = a.multi(names);
      assert.deepEqual(multi.names, ['m:one:a', 'm:one:b', 'm:one:c'], 'canonical order');
      const lease = await multi.acquire();
      assert.ok(lease instanceof Lease && lease instanceof MultiLease);
      assert.equal(lease.name, '["m:one:a","m:one:b","m:one:c"]');
      assert.deepEqual(lease.names, ['m:one:a', 'm:one:b', 'm:one:c']);
      assert.equal(lease.holdCount, 1);
      assert.ok(lease.isHeld);
      assert.ok(lease.expiresAt > Date.now());
      assert.deepEqual(await countsOf(topology, multi.names, lease.owner), [1, 1, 1], 'one owner holds every name once');
      assert.deepEqual([...lease.fences.keys()], multi.names);
      assert.equal(lease.fence, Math.max(...lease.fences.values()));
      for (const name of names) assert.equal(await b.mutex(name).tryAcquire(), null, `${name} excludes another owner`);
      assert.equal(await b.multi(['m:one:b']).tryAcquire(), null, 'a multi-lock over one of its names too');
      assert.equal(await multi.isLocked(), true);
      await lease.release();
      await lease.release(); // a second release does nothing
      assert.equal(lease.isHeld, false);
      assert.deepEqual(await heldNames(topology, names), []);
      assert.equal(await multi.isLocked(), false);
      const again = await b.multi(names).acquire();
      for (const name of multi.names) assert.ok(again.fences.get(name)! > lease.fences.get(name)!, `${name}: a greater fence`);
      assert.ok(again.fence > lease.fence, 'the largest fence grows with each fresh acquisition of the set');
      await again.release();
    });

    it('works with its names on different Cluster slots (and masters)', async () => {
      const p = await topology.padlock();
      const names = ['m:slot:1', 'm:slot:2', 'm:slot:3', 'm:slot:4', 'm:slot:5', 'm:slot:6'];
      if (topology.name.startsWith('Cluster')) {
        const masters = new Set(await Promise.all(names.map(async (name) => (await topology.mastersOf(lockKey(name)))[0]?.port)));
        assert.ok(masters.size > 1, `the names spread over ${masters.size} master(s)`);
      }
      const lease = await p.multi(names).acquire();
      assert.deepEqual(await heldNames(topology, names), names);
      await lease.extend(60_000);
      await lease.release();
      assert.deepEqual(await heldNames(topology, names), []);
    });

    it('tryAcquire leaves nothing held and joins no queue when one name is busy', async () => {
      const a = await topology.padlock();
      const b = await topology.padlock();
      const busy = await b.mutex('m:try:b').acquire();
      assert.equal(await a.multi(['m:try:c', 'm:try:b', 'm:try:a']).tryAcquire(), null);
      assert.deepEqual(await heldNames(topology, ['m:try:a', 'm:try:b', 'm:try:c']), ['m:try:b'], 'm:try:a was given back');
      assert.deepEqual(await topology.read((client) => queuedOwners(client, lockKeys('padlock', 'm:try:b').queue)), [], 'nobody queued on the busy name');
      await busy.release();
      const lease = await a.multi(['m:try:c', 'm:try:b', 'm:try:a']).tryAcquire();
      assert.ok(lease);
      await lease.release();
    });

    it('a time-out part-way rejects with LockTimeoutError naming the multi-lock, after giving back what it took', async () => {
      const a = await topology.padlock();
      const b = await topology.padlock();
      const busy = await b.mutex('m:timeout:b').acquire();
      const multi = a.multi(['m:timeout:a', 'm:timeout:b', 'm:timeout:c']);
      await assert.rejects(multi.acquire({ waitMs: 200 }), (error: unknown) => error instanceof LockTimeoutError && error.lock === multi.name);
      assert.deepEqual(await heldNames(topology, multi.names), ['m:timeout:b']);
      await busy.release();
    });

    it('an abort part-way rejects with the reason, after giving back what it took and leaving the queue', async () => {
      const a = await topology.padlock();
      const b = await topology.padlock();
      const busy = await b.mutex('m:abort:b').acquire();
      const controller = new AbortController();
      const multi = a.multi(['m:abort:a', 'm:abort:b']);
      const acquiring = multi.acquire({ signal: controller.signal });
      assert.ok(await eventually(async () => (await heldNames(topology, ['m:abort:a'])).length === 1), 'm:abort:a is taken first');
      assert.ok(await eventually(async () => (await topology.read((client) => queuedOwners(client, lockKeys('padlock', 'm:abort:b').queue))).length === 1), 'then it queues on m:abort:b');
      const reason = new Error('stop');
      controller.abort(reason);
      await assert.rejects(acquiring, (error) => error === reason);
      assert.deepEqual(await heldNames(topology, multi.names), ['m:abort:b']);
      assert.ok(await eventually(async () => (await topology.read((client) => queuedOwners(client, lockKeys('padlock', 'm:abort:b').queue))).length === 0), 'the queue was left');
      await busy.release();
    });

    it('waits for a busy name and gets every name once it is free', async () => {
      const a = await topology.padlock();
      const b = await topology.padlock();
      const busy = await b.mutex('m:wait:a').acquire();
      const acquiring = a.multi(['m:wait:a', 'm:wait:b']).acquire({ waitMs: 30_000 });
      assert.ok(await eventually(async () => (await topology.read((client) => queuedOwners(client, lockKeys('padlock', 'm:wait:a').queue))).length === 1));
      await busy.release();
      const lease = await acquiring;
      assert.deepEqual(await heldNames(topology, lease.names), ['m:wait:a', 'm:wait:b']);
      await lease.release();
    });

    it('the loss of one name aborts the signal with its LockLostError, and release() frees the others', async () => {
      const a = await topology.padlock();
      const b = await topology.padlock();
      const lease = await a.multi(['m:lost:a', 'm:lost:b', 'm:lost:c']).acquire({ leaseMs: 1_000, autoExtend: true });
      const aborted = once(lease.signal, 'abort');
      assert.equal(await b.mutex('m:lost:b').forceRelease(), true);
      await aborted;
      assert.ok(lease.signal.reason instanceof LockLostError);
      assert.equal(lease.signal.reason.lock, 'm:lost:b');
      assert.equal(lease.isHeld, false);
      await assert.rejects(lease.extend(), LockNotHeldError);
      await assert.rejects(lease.release(), LockNotHeldError);
      assert.deepEqual(await heldNames(topology, lease.names), [], 'the names still held were released');
    });

    it('withLock rejects with the LockLostError when a name is lost while fn runs', async () => {
      const a = await topology.padlock();
      const b = await topology.padlock();
      await assert.rejects(
        a.multi(['m:wl:a', 'm:wl:b']).withLock(async (lease) => {
          const aborted = once(lease.signal, 'abort');
          await b.mutex('m:wl:a').forceRelease();
          await aborted;
          return 'done';
        }, { leaseMs: 1_000, autoExtend: true }),
        (error: unknown) => error instanceof LockLostError && error.lock === 'm:wl:a',
      );
      assert.deepEqual(await heldNames(topology, ['m:wl:a', 'm:wl:b']), []);
    });

    it('re-enters by context (the same multi-lock, a mutex of one name) and by owner token, from another Padlock', async () => {
      const a = await topology.padlock();
      const b = await topology.padlock();
      const names = ['m:re:a', 'm:re:b'];
      await a.multi(names).withLock(async (outer) => {
        const inner = await a.multi(['m:re:b', 'm:re:a']).acquire();
        assert.equal(inner.owner, outer.owner);
        assert.equal(inner.holdCount, 2);
        assert.deepEqual(inner.fences, outer.fences, 're-entries keep the fences');
        const nested = await a.mutex('m:re:a').acquire();
        assert.equal(nested.owner, outer.owner);
        assert.equal(nested.holdCount, 3);
        assert.deepEqual(await countsOf(topology, names, outer.owner), [3, 2]);
        await nested.release();
        await inner.release();
        const remote = await b.multi(names).acquire({ owner: outer.owner });
        assert.equal(remote.holdCount, 2);
        assert.deepEqual(await countsOf(topology, names, outer.owner), [2, 2]);
        await remote.release();
        assert.deepEqual(await countsOf(topology, names, outer.owner), [1, 1]);
      });
      assert.deepEqual(await heldNames(topology, names), []);
    });
  });
}

describe('multi-lock · one server: validation, folding, partial re-entry', () => {
  const [single] = TOPOLOGIES.filter((factory) => factory.name === 'single server · ioredis');
  if (single === undefined) return;
  const topology = useTopology(single);

  it('refuses bad names with a typed PadlockOptionError before anything is sent', async () => {
    const p = await topology.padlock();
    const refused = (names: unknown, option: string): void => {
      assert.throws(() => p.multi(names as string[]), (error: unknown) => error instanceof PadlockOptionError && error.option === option && error.value === (option === 'names' ? names : (names as unknown[])[Number(/\d+/.exec(option)?.[0])]));
    };
    refused(undefined, 'names');
    refused('a', 'names');
    refused([], 'names');
    refused(new Set(['a']), 'names');
    refused(['a', ''], 'names[1]');
    refused(['a', 7], 'names[1]');
    refused(['x'.repeat(1_001)], 'names[0]');
    refused(['ok', '\ud800'], 'names[1]');
    const multi = p.multi(['v:a', 'v:b']);
    await assert.rejects(multi.acquire({ waitMs: -1 }), (error: unknown) => error instanceof PadlockOptionError && error.option === 'waitMs');
    await assert.rejects(multi.tryAcquire({ owner: 'short' }), (error: unknown) => error instanceof PadlockOptionError && error.option === 'owner');
    await assert.rejects(multi.withLock('no' as unknown as () => void), (error: unknown) => error instanceof PadlockOptionError && error.option === 'fn');
    const lease = await multi.acquire();
    await assert.rejects(lease.extend(-5), (error: unknown) => error instanceof PadlockOptionError && error.option === 'ms');
    await lease.release();
    assert.deepEqual(await heldNames(topology, ['v:a', 'v:b']), [], 'nothing was left behind');
  });

  it('folds duplicate names: each is locked once', async () => {
    const p = await topology.padlock();
    const multi = p.multi(['d:b', 'd:a', 'd:b', 'd:a']);
    assert.deepEqual(multi.names, ['d:a', 'd:b']);
    const lease = await multi.acquire();
    assert.deepEqual(await countsOf(topology, ['d:a', 'd:b'], lease.owner), [1, 1]);
    await lease.release();
    assert.deepEqual(await heldNames(topology, ['d:a', 'd:b']), []);
  });

  it('re-entry by an owner that does not hold every name rejects with LockNotHeldError and leaves the counts as they were', async () => {
    const p = await topology.padlock();
    const q = await topology.padlock();
    const first = await p.mutex('o:a').acquire();
    await assert.rejects(q.multi(['o:a', 'o:b']).acquire({ owner: first.owner }), (error: unknown) => error instanceof LockNotHeldError && error.lock === 'o:b');
    assert.deepEqual(await countsOf(topology, ['o:a', 'o:b'], first.owner), [1, 0]);
    await first.release();
  });

  it('inside a mutex, a multi-lock re-enters the name held and takes the others under the same owner', async () => {
    const p = await topology.padlock();
    await p.mutex('c:b').withLock(async (outer) => {
      const lease = await p.multi(['c:a', 'c:b', 'c:c']).acquire();
      assert.equal(lease.owner, outer.owner);
      assert.equal(lease.holdCount, 1, 'a fresh multi-lock, though one name was re-entered');
      assert.equal(lease.fences.get('c:b'), outer.fence);
      assert.deepEqual(await countsOf(topology, ['c:a', 'c:b', 'c:c'], outer.owner), [1, 2, 1]);
      await lease.release();
      assert.deepEqual(await countsOf(topology, ['c:a', 'c:b', 'c:c'], outer.owner), [0, 1, 0]);
    });
    assert.deepEqual(await heldNames(topology, ['c:a', 'c:b', 'c:c']), []);
  });

  it('inside a multi-lock, another multi-lock sharing a name re-enters it', async () => {
    const p = await topology.padlock();
    await p.multi(['s:a', 's:b']).withLock(async (outer) => {
      await p.multi(['s:b', 's:c']).withLock(async (inner) => {
        assert.equal(inner.owner, outer.owner);
        assert.deepEqual(await countsOf(topology, ['s:a', 's:b', 's:c'], outer.owner), [1, 2, 1]);
      });
    });
    assert.deepEqual(await heldNames(topology, ['s:a', 's:b', 's:c']), []);
  });

  it('isLocked is true when any name is locked; forceRelease frees all and says whether any was held', async () => {
    const p = await topology.padlock();
    const multi = p.multi(['f:a', 'f:b', 'f:c']);
    assert.equal(await multi.isLocked(), false);
    assert.equal(await multi.forceRelease(), false);
    const one = await p.mutex('f:c').acquire();
    assert.equal(await multi.isLocked(), true, 'one name of three is enough');
    assert.equal(await multi.forceRelease(), true);
    assert.equal(await multi.isLocked(), false);
    await assert.rejects(one.release(), LockNotHeldError);
    const lease = await multi.acquire();
    assert.equal(await multi.forceRelease(), true);
    assert.deepEqual(await heldNames(topology, multi.names), []);
    await assert.rejects(lease.release(), LockNotHeldError);
  });

  it('many callers in one process asking for overlapping sets in every order all finish, never two inside one name', async () => {
    const p = await topology.padlock();
    const q = await topology.padlock();
    const inside = new Map<string, number>();
    const sets = [['k:a', 'k:b', 'k:c'], ['k:c', 'k:b'], ['k:b', 'k:a'], ['k:c', 'k:a'], ['k:a', 'k:c', 'k:b']];
    let overlaps = 0;
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        (i % 2 === 0 ? p : q).multi(sets[i % sets.length]!).withLock(async (lease) => {
          for (const name of lease.names) {
            if ((inside.get(name) ?? 0) > 0) overlaps++;
            inside.set(name, (inside.get(name) ?? 0) + 1);
          }
          await new Promise((resolve) => setImmediate(resolve));
          for (const name of lease.names) inside.set(name, (inside.get(name) ?? 1) - 1);
        }),
      ),
    );
    assert.equal(overlaps, 0);
  });

  it('a name taken early and lost while a later one is awaited ends the wait with its LockLostError, nothing left held', async () => {
    const p = await topology.padlock();
    const q = await topology.padlock();
    const busy = await q.mutex('e:b').acquire();
    const acquiring = p.multi(['e:a', 'e:b']).acquire({ leaseMs: 1_000, autoExtend: true });
    assert.ok(await eventually(async () => (await topology.read((client) => queuedOwners(client, lockKeys('padlock', 'e:b').queue))).length === 1), 'it holds e:a and waits for e:b');
    const rejected = assert.rejects(acquiring, (error: unknown) => error instanceof LockLostError && error.lock === 'e:a');
    assert.equal(await q.mutex('e:a').forceRelease(), true);
    await rejected;
    assert.deepEqual(await heldNames(topology, ['e:a', 'e:b']), ['e:b']);
    assert.ok(await eventually(async () => (await topology.read((client) => queuedOwners(client, lockKeys('padlock', 'e:b').queue))).length === 0), 'it left the queue of e:b');
    await busy.release();
  });

  it('close() rejects a multi-lock waiting part-way and releases what it took', async () => {
    const p = await topology.padlock();
    const q: Padlock = await topology.padlock();
    const busy = await q.mutex('z:b').acquire();
    const acquiring = p.multi(['z:a', 'z:b']).acquire();
    assert.ok(await eventually(async () => (await heldNames(topology, ['z:a'])).length === 1));
    const rejected = assert.rejects(acquiring, (error: unknown) => error instanceof PadlockClosedError);
    await p.close();
    await rejected;
    assert.deepEqual(await heldNames(topology, ['z:a', 'z:b']), ['z:b']);
    await busy.release();
  });
});
