/**
 * A Redis Cluster on loopback: K masters with R replicas each, made by `redis-cli --cluster create`
 * as an operator would, with helpers to fail a master over, move a slot (or leave it half-moved),
 * and ioredis `Cluster` clients. Every process is stopped after the file's tests (./redis.ts).
 */
import { execFile } from 'node:child_process';
import { Cluster, type ClusterOptions } from 'ioredis';
import { Cluster as Cluster6 } from 'ioredis6';
import { freePort, RedisServerStartError, type RedisServer } from '../../src/devserver/redis-server.js';
import { startServer } from './redis.js';
import { admin, command, info } from './admin.js';
import { track } from './cleanup.js';
import { notYet, waitUntil } from './deadline.js';
import { ownerOf, parseClusterNodes, slotMap, SLOTS, type NodeLine } from './cluster-nodes.js';
import { inflict, recover, type Fault } from './faults.js';

type Cluster6Options = NonNullable<ConstructorParameters<typeof Cluster6>[1]>;

/** Options for {@link startCluster}. */
export interface ClusterTopologyOptions {
  /** @default 3 */
  readonly masters?: number;
  /** Replicas of each master. @default 1 */
  readonly replicasPerMaster?: number;
  /** `cluster-node-timeout`: silence after which a node is suspected, and so failover time. @default 1000 */
  readonly nodeTimeoutMs?: number;
  /** Deadline for the cluster to come up, and for each later wait. @default 30000 */
  readonly timeoutMs?: number;
}

/** What a failover did. */
export interface ClusterFailover {
  /** The master that failed or handed over. */
  readonly previous: RedisServer;
  /** Its replica, now master of its slots. */
  readonly promoted: RedisServer;
  /** From the fault (or the CLUSTER FAILOVER) to every live node agreeing and `cluster_state:ok`. */
  readonly ms: number;
}

/** A slot being moved; see {@link RedisCluster.beginMigration}. */
export interface SlotMigration {
  readonly slot: number;
  readonly source: RedisServer;
  readonly target: RedisServer;
  /** MIGRATEs up to `limit` of the slot's keys (all by default) from source to target; how many. */
  moveKeys(limit?: number): Promise<number>;
  /** Moves the keys left, gives the slot to the target on every master, waits for agreement. */
  finish(): Promise<void>;
}

/** ioredis `Cluster` options; `major` picks ioredis 5 (default) or 6. */
export type ClusterClientOptions = ClusterOptions & { readonly major?: 5 | 6 };

/** A started cluster; see {@link startCluster}. */
export class RedisCluster {
  /** Every node, masters and replicas, in start order. */
  readonly nodes: readonly RedisServer[];
  readonly #ids: ReadonlyMap<RedisServer, string>;
  readonly #timeoutMs: number;
  readonly #down = new Map<RedisServer, Fault>();

  /** @internal use {@link startCluster} */
  constructor(nodes: readonly RedisServer[], ids: ReadonlyMap<RedisServer, string>, timeoutMs: number) {
    this.nodes = nodes;
    this.#ids = ids;
    this.#timeoutMs = timeoutMs;
  }

  /** The cluster node id of `server` (it survives a restart: nodes.conf stays in its directory). */
  idOf(server: RedisServer): string {
    const id = this.#ids.get(server);
    if (id === undefined) throw new Error(`127.0.0.1:${server.port} is not a node of this cluster`);
    return id;
  }

