/**
 * A wait rides through a failover it has time for. A holder with a short lease, a waiter with a long
 * `waitMs`, and the lock's server killed under them: on a Redis Cluster (3 masters with a replica
 * each, `cluster-node-timeout` 2 s) and under Sentinel (a primary, a replica, 3 sentinels). The
 * waiter gets the lock once its replica is promoted, instead of failing with the errors of the
 * failover (CLUSTERDOWN, "Too many Cluster redirections", a closed connection); its Padlock reports
 * the outage as a few `error` events, not one per failed reconnect.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { lockKeys } from '../src/keys.js';
import { LockLostError, LockNotHeldError, Padlock, RedisCommandError, RedisUnavailableError, type Lease } from '../src/index.js';
import { startCluster, startSentinelSet, type RedisCluster, type SentinelSet } from './harness/topologies.js';
import { commandCalls, connect, delay, eventually, startServer } from './harness/redis.js';
import { inflict, recover } from './harness/faults.js';
import { parseLock } from './harness/lock-state.js';
import type { RedisClient } from '../src/stores/redis/adapters/clients.js';
import type { PadlockOptions } from '../src/options.js';
import { monotonicNow } from '../src/clock.js';
import { freePort } from '../src/devserver/redis-server.js';
import type { UnreachedReport } from './fixtures/unreached-redis.js';
import { firstMessage, forkFixture } from './harness/children.js';

/** At most this many `error` events for one outage (a few distinct failures, never a stream). */
const MAX_ERROR_EVENTS = 3;

const padlocks: Padlock[] = [];
after(() => Promise.all(padlocks.map((p) => p.close())));

/** A Padlock on `redis` whose `error` events are collected. */
function padlockOn(redis: RedisClient, options: Omit<PadlockOptions, 'redis'>): { padlock: Padlock; errors: Error[] } {
  const padlock = new Padlock({ redis, ...options });
  padlocks.push(padlock);
  const errors: Error[] = [];
  padlock.on('error', (error) => errors.push(error));
  return { padlock, errors };
}

/**
 * Releases the holder's lease if the failover left it held. A hold the failover took away was
 * reported lost to its holder (its renewals failed past its local deadline, or found it gone).
 */
async function letGo(lease: Lease): Promise<void> {
  if (!lease.isHeld) assert.ok(lease.signal.reason instanceof LockLostError, 'a hold that is gone was reported lost');
  await lease.release().catch((error: unknown) => {
    if (!(error instanceof LockNotHeldError)) throw error;
  });
}

/**
 * Holder and waiter on `client()`s; `fail` kills the lock's server and resolves once a replica has
 * taken over. The waiter (waitMs 60 s) must end up with the lock, its Padlock with few `error` events.
 */
async function waiterRidesThrough(name: string, client: () => RedisClient, queueLength: () => Promise<number>, fail: () => Promise<void>): Promise<{ waitedMs: number; errors: Error[] }> {
  const holder = padlockOn(client(), { leaseMs: 3_000 });
  // Each call the waiter sends may wait 1 s for its reply: a failover lasts longer than that, so
  // every call sent in it fails, whichever way the client reports it (an error, or no reply).
  const waiter = padlockOn(client(), { replyTimeoutMs: 1_000 });
  const lease = await holder.padlock.mutex(name).acquire();
  const started = Date.now();
  const waiting = waiter.padlock.mutex(name).acquire({ waitMs: 60_000 });
  let ended = false;
  void waiting.then(() => (ended = true), () => (ended = true));
  assert.ok(await eventually(async () => ended || (await queueLength()) === 1), 'the waiter queued');
  await fail();
  await letGo(lease);
  const got = await waiting;
  assert.equal(got.isHeld, true);
  assert.ok(got.fence > lease.fence, 'a fresh hold, with a greater fence');
  await got.release();
  assert.ok(waiter.errors.length <= MAX_ERROR_EVENTS, `${waiter.errors.length} error events on the waiter's Padlock: ${waiter.errors.map((e) => e.message).join(' | ')}`);
  assert.ok(holder.errors.length <= MAX_ERROR_EVENTS, `${holder.errors.length} error events on the holder's Padlock: ${holder.errors.map((e) => e.message).join(' | ')}`);
  return { waitedMs: Date.now() - started, errors: waiter.errors };
}

