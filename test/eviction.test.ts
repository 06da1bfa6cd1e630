/**
 * A Redis that evicts keys when full can take a lock away from its holder without telling it. On
 * real servers with a small `maxmemory`, per policy: what filling memory does to a held lock, and
 * what the holder and other clients are told. padlock warns (`PADLOCK_EVICTION_POLICY`) once per
 * server whose `maxmemory-policy` evicts, on every topology, and never under `noeviction`.
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Redis } from 'ioredis';
import type { RedisServer } from '../src/devserver/redis-server.js';
import { LockLostError, Padlock, RedisCommandError } from '../src/index.js';
import { lockKeys, livenessKey } from '../src/keys.js';
import { EVICTION_WARNING_CODE } from '../src/stores/redis/adapters/eviction-policy.js';
import { connect, delay, eventually, padlockOn, startServer, startServers } from './harness/redis.js';
import { startCluster, startSentinelSet } from './harness/topologies.js';
import { redisInternals } from '../src/testing.js';

/** Every process warning padlock emitted for an evicting server, in order. */
const warnings: Error[] = [];
const onWarning = (warning: Error): void => {
  if ((warning as Error & { code?: string }).code === EVICTION_WARNING_CODE) warnings.push(warning);
};
process.on('warning', onWarning);
after(() => void process.off('warning', onWarning));

/** The warnings naming `address` (`host:port`). */
function warningsAbout(address: string): Error[] {
  return warnings.filter((w) => w.message.includes(`Redis ${address} `));
}

function addressOf(server: RedisServer): string {
  return `${server.host}:${server.port}`;
}

/** A server of 2 MB under `policy`. */
function smallServer(policy: string): Promise<RedisServer> {
  return startServer({ args: ['--maxmemory', '2mb', '--maxmemory-policy', policy] });
}

const KB = 'x'.repeat(1024);

/**
 * Writes 1 KB keys without a TTL, 50 per round trip, until `stop()` or a write is refused (OOM).
 * Returns how many it wrote, and whether one was refused.
 */
async function fill(admin: Redis, stop: () => Promise<boolean>): Promise<{ writes: number; refused: boolean }> {
  let writes = 0;
  for (let round = 0; round < 400; round++) {
    const pipeline = admin.pipeline();
    for (let i = 0; i < 50; i++) pipeline.set(`fill:${writes + i}`, KB);
    const results = (await pipeline.exec()) ?? [];
    writes += 50;
    if (results.some(([error]) => error !== null)) return { writes, refused: true };
    if (await stop()) return { writes, refused: false };
  }
  assert.fail(`20 000 writes of 1 KB into 2 MB neither evicted nor were refused`);
}

/** Resolves once `lease`'s signal aborts (the holder is told), with its reason. */
async function told(lease: { readonly signal: AbortSignal }, ms: number): Promise<unknown> {
  assert.ok(await eventually(() => lease.signal.aborted, ms), `the holder was told within ${ms} ms`);
  return lease.signal.reason;
}

describe('maxmemory-policy noeviction (the safe one)', () => {
  it('no warning; when full, writes are refused: a new acquire fails typed (OOM), the held lock stays and renews, the holder keeps it', async () => {
    const server = await smallServer('noeviction');
    const admin = connect(server);
    const holder = padlockOn(server, { prefix: 'noev' });
    const errors: Error[] = [];
    holder.on('error', (error) => errors.push(error));
    const lease = await holder.mutex('account').acquire({ leaseMs: 3_000, autoExtend: true });
    const { refused } = await fill(admin, () => Promise.resolve(false));
    assert.ok(refused, 'the full server refused writes');
    // Memory stays over the limit (a pipeline's own buffer, counted while it ran, is freed after it).
    await admin.config('SET', 'maxmemory', '1mb');
    assert.equal((await admin.info('memory')).match(/maxmemory_policy:(\S+)/)?.[1], 'noeviction');

    const other = padlockOn(server, { prefix: 'noev' });
    await assert.rejects(other.mutex('order').acquire(), (error: unknown) => {
      assert.ok(error instanceof RedisCommandError, `a typed error: ${String(error)}`);
      assert.equal(error.code, 'REDIS_COMMAND');
      assert.match(error.message, /OOM/);
      return true;
    });
    assert.equal(await other.mutex('account').tryAcquire().catch((error: unknown) => error instanceof RedisCommandError), true, 'nor is the held lock taken: the attempt is refused');

    // Renewals only lengthen the key (not refused when full): past a whole lease, the lock is still the holder's.
    await delay(3_500);
    assert.equal(lease.isHeld, true, `the holder keeps its lock: ${String(lease.signal.reason)}; errors: ${errors.map(String).join('; ')}`);
    assert.ok((await admin.pttl(lockKeys('noev', 'account').lock)) > 0, 'its key is there');
    // Its liveness key cannot be rewritten: each failed write is reported as an `error` event.
    assert.ok(await eventually(() => errors.some((e) => e instanceof RedisCommandError && /OOM/.test(e.message)), 5_000), `errors: ${errors.map(String).join('; ')}`);
    await lease.release();
    assert.deepEqual(warningsAbout(addressOf(server)), [], 'no warning under noeviction');
  });
});

