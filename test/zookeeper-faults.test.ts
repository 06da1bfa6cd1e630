/**
 * padlock on a 3-server ZooKeeper ensemble under faults, judged by the safety checker (test/safety):
 * every critical section reads and writes a fenced counter (in Redis) with its lease's fence, and
 * the checker finds no two valid holds overlapping, no stale write accepted, no lost update.
 *
 * Rows: the leader killed while a lock is held; a follower killed; a majority lost; the whole
 * ensemble down while Padlocks wait; a release whose answer is lost in a leader change; a holder
 * process killed; a holder process frozen past its session (and taking locks again on a new one).
 */
import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import zookeeper from 'node-zookeeper-client';
import type { Client } from 'node-zookeeper-client';
import { LockLostError, LockNotHeldError, LockTimeoutError, Padlock, StoreUnavailableError, ZooKeeperUnavailableError } from '../src/index.js';
import { monotonicNow } from '../src/clock.js';
import { connect, delay, eventually, lossOf, startServer } from './harness/redis.js';
import { forkFixture } from './harness/children.js';
import { fourLetters, startZooKeeper, type Ensemble } from './harness/zookeeper.js';
import { closeClient, connected, zooKeeperClient, zooKeeperLeftovers } from './harness/zookeeper-store-target.js';
import { check, describeReport, isSafe } from './safety/checker.js';
import { FencedStore } from './safety/fenced-store.js';
import { fromWire, type SectionRecord, type WireSection } from './safety/records.js';

/** The session time-out of every client here: a dead holder blocks its lock this long at most. */
const SESSION_MS = 3_000;

const clients: Client[] = [];
const padlocks: Padlock[] = [];

/** A Padlock with a client (a session) of its own; with `renewing`, a factory makes it a new one when its session expires. */
function padlockOn(ensemble: Ensemble, options: { replyTimeoutMs?: number; sessionMs?: number; renewing?: boolean } = {}): Padlock {
  const sessionMs = options.sessionMs ?? SESSION_MS;
  const client = zooKeeperClient(ensemble, sessionMs);
  clients.push(client);
  const newClient = (): Client => zookeeper.createClient(ensemble.connectString, { sessionTimeout: sessionMs, spinDelay: 100 });
  const padlock = new Padlock({ zookeeper: client, replyTimeoutMs: options.replyTimeoutMs, zookeeperFactory: options.renewing === true ? newClient : undefined });
  padlocks.push(padlock);
  return padlock;
}

/**
 * Makes the answer of `client`'s next delete (a remove, or a transaction of removes) lost after the
 * delete landed: `fault` runs (a server killed), and once the client's connection dropped and came
 * back, and a renewal period went by (as an election can take), the caller is told "connection
 * lost" instead of the success, as when a reply dies with its server.
 */
function loseNextDeleteAnswer(client: Client, fault: () => Promise<void>): void {
  const original = { remove: client.remove.bind(client), transaction: client.transaction.bind(client) };
  const restore = (): void => {
    client.remove = original.remove;
    client.transaction = original.transaction;
  };
  const lose = (error: unknown, callback: (error: unknown) => void): void => {
    restore();
    if (error !== null && error !== undefined) return callback(error);
    const dropped = new Promise<void>((resolve) => {
      client.once('disconnected', () => resolve());
      setTimeout(resolve, 5_000).unref();
    });
    void fault()
      .then(() => dropped)
      .then(() => connected(client))
      .then(() => delay(SESSION_MS / 3))
      .then(() => callback(new zookeeper.Exception(zookeeper.Exception.CONNECTION_LOSS, 'CONNECTION_LOSS', loseNextDeleteAnswer)));
  };
  client.remove = ((path: string, version: number, callback: (error: unknown) => void) => original.remove(path, version, (error) => lose(error, callback))) as Client['remove'];
  client.transaction = (() => {
    const transaction = original.transaction();
    const commit = transaction.commit.bind(transaction);
    transaction.commit = ((callback: (error: unknown, results: unknown) => void) => commit((error, results) => lose(error, (lost) => callback(lost, results)))) as typeof transaction.commit;
    return transaction;
  });
}

const now = (): bigint => process.hrtime.bigint();