describe('a wait rides through a Redis Cluster failover', () => {
  let cluster: RedisCluster;
  before(async () => {
    // A failover takes ~2 node time-outs: longer than ioredis's own retries (16 redirections 100 ms apart).
    cluster = await startCluster({ nodeTimeoutMs: 2_000 });
  });

  it('the lock\'s master is killed: the waiter gets the lock once its replica is promoted, with few error events', async (t) => {
    const name = 'failover:cluster';
    const keys = lockKeys('padlock', name);
    const master = await cluster.nodeForKey(keys.lock);
    const reader = cluster.client();
    let failoverMs = 0;
    const { waitedMs, errors } = await waiterRidesThrough(
      name,
      () => cluster.client(),
      () => reader.llen(keys.queue),
      async () => {
        failoverMs = (await cluster.failover(master, 'kill')).ms;
      },
    );
    reader.disconnect();
    t.diagnostic(`failover took ${failoverMs} ms; the waiter got the lock after ${waitedMs} ms, with ${errors.length} error event(s)`);
    await cluster.revive(master);
  });
});

describe('a wait rides through a Sentinel failover', () => {
  let set: SentinelSet;
  before(async () => {
    set = await startSentinelSet({ replicas: 1 });
  });

  it('the primary is killed: the waiter gets the lock once the replica is promoted, with few error events', async (t) => {
    const name = 'failover:sentinel';
    const keys = lockKeys('padlock', name);
    const reader = set.client();
    let failoverMs = 0;
    const { waitedMs, errors } = await waiterRidesThrough(
      name,
      () => set.client(),
      () => reader.llen(keys.queue),
      async () => {
        failoverMs = (await set.failover('kill')).ms;
      },
    );
    reader.disconnect();
    t.diagnostic(`failover took ${failoverMs} ms; the waiter got the lock after ${waitedMs} ms, with ${errors.length} error event(s)`);
  });
});

describe('calls that got no reply in time run late', () => {
  it('a server silent for 4.5 s (SIGSTOP): the waiter\'s unanswered attempt runs when it resumes, and the hold it got is not given back by its late reply', async () => {
    const server = await startServer();
    const admin = connect(server);
    const name = 'failover:late';
    const keys = lockKeys('padlock', name);
    const holder = padlockOn(connect(server), { leaseMs: 1_000 });
    // Each attempt gets 3 s. The waiter's first attempt in the silence (within a heartbeat, 1 s)
    // goes unanswered; the next, sent 25-50 ms after that one is given up on, is still waiting for
    // its reply when the server resumes. Both run then, in order: the first takes the lock (its
    // reply is late), the second reads that hold back (its reply is the wait's).
    const waiter = padlockOn(connect(server), { replyTimeoutMs: 3_000 });
    const lease = await holder.padlock.mutex(name).acquire();
    const waiting = waiter.padlock.mutex(name).acquire({ waitMs: 30_000 });
    assert.ok(await eventually(async () => (await admin.llen(keys.queue)) === 1), 'the waiter queued');
    await inflict(server, 'pause');
    await delay(4_500); // the holder's lease runs out meanwhile, on both clocks
    await recover(server, 'pause');
    const got = await waiting;
    await letGo(lease);
    // Every late reply has come by the time a later call is answered on the same connection.
    await delay(300);
    const state = parseLock(String(await admin.get(keys.lock)));
    assert.equal(state?.owner, got.owner, 'the waiter holds the lock in Redis');
    assert.equal(state.count, 1, 'once');
    assert.equal(got.isHeld, true);
    assert.equal(await holder.padlock.mutex(name).tryAcquire(), null, 'nobody else gets it');
    await got.release();
    assert.equal(await holder.padlock.mutex(name).isLocked(), false, 'released: no hold left behind by a late attempt');
    assert.equal(await admin.llen(keys.queue), 0, 'no entry left in the queue');
  });
});