describe('maxmemory-policy allkeys-lru', () => {
  it('warns; filling memory evicts the lock key, another client takes the lock, and the holder learns only at its next renewal (LockLostError)', async () => {
    const server = await smallServer('allkeys-lru');
    const admin = connect(server);
    const holder = padlockOn(server, { prefix: 'lru' });
    const lease = await holder.mutex('account').acquire({ leaseMs: 15_000, autoExtend: true });
    assert.ok(await eventually(() => warningsAbout(addressOf(server)).length === 1, 5_000), 'the warning was emitted');
    const [warning] = warningsAbout(addressOf(server));
    assert.match(String(warning?.message), /maxmemory-policy allkeys-lru/);
    assert.match(String(warning?.message), /Only maxmemory-policy noeviction is safe/);

    const key = lockKeys('lru', 'account').lock;
    const { writes, refused } = await fill(admin, async () => (await admin.exists(key)) === 0);
    assert.equal(refused, false, 'allkeys-lru never refuses: it evicts');
    assert.equal(await admin.exists(key), 0, `the lock key was evicted after ${writes} writes of 1 KB`);
    assert.equal(lease.isHeld, true, 'the holder was not told');
    // Room again, so that the thief's own key is not evicted in turn (seen on a loaded machine).
    await admin.del(...Array.from({ length: writes }, (_, i) => `fill:${i}`));

    const thief = padlockOn(server, { prefix: 'lru' });
    const stolen = await thief.mutex('account').tryAcquire();
    assert.ok(stolen !== null, 'another client takes the lock');
    const reason = await told(lease, 25_000);
    assert.ok(reason instanceof LockLostError, `the holder is told by a LockLostError: ${String(reason)}`);
    assert.equal(reason.reason, 'taken');
    assert.equal(lease.isHeld, false);
    await stolen.release();
  });
});