/** One critical section on lock `name` through `padlock`: read, `hold`, write, release; recorded for the checker. */
async function section(padlock: Padlock, store: FencedStore, name: string, worker: number, seq: number, records: SectionRecord[], hold: () => Promise<void> = () => delay(5)): Promise<number> {
  const waitStartedAt = now();
  // Bounded: a section never served fails here, named, instead of stalling the suite.
  const lease = await padlock.mutex(name).acquire({ waitMs: 30_000 });
  const acquiredAt = now();
  let validUntil: bigint | null = null;
  const read = await store.read(lease.fence, lease.owner);
  await hold();
  const stamp = now();
  if (lease.isHeld) validUntil = stamp;
  const wrote = await store.write(lease.fence, lease.owner, read.value);
  const lost = lease.signal.aborted ? String((lease.signal.reason as { reason?: string }).reason) : null;
  let releaseError: string | null = null;
  await lease.release().catch((error: unknown) => (releaseError = (error as Error).name));
  records.push({ worker, slot: 0, seq, owner: lease.owner, fence: lease.fence, waitStartedAt, acquiredAt, validUntil, releasedAt: now(), read: read.accepted ? 'ok' : 'refused', write: wrote.accepted ? 'ok' : 'refused', lost, releaseError });
  return lease.fence;
}

/** The checker's verdict on `records` and the store: safe, or the findings. */
async function assertSafe(store: FencedStore, records: readonly SectionRecord[]): Promise<void> {
  const report = check({ sections: records, store: await store.log(), finalValue: await store.value(), expectedSections: records.length });
  assert.ok(isSafe(report), describeReport(report));
  assert.equal(report.overlaps.length, 0);
}

/** How many clients `port`'s server serves (`cons`, less the connection asking). */
async function clientsOf(port: number): Promise<number> {
  const lines = ((await fourLetters(port, 'cons')) ?? '').split('\n').filter((line) => line.trim().startsWith('/127.0.0.1:'));
  return Math.max(0, lines.length - 1);
}

/** The first message of `type` a child sends. */
function message<T>(child: ReturnType<typeof forkFixture>, type: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const listen = (m: unknown): void => {
      if ((m as { type?: string }).type !== type) return;
      child.off('message', listen);
      resolve(m as T);
    };
    child.on('message', listen);
    child.once('exit', (code, signal) => reject(new Error(`holder exited (${code ?? signal}) before '${type}'`)));
  });
}