describe('a hard failure is not ridden through', () => {
  it('a script error (a foreign value at the lock\'s key: WRONGTYPE) fails the wait at once, after one attempt', async () => {
    const server = await startServer();
    const admin = connect(server);
    const name = 'failover:hard';
    await admin.rpush(lockKeys('padlock', name).lock, 'not a lock');
    const { padlock, errors } = padlockOn(connect(server), {});
    // Before the wait: the liveness key's write (and its script's load) are not the wait's attempts.
    await padlock.mutex('failover:hard:warm').tryAcquire().then((lease) => lease?.release());
    const scripts = async (): Promise<number> => (await commandCalls(admin, 'evalsha')) + (await commandCalls(admin, 'eval'));
    const before = await scripts();
    // Retried, it would be sent again and again for the 3 s of the wait.
    await assert.rejects(padlock.mutex(name).acquire({ waitMs: 3_000 }), (e: unknown) => e instanceof RedisCommandError && /WRONGTYPE/.test(e.message));
    // INFO itself is no script; the attempt is one EVALSHA (and an EVAL when the server had not the script).
    assert.ok((await scripts()) - before <= 2, `${(await scripts()) - before} script calls for one attempt`);
    assert.deepEqual(errors, []);
  });

  it('a client closed for good (ioredis `end`) fails the wait at once: no reconnect is coming', async () => {
    const server = await startServer();
    const client = connect(server);
    const { padlock } = padlockOn(client, {});
    await padlock.mutex('failover:closed:warm').tryAcquire().then((lease) => lease?.release());
    client.disconnect();
    const started = Date.now();
    await assert.rejects(padlock.mutex('failover:closed').acquire({ waitMs: 60_000 }), (e: unknown) => e instanceof RedisUnavailableError);
    // Ridden through, it would have tried for the whole minute.
    assert.ok(Date.now() - started < 30_000, `the wait ended after ${Date.now() - started} ms`);
  });

  // One client library per adapter (ioredis and iovalkey share one; node-redis's client another),
  // each in a process of its own: nothing of padlock's may keep it alive once the client is closed.
  for (const library of ['ioredis', 'node-redis'] as const) {
    it(`a Padlock that never reached Redis (nothing listens on the port), ${library}: each wait fails at once naming the address and the refusal, close() is immediate, the process exits by itself`, async () => {
      const port = await freePort();
      const child = forkFixture('unreached-redis', [library, String(port)]);
      const exited = new Promise<number>((resolve) => child.once('exit', () => resolve(monotonicNow())));
      const report = await firstMessage<UnreachedReport>(child);
      const reportedAt = monotonicNow();
      const summary = JSON.stringify(report);
      assert.equal(report.calls.length, 2, summary);
      for (const call of report.calls) {
        assert.equal(call.name, 'RedisUnavailableError', summary);
        // Refused: at once, not at waitMs (1 s), nor at replyTimeoutMs.
        assert.ok(call.ms < 500, summary);
        assert.match(call.message, new RegExp(`cannot reach 127\\.0\\.0\\.1:${port}: connection refused`), summary);
        assert.equal(call.causeCode, 'ECONNREFUSED', summary);
        assert.match(call.causeMessage, new RegExp(`127\\.0\\.0\\.1:${port}`), summary);
      }
      assert.ok(report.closeMs < 200, summary);
      const exitMs = (await exited) - reportedAt;
      assert.ok(exitMs < 1_500, `the process exited ${Math.round(exitMs)} ms after closing`);
    });
  }

  it('a Padlock whose server never answered (stopped before the client connected): the wait fails within its bound, and close() does not wait for the unanswered write', async () => {
    const server = await startServer();
    await inflict(server, 'pause');
    try {
      // The liveness write's own bound (replyTimeoutMs, 5 s) outlasts the wait's (its grace, 1 s).
      const { padlock } = padlockOn(connect(server), {});
      const started = monotonicNow();
      await assert.rejects(padlock.mutex('failover:silent').acquire({ waitMs: 500 }), (e: unknown) => e instanceof RedisUnavailableError);
      assert.ok(monotonicNow() - started < 1_000 + 500, `the wait ended after ${Math.round(monotonicNow() - started)} ms`);
      const closing = monotonicNow();
      await padlock.close();
      assert.ok(monotonicNow() - closing < 200, `close() took ${Math.round(monotonicNow() - closing)} ms`);
    } finally {
      await recover(server, 'pause');
    }
  });
});