  /** The current masters that serve slots, as a live node sees them. */
  async masters(): Promise<RedisServer[]> {
    const view = await this.#view();
    return view.filter((n) => n.role === 'master' && n.slots.length > 0).map((n) => this.#server(n.id));
  }

  /** The live replicas of `master`, as a live node sees them. */
  async replicasOf(master: RedisServer): Promise<RedisServer[]> {
    const id = this.idOf(master);
    const view = await this.#view();
    return view.filter((n) => n.masterId === id).map((n) => this.#server(n.id)).filter((s) => !this.#down.has(s));
  }

  /** The slot of `key`, as Redis computes it (`CLUSTER KEYSLOT`). */
  async slotOf(key: string): Promise<number> {
    return Number(await command(this.#anyLive(), 'CLUSTER', 'KEYSLOT', key));
  }

  /** The master serving `slot` (during a migration: the source, until it is finished). */
  async nodeForSlot(slot: number): Promise<RedisServer> {
    const owner = ownerOf(await this.#view(), slot);
    if (owner === undefined) throw new Error(`no master serves slot ${slot}`);
    return this.#server(owner.id);
  }

  /** The master serving `key`'s slot. */
  async nodeForKey(key: string): Promise<RedisServer> {
    return this.nodeForSlot(await this.slotOf(key));
  }

  /**
   * Makes `master` fail (SIGKILL by default, or SIGSTOP) and resolves once one of its replicas has
   * been elected in its place and every live node agrees and says `cluster_state:ok`. The failed
   * node stays down until {@link RedisCluster.revive}.
   */
  async failover(master: RedisServer, fault: Fault = 'kill'): Promise<ClusterFailover> {
    const replicas = await this.replicasOf(master);
    if (replicas.length === 0) throw new Error(`127.0.0.1:${master.port} has no live replica to fail over to`);
    const started = Date.now();
    this.#down.set(master, fault);
    await inflict(master, fault);
    const promoted = await waitUntil(`a replica of 127.0.0.1:${master.port} is elected master`, async () => {
      for (const replica of replicas) if ((await info(replica, 'replication')).get('role') === 'master') return replica;
      return notYet(`replicas ${replicas.map((r) => r.port).join(', ')} are still replicas`);
    }, { timeoutMs: this.#timeoutMs });
    await this.waitForHealthy();
    return { previous: master, promoted, ms: Date.now() - started };
  }

  /**
   * A graceful, coordinated failover: `CLUSTER FAILOVER` on `replica`, which takes over its
   * master's slots once it has all its writes; the old master becomes its replica.
   */
  async manualFailover(replica: RedisServer): Promise<ClusterFailover> {
    const view = await this.#view();
    const masterId = view.find((n) => n.id === this.idOf(replica))?.masterId;
    if (masterId === undefined) throw new Error(`127.0.0.1:${replica.port} is not a replica`);
    const previous = this.#server(masterId);
    const started = Date.now();
    await command(replica, 'CLUSTER', 'FAILOVER');
    await waitUntil(`127.0.0.1:${replica.port} takes over from 127.0.0.1:${previous.port}`, async () => {
      const role = (await info(replica, 'replication')).get('role');
      return role === 'master' ? true : notYet(`it says role:${role}`);
    }, { timeoutMs: this.#timeoutMs });
    await this.waitForHealthy();
    return { previous, promoted: replica, ms: Date.now() - started };
  }

  /**
   * Starts moving `slot` to the master `target`, the way `redis-cli --cluster reshard` does:
   * `CLUSTER SETSLOT slot IMPORTING` on the target, then `MIGRATING` on the source. Until
   * `finish()`, the source answers `-ASK` for the slot's keys it no longer has.
   */
  async beginMigration(slot: number, target: RedisServer): Promise<SlotMigration> {
    const source = await this.nodeForSlot(slot);
    if (source === target) throw new Error(`slot ${slot} is already served by 127.0.0.1:${target.port}`);
    await command(target, 'CLUSTER', 'SETSLOT', slot, 'IMPORTING', this.idOf(source));
    await command(source, 'CLUSTER', 'SETSLOT', slot, 'MIGRATING', this.idOf(target));
    const moveKeys = async (limit = Infinity): Promise<number> => {
      let moved = 0;
      while (moved < limit) {
        const keys = await admin(source).callBuffer('CLUSTER', 'GETKEYSINSLOT', slot, Math.min(100, limit - moved));
        if (!Array.isArray(keys) || keys.length === 0) break;
        await command(source, 'MIGRATE', target.host, target.port, '', 0, 5_000, 'KEYS', ...(keys as Buffer[]));
        moved += keys.length;
      }
      return moved;
    };
    const finish = async (): Promise<void> => {
      await moveKeys();
      // The target first, so the slot is never without an owner that accepts it; then the source,
      // then every other master, as the Cluster specification describes.
      const masters = await this.masters();
      const others = masters.filter((m) => m !== source && m !== target);
      for (const node of [target, source, ...others]) await command(node, 'CLUSTER', 'SETSLOT', slot, 'NODE', this.idOf(target));
      await this.waitForHealthy();
    };
    return { slot, source, target, moveKeys, finish };
  }

  /** Moves `slot` with its keys to the master `target` and waits until every node agrees; keys moved. */
  async migrateSlot(slot: number, target: RedisServer): Promise<number> {
    const migration = await this.beginMigration(slot, target);
    const moved = await migration.moveKeys();
    await migration.finish();
    return moved;
  }

  /**
   * Brings back a node made to fail through this cluster (SIGCONT, or a restart: its data is gone,
   * its nodes.conf is not) and waits until it has rejoined, as a replica, and all is healthy.
   */
  async revive(server: RedisServer): Promise<void> {
    const fault = this.#down.get(server);
    if (fault !== undefined) await recover(server, fault);
    this.#down.delete(server);
    await this.waitForHealthy();
  }

  /**
   * Waits until every live node says `cluster_state:ok`, sees every live node as not failing, and
   * all agree on who serves which slot (all 16384 covered), on each live node's role and master, and
   * on each master's config epoch, no two masters sharing one; and every live replica's link to its
   * master is up (so `WAIT` can count it).
   */
  async waitForHealthy(): Promise<void> {
    const live = this.#liveNodes();
    const liveIds = new Set(live.map((s) => this.idOf(s)));
    await waitUntil('the cluster is ok and every node agrees', async () => {
      let agreed: string | undefined;
      for (const node of live) {
        const state = String(await command(node, 'CLUSTER', 'INFO'));
        const view = parseClusterNodes(String(await command(node, 'CLUSTER', 'NODES')));
        // Why, in the node's own words, should it stay so until the deadline.
        if (!state.includes('cluster_state:ok')) return notYet(`127.0.0.1:${node.port} is not cluster_state:ok (${clusterInfoSummary(state)}; it sees ${describeView(view)})`);
        const failing = view.find((n) => liveIds.has(n.id) && n.failing);
        if (failing !== undefined) return notYet(`127.0.0.1:${node.port} deems live node ${failing.port} failing`);
        const slots = slotMap(view);
        if (slots.covered !== SLOTS) return notYet(`127.0.0.1:${node.port} sees ${slots.covered} slots served`);
        // Masters with one config epoch: Redis 7.0 settles the collision later, and a failover racing
        // that settling can leave a slot unowned in some node's view for good (redis/redis#12336, #12344).
        const masters = view.filter((n) => n.role === 'master' && n.slots.length > 0);
        const shared = masters.find((m) => masters.some((other) => other !== m && other.configEpoch === m.configEpoch));
        if (shared !== undefined) return notYet(`127.0.0.1:${node.port} sees masters sharing config epoch ${shared.configEpoch}`);
        const roles = view.filter((n) => liveIds.has(n.id)).map((n) => `${n.id}>${n.masterId ?? '-'}@${n.role === 'master' ? n.configEpoch : ''}`).sort().join(' ');
        const summary = `${slots.text} | ${roles}`;
        agreed ??= summary;
        if (summary !== agreed) return notYet(`127.0.0.1:${node.port} disagrees: ${summary} vs ${agreed}`);
      }
      for (const node of live) {
        const replication = await info(node, 'replication');
        if (replication.get('role') === 'slave' && replication.get('master_link_status') !== 'up') {
          return notYet(`replica 127.0.0.1:${node.port} has its link ${replication.get('master_link_status')}`);
        }
      }
      return true;
    }, { timeoutMs: this.#timeoutMs });
  }

  /**
   * An ioredis `Cluster` client started from every live node, disconnected after the file's tests.
   * ioredis 6's class has the surface tests use; the cast only names one of the two types.
   */
  client(options: ClusterClientOptions = {}): Cluster {
    const { major, ...rest } = options;
    const startup = this.#liveNodes().map((s) => ({ host: s.host, port: s.port }));
    if (major !== 6) return track(new Cluster(startup, rest));
    // The majors' option types differ only in classes and in 6 typing redisOptions without
    // `| undefined`; the values are the same.
    return track(new Cluster6(startup, rest as unknown as Cluster6Options) as unknown as Cluster);
  }

  /** Stops every node (also done after the file's tests). */
  async stop(): Promise<void> {
    await Promise.allSettled(this.nodes.map((s) => s.stop()));
  }

  /** CLUSTER NODES from a live node. */
  async #view(): Promise<NodeLine[]> {
    return parseClusterNodes(String(await command(this.#anyLive(), 'CLUSTER', 'NODES')));
  }

  #server(id: string): RedisServer {
    for (const [server, known] of this.#ids) if (known === id) return server;
    throw new Error(`node ${id} is not one of this cluster's processes`);
  }

  #liveNodes(): RedisServer[] {
    return this.nodes.filter((s) => !this.#down.has(s));
  }

  #anyLive(): RedisServer {
    const [node] = this.#liveNodes();
    if (node === undefined) throw new Error('every node of the cluster is down');
    return node;
  }
}

/** The `CLUSTER INFO` fields that say why a node is not ok. */
function clusterInfoSummary(info: string): string {
  const wanted = ['cluster_state', 'cluster_slots_assigned', 'cluster_slots_pfail', 'cluster_slots_fail', 'cluster_known_nodes', 'cluster_current_epoch'];
  return info.split(/\r?\n/).filter((line) => wanted.some((field) => line.startsWith(`${field}:`))).join(' ');
}

/** One node's view, each node as port, role, its master's port, failing or not, and slot ranges. */
function describeView(view: readonly NodeLine[]): string {
  const portOf = new Map(view.map((n) => [n.id, n.port]));
  return view.map((n) => {
    const role = n.role === 'master' ? 'master' : `replica of ${n.masterId === undefined ? '?' : (portOf.get(n.masterId) ?? n.masterId.slice(0, 8))}`;
    const slots = n.slots.map(([from, to]) => (from === to ? `${from}` : `${from}-${to}`)).join(',');
    return `${n.port}${n.myself ? '*' : ''} ${role}${n.failing ? ' failing' : ''}${slots === '' ? '' : ` [${slots}]`}`;
  }).join('; ');
}

/** Runs a program with a deadline; its output, or an error that includes it. */
function run(file: string, args: readonly string[], timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { timeout: timeoutMs, killSignal: 'SIGKILL' }, (error, stdout, stderr) => {
      if (error === null) resolve(stdout);
      else reject(new Error(`${file} ${args.join(' ')} failed (${error.killed ? `killed after ${timeoutMs} ms` : error.message}):\n${stdout}${stderr}`));
    });
  });
}

/**
 * One cluster node. Its bus port is chosen here: the default (port + 10000) is past 65535 for half
 * of the ephemeral ports a free port comes from. A bus port taken meanwhile is chosen again.
 */
async function startNode(nodeTimeoutMs: number): Promise<RedisServer> {
  for (let attempt = 0; ; attempt++) {
    const busPort = await freePort();
    try {
      return await startServer({
        args: [
          '--cluster-enabled', 'yes',
          // Relative to --dir, the node's own directory.
          '--cluster-config-file', 'nodes.conf',
          '--cluster-node-timeout', String(nodeTimeoutMs),
          '--cluster-port', String(busPort),
          // Tests kill masters at any moment: a replica may always take over, however stale.
          '--cluster-replica-validity-factor', '0',
          // Keep each replica with its master, whatever fails, so tests know who is where.
          '--cluster-allow-replica-migration', 'no',
          '--repl-diskless-sync-delay', '0',
        ],
      });
    } catch (error) {
      if (!(error instanceof RedisServerStartError && /Address already in use/.test(error.message)) || attempt >= 4) throw error;
    }
  }
}

/**
 * Starts `masters × (1 + replicasPerMaster)` cluster nodes on free 127.0.0.1 ports, joins them with
 * `redis-cli --cluster create … --cluster-replicas R --cluster-yes`, and resolves once the cluster
 * is healthy (see {@link RedisCluster.waitForHealthy}).
 */
export async function startCluster(options: ClusterTopologyOptions = {}): Promise<RedisCluster> {
  const masters = options.masters ?? 3;
  const replicas = options.replicasPerMaster ?? 1;
  const timeoutMs = options.timeoutMs ?? 30_000;
  if (masters < 3) throw new Error(`redis-cli --cluster create needs at least 3 masters, got ${masters}`);
  const nodes = await Promise.all(Array.from({ length: masters * (1 + replicas) }, () => startNode(options.nodeTimeoutMs ?? 1_000)));
  await run('redis-cli', ['--cluster', 'create', ...nodes.map((n) => `${n.host}:${n.port}`), '--cluster-replicas', String(replicas), '--cluster-yes'], timeoutMs);
  const ids = new Map<RedisServer, string>();
  for (const node of nodes) ids.set(node, String(await command(node, 'CLUSTER', 'MYID')));
  const cluster = new RedisCluster(nodes, ids, timeoutMs);
  await cluster.waitForHealthy();
  return cluster;
}