describe('padlock on a 3-server ZooKeeper ensemble under faults', { timeout: 120_000 }, () => {
  let ensemble: Ensemble;
  let redisPort: number;
  let redis: ReturnType<typeof connect>;
  before(async () => {
    const [zk, server] = await Promise.all([startZooKeeper(3), startServer()]);
    ensemble = zk;
    redisPort = server.port;
    redis = connect(server);
  });
  after(async () => {
    await Promise.all(padlocks.splice(0).map((p) => p.close({ drainMs: 0 })));
    for (const client of clients.splice(0)) closeClient(client);
  });

  /** Restarts every server that is down or frozen, and waits for a leader. */
  async function heal(): Promise<void> {
    for (const server of ensemble.servers) if (!server.running) server.resume();
    await Promise.all(ensemble.servers.map((s) => s.start()));
    await ensemble.leader();
  }
  // A row that fails part-way must not leave the next one a broken ensemble.
  afterEach(() => heal());

  it('the leader killed while a lock is held: the holder keeps it, a waiter is served after its release, with a greater fence', async () => {
    const store = new FencedStore(redis, 'zkf:leader');
    await store.reset('checked');
    const records: SectionRecord[] = [];
    const holder = padlockOn(ensemble);
    const waiter = padlockOn(ensemble);
    const lost: unknown[] = [];
    holder.on('lost', (error) => lost.push(error));
    let waiterFence = 0;
    // The waiter starts once the holder holds (on a loaded machine the holder's first call may take
    // longer than any fixed head start).
    let holding = (): void => undefined;
    const holds = new Promise<void>((resolve) => (holding = resolve));
    const held = section(holder, store, 'zkf:leader', 1, 0, records, async () => {
      holding();
      // Both Padlocks queue, then the leader dies; the holder holds through the election.
      await delay(200);
      await (await ensemble.leader()).kill();
      await ensemble.leader();
      await delay(SESSION_MS);
    });
    const waited = (async () => {
      await holds;
      waiterFence = await section(waiter, store, 'zkf:leader', 2, 0, records);
    })();
    const holderFence = await held;
    await waited;
    assert.deepEqual(lost, [], 'the holder was told nothing');
    assert.equal(records[0]?.fence, holderFence, 'the holder finished first');
    assert.ok(waiterFence > holderFence, `fence ${waiterFence} after ${holderFence}, across the leader change`);
    await assertSafe(store, records);
    await heal();
  });

  it('a follower killed: nothing is noticed (every section served, no loss), sections stay exclusive', async () => {
    const store = new FencedStore(redis, 'zkf:follower');
    await store.reset('checked');
    const records: SectionRecord[] = [];
    const lost: unknown[] = [];
    // Connected first; the follower killed is the one serving most of them (so some must reconnect).
    // Each client picks its server at random: while every worker happens to be on the leader (1 in
    // 27), another three are made.
    let workers: Padlock[] = [];
    let follower: Ensemble['servers'][number] | undefined;
    for (let attempt = 0; attempt < 5 && follower === undefined; attempt++) {
      await Promise.all(workers.map((padlock) => padlock.close({ drainMs: 0 })));
      // Their sessions too, or a follower would count them.
      if (workers.length > 0) for (const client of clients.splice(-workers.length)) closeClient(client);
      // A 10 s session and reply bound, as deployments run (the 3 s of the other rows makes them
      // fast): in fresh-clone runs on the loaded 2-core machine, the reconnection after the kill,
      // with three JVMs starved, once outlasted a 3 s session's conservative deadline.
      const calm = { sessionMs: 10_000, replyTimeoutMs: 10_000 };
      workers = [padlockOn(ensemble, calm), padlockOn(ensemble, calm), padlockOn(ensemble, calm)];
      for (const padlock of workers) await (await padlock.mutex('zkf:warm').acquire()).release();
      const leader = await ensemble.leader();
      const followers = await Promise.all(ensemble.servers.filter((s) => s !== leader).map(async (server) => ({ server, clients: await clientsOf(server.port) })));
      const busiest = followers.sort((x, y) => y.clients - x.clients)[0];
      if (busiest !== undefined && busiest.clients > 0) follower = busiest.server;
    }
    assert.ok(follower !== undefined, 'a follower serves some of the workers');
    for (const padlock of workers) padlock.on('lost', (error) => lost.push(error));
    const work = workers.map(async (padlock, w) => {
      for (let i = 0; i < 6; i++) await section(padlock, store, 'zkf:follower', w, i, records, () => delay(20));
    });
    await delay(150);
    await follower.kill();
    await Promise.all(work);
    assert.deepEqual(lost, []);
    assert.equal(records.length, 18);
    await assertSafe(store, records);
    await heal();
  });

  it('a majority lost: an acquire fails typed within a bound; a held lease is told once its session would have expired; the lock is free again once a quorum is back', async () => {
    const holder = padlockOn(ensemble);
    const other = padlockOn(ensemble, { replyTimeoutMs: 1_000 });
    const lease = await holder.mutex('zkf:majority').acquire();
    const told = lossOf(lease);
    const leader = await ensemble.leader();
    const lostAt = monotonicNow();
    await Promise.all(ensemble.servers.filter((s) => s !== leader).map((s) => s.kill()));
    const started = monotonicNow();
    await assert.rejects(other.mutex('zkf:majority-other').acquire({ waitMs: 2_000 }), ZooKeeperUnavailableError);
    assert.ok(monotonicNow() - started < 10_000, 'typed failure within a bound');
    const reason = await told;
    assert.ok(reason instanceof LockLostError, String(reason));
    assert.ok(monotonicNow() - lostAt < SESSION_MS + 5_000, 'told within the session time-out (and a margin for a loaded machine)');
    await heal();
    const next = await other.mutex('zkf:majority').acquire({ waitMs: 30_000 });
    assert.ok(next.fence > lease.fence);
    await next.release();
  });

  it('the whole ensemble frozen 6 s while three Padlocks wait: each wait is served or ends unavailable or timed out, never LockNotHeldError; the same Padlocks serve after', async () => {
    const holder = padlockOn(ensemble, { renewing: true });
    const lease = await holder.mutex('zkf:outage').acquire();
    const waiters = [0, 1, 2].map(() => padlockOn(ensemble, { renewing: true }));
    const ends = waiters.map((padlock) =>
      padlock
        .mutex('zkf:outage')
        .acquire({ waitMs: 15_000 })
        .then(async (served) => {
          await served.release().catch(() => undefined);
          return 'served';
        }, (error: unknown) => error),
    );
    const reader = zooKeeperClient(ensemble);
    clients.push(reader);
    await connected(reader);
    const queued = async (): Promise<number> => (await zooKeeperLeftovers(reader, 'padlock')).filter((path) => path.includes('zkf%3Aoutage/')).length;
    assert.ok(await eventually(async () => (await queued()) === 4, 10_000), 'the holder and three waiters queued');
    // Down as its clients see it (frozen: a restart of three JVMs takes longer than the outage on a loaded machine).
    for (const server of ensemble.servers) server.pause();
    await delay(6_000);
    for (const server of ensemble.servers) server.resume();
    const results = await Promise.all(ends);
    for (const result of results) {
      assert.ok(!(result instanceof LockNotHeldError), `a fresh wait told "not held": ${String(result)}`);
      assert.ok(result === 'served' || result instanceof StoreUnavailableError || result instanceof LockTimeoutError, String(result));
    }
    await lease.release().catch(() => undefined); // lost in the outage
    for (const padlock of [holder, ...waiters]) await (await padlock.mutex('zkf:outage-after').acquire({ waitMs: 10_000 })).release();
  });

  it('a release whose answer is lost in a leader change, its delete landed: it resolves, never told "taken", the lock is free', async () => {
    // The answer comes back once the leader is killed, the connection dropped and made again after
    // the election, and a third of a session gone by: up to ~6 s on a loaded machine (a fresh-clone
    // run's release failed 'no reply within 5000 ms'), so a reply time-out with room for all of it.
    // The release's resend is tried for as long as the session may live: an 8 s session gives a slow
    // election room too (one took the calls after the reconnect past a 3 s session's 4 s of resends).
    const padlock = padlockOn(ensemble, { replyTimeoutMs: 15_000, sessionMs: 8_000 });
    const client = clients[clients.length - 1];
    assert.ok(client !== undefined);
    const lost: LockLostError[] = [];
    padlock.on('lost', (error) => lost.push(error));
    const lease = await padlock.mutex('zkf:answer').acquire();
    loseNextDeleteAnswer(client, async () => (await ensemble.leader()).kill());
    await lease.release();
    // Its deadline may pass while the answer is awaited on a loaded machine ('expired': it could not know); never "taken".
    assert.deepEqual(lost.filter((error) => error.reason === 'taken'), [], 'not told taken');
    const next = await padlockOn(ensemble).mutex('zkf:answer').acquire({ waitMs: 10_000 });
    assert.ok(next.fence > lease.fence);
    await next.release();
  });

  it('a holder process killed: its waiter is served once its session expires, with a greater fence', async () => {
    const store = new FencedStore(redis, 'zkf:killed');
    await store.reset('checked');
    const child = forkFixture('zookeeper-padlock-holder', [ensemble.connectString, String(SESSION_MS), String(redisPort), 'zkf:killed']);
    const held = await message<{ fence: number }>(child, 'held');
    const waiter = padlockOn(ensemble);
    const killedAt = monotonicNow();
    child.kill('SIGKILL');
    const records: SectionRecord[] = [];
    const fence = await section(waiter, store, 'zkf:killed', 1, 0, records);
    assert.ok(monotonicNow() - killedAt < SESSION_MS + 5_000, 'served within the session time-out (and a margin)');
    assert.ok(fence > held.fence);
    await assertSafe(store, records);
  });

  it('a holder frozen past its session: a waiter is served meanwhile; the holder is told on resume, and its late fenced write is refused', async () => {
    const store = new FencedStore(redis, 'zkf:frozen');
    await store.reset('checked');
    const child = forkFixture('zookeeper-padlock-holder', [ensemble.connectString, String(SESSION_MS), String(redisPort), 'zkf:frozen']);
    const held = await message<{ fence: number }>(child, 'held');
    const lost = message<{ code: string }>(child, 'lost');
    child.kill('SIGSTOP');
    const records: SectionRecord[] = [];
    let waiterFence = 0;
    try {
      waiterFence = await section(padlockOn(ensemble), store, 'zkf:frozen', 1, 0, records);
      assert.ok(waiterFence > held.fence);
    } finally {
      child.kill('SIGCONT');
    }
    const resumedAt = monotonicNow();
    assert.equal((await lost).code, 'LOCK_LOST', 'told on resume');
    const wrote = message<{ accepted: boolean; section: WireSection }>(child, 'wrote');
    child.send('write');
    const late = await wrote;
    assert.equal(late.accepted, false, 'the late write is refused by its fence');
    records.push(fromWire(late.section));
    await assertSafe(store, records);
    // Not restarted: the same Padlock takes the lock again, on a new session.
    const again = message<{ fence?: number; error?: string }>(child, 'again');
    child.send('again');
    const taken = await again;
    assert.equal(taken.error, undefined, 'served again');
    assert.ok((taken.fence ?? 0) > waiterFence, `fence ${taken.fence} after ${waiterFence}`);
    assert.ok(monotonicNow() - resumedAt < 10_000, 'within 10 s of its resume');
    child.kill('SIGKILL');
  });
});