describe('maxmemory-policy volatile-lru', () => {
  it("warns; padlock's keys are the only ones with a TTL, so the lock key and the holder's liveness key are the ones evicted", async () => {
    const server = await smallServer('volatile-lru');
    const admin = connect(server);
    const holder = padlockOn(server, { prefix: 'vlru' });
    const lease = await holder.mutex('account').acquire({ leaseMs: 15_000, autoExtend: true });
    assert.ok(await eventually(() => warningsAbout(addressOf(server)).length === 1, 5_000), 'the warning was emitted');
    assert.match(String(warningsAbout(addressOf(server))[0]?.message), /maxmemory-policy volatile-lru .*padlock's keys all carry a TTL/);

    const keys = [lockKeys('vlru', 'account').lock, livenessKey('vlru', redisInternals(holder).clientId)];
    assert.equal(await admin.exists(...keys), 2);
    // The filler has no TTL: once padlock's keys are gone, nothing is left to evict and writes are refused.
    const { refused } = await fill(admin, () => Promise.resolve(false));
    assert.ok(refused);
    assert.equal(await admin.exists(...keys), 0, 'both padlock keys were evicted, and only they: every filler key is there');
    assert.equal(await admin.exists('fill:0', 'fill:1'), 2, 'the oldest keys without a TTL stay');
    assert.equal(lease.isHeld, true, 'the holder was not told');

    // Once some memory is freed, another client takes the lock.
    await admin.del(...Array.from({ length: 200 }, (_, i) => `fill:${i}`));
    const thief = padlockOn(server, { prefix: 'vlru' });
    const stolen = await thief.mutex('account').tryAcquire();
    assert.ok(stolen !== null, 'another client takes the lock');
    const reason = await told(lease, 25_000);
    assert.ok(reason instanceof LockLostError, `the holder is told by a LockLostError: ${String(reason)}`);
    await stolen.release();
  });
});

describe('the eviction warning', () => {
  it('is emitted once per server per process, whatever the number of Padlocks and calls, and not for a noeviction server', async () => {
    const [evicting, safe] = await Promise.all([startServer(), startServer()]);
    assert.ok(evicting !== undefined && safe !== undefined);
    await connect(evicting).config('SET', 'maxmemory-policy', 'allkeys-lfu');
    const padlocks = [padlockOn(evicting), padlockOn(evicting), padlockOn(safe), padlockOn(safe)];
    for (let round = 0; round < 3; round++) {
      await Promise.all(padlocks.map(async (p, i) => (await p.mutex(`once:${round}:${i}`).acquire()).release()));
    }
    assert.ok(await eventually(() => warningsAbout(addressOf(evicting)).length > 0, 5_000));
    // A further round trip on each connection: any check's reply has come by then.
    await Promise.all(padlocks.map((p) => p.mutex('once:last').isLocked()));
    await delay(50);
    assert.equal(warningsAbout(addressOf(evicting)).length, 1, 'one warning for the evicting server');
    assert.match(String(warningsAbout(addressOf(evicting))[0]?.message), /maxmemory-policy allkeys-lfu/);
    assert.deepEqual(warningsAbout(addressOf(safe)), [], 'none for the noeviction server');
  });

  it('is printed by Node on stderr, once, and written to the debug log (NODE_DEBUG=padlock)', async () => {
    const server = await startServer();
    await connect(server).config('SET', 'maxmemory-policy', 'allkeys-lru');
    // Two Padlocks on one client, each taking and renewing a lock.
    const child = spawn(process.execPath, [fileURLToPath(new URL('./fixtures/debug-child.js', import.meta.url)), server.url, 'ev:child'], {
      env: { ...process.env, NODE_DEBUG: 'padlock' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    assert.equal(await new Promise((resolve) => child.on('close', resolve)), 0, stderr);
    const address = addressOf(server).replace(/\./g, '\\.');
    const printed = stderr.match(new RegExp(`^\\(node:\\d+\\) \\[${EVICTION_WARNING_CODE}\\] PadlockWarning: Redis ${address} has maxmemory-policy allkeys-lru`, 'gm')) ?? [];
    assert.equal(printed.length, 1, `Node printed the warning once:\n${stderr}`);
    const logged = stderr.match(new RegExp(`^PADLOCK \\d+: eviction: Redis ${address} has maxmemory-policy allkeys-lru`, 'gm')) ?? [];
    assert.equal(logged.length, 1, `the debug log has it once:\n${stderr}`);
  });

  it('names the one evicting master of a Redlock set', async () => {
    const masters = await startServers(3);
    const [, evicting] = masters;
    assert.ok(evicting !== undefined);
    await connect(evicting).config('SET', 'maxmemory-policy', 'volatile-ttl');
    const padlock = new Padlock({ redis: masters.map((m) => connect(m)) });
    try {
      await (await padlock.mutex('redlock:ev').acquire()).release();
      assert.ok(await eventually(() => warningsAbout(addressOf(evicting)).length === 1, 5_000), 'the evicting master is named');
      await padlock.mutex('redlock:ev').isLocked();
      await delay(50);
      for (const master of masters) if (master !== evicting) assert.deepEqual(warningsAbout(addressOf(master)), []);
    } finally {
      await padlock.close();
    }
  });

  it('names the evicting master of a Cluster, found by the first call that reaches it', async () => {
    const cluster = await startCluster({ masters: 3, replicasPerMaster: 0 });
    try {
      const masters = await cluster.masters();
      const [evicting] = masters;
      assert.ok(evicting !== undefined);
      await connect(evicting).config('SET', 'maxmemory-policy', 'allkeys-random');
      const client = cluster.client();
      const padlock = new Padlock({ redis: client });
      try {
        await (await padlock.mutex('cluster:ev:other').acquire()).release();
        // A name whose slot the evicting master serves.
        let name = '';
        for (let i = 0; name === ''; i++) if ((await cluster.nodeForKey(lockKeys('padlock', `cluster:ev:${i}`).lock)) === evicting) name = `cluster:ev:${i}`;
        await (await padlock.mutex(name).acquire()).release();
        assert.ok(await eventually(() => warningsAbout(addressOf(evicting)).length === 1, 5_000), 'the evicting master is named');
        for (let i = 0; i < 30; i++) await padlock.mutex(`cluster:ev:more:${i}`).isLocked();
        await delay(50);
        for (const master of masters) if (master !== evicting) assert.deepEqual(warningsAbout(addressOf(master)), []);
        assert.equal(warningsAbout(addressOf(evicting)).length, 1);
      } finally {
        await padlock.close();
        client.disconnect();
      }
    } finally {
      await cluster.stop();
    }
  });

  it('reads the policy again after a Sentinel failover, and names the promoted primary if it evicts', async () => {
    const set = await startSentinelSet({ replicas: 1 });
    try {
      const [primary, replica] = set.servers;
      assert.ok(primary !== undefined && replica !== undefined);
      // A setting of the replica's own, as a replica started from another configuration would have.
      await connect(replica).config('SET', 'maxmemory-policy', 'volatile-lru');
      const padlock = new Padlock({ redis: set.client() });
      try {
        await (await padlock.mutex('sentinel:ev').acquire()).release();
        await padlock.mutex('sentinel:ev').isLocked();
        await delay(50);
        assert.deepEqual(warningsAbout(addressOf(primary)), [], 'the first primary does not evict');
        assert.deepEqual(warningsAbout(addressOf(replica)), []);
        const { promoted } = await set.failover();
        assert.equal(promoted, replica);
        // The client reconnects to the promoted replica; the calls after it read its policy.
        assert.ok(
          await eventually(async () => {
            await padlock.mutex('sentinel:ev').isLocked().catch(() => undefined);
            return warningsAbout(addressOf(replica)).length > 0;
          }, 30_000),
          `the promoted primary is named: ${warnings.map((w) => w.message).join('; ')}`,
        );
        assert.match(String(warningsAbout(addressOf(replica))[0]?.message), /maxmemory-policy volatile-lru/);
      } finally {
        await padlock.close();
      }
    } finally {
      await set.stop();
    }
  });
});
