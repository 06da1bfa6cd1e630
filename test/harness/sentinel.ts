/**
 * A replicated set under Sentinel, on loopback: one primary, N replicas (`--replicaof`) and M
 * `redis-sentinel` processes, all real, all stopped after the file's tests (./redis.ts).
 */
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis, type RedisOptions } from 'ioredis';
import { Redis as Redis6, type RedisOptions as Redis6Options } from 'ioredis6';
import type { RedisServer } from '../../src/devserver/redis-server.js';
import { startServer } from './redis.js';
import { admin, byPort, command, fieldsOf, info } from './admin.js';
import { track, tempDir } from './cleanup.js';
import { notYet, waitUntil } from './deadline.js';
import { inflict, recover, type Fault } from './faults.js';

/** Options for {@link startSentinelSet}. */
export interface SentinelSetOptions {
  /** The master name the sentinels monitor. @default 'padlock' */
  readonly name?: string;
  /** Replicas of the primary. @default 2 */
  readonly replicas?: number;
  /** Sentinel processes. @default 3 */
  readonly sentinels?: number;
  /** Sentinels that must agree the primary is down. @default a majority of `sentinels` */
  readonly quorum?: number;
  /** Silence after which a sentinel deems a node down. @default 1000 */
  readonly downAfterMs?: number;
  /** Sentinel's failover-timeout (a failed election is retried after twice this). @default 2000 */
  readonly failoverTimeoutMs?: number;
  /** Deadline for the set to come up, and for each later wait. @default 30000 */
  readonly timeoutMs?: number;
}

/** What {@link SentinelSet.failover} did. */
export interface SentinelFailover {
  /** The primary that was made to fail. */
  readonly previous: RedisServer;
  /** The replica the sentinels promoted. */
  readonly promoted: RedisServer;
  /** From the fault to every live sentinel naming the promoted node, which says it is master. */
  readonly ms: number;
}

/** ioredis options for a client in Sentinel mode; `major` picks ioredis 5 (default) or 6. */
export type SentinelClientOptions = Omit<RedisOptions, 'sentinels' | 'name'> & { readonly major?: 5 | 6 };

/** A started replicated set; see {@link startSentinelSet}. */
export class SentinelSet {
  /** The master name, as clients pass it (`new Redis({ sentinels, name })`). */
  readonly name: string;
  /** The data nodes; the first one was the primary at start. */
  readonly servers: readonly RedisServer[];
  /** The sentinel processes. */
  readonly sentinels: readonly RedisServer[];
  readonly #timeoutMs: number;
  /** Processes made to fail through this set, and how; they are left out of every check. */
  readonly #down = new Map<RedisServer, Fault>();

  /** @internal use {@link startSentinelSet} */
  constructor(name: string, servers: readonly RedisServer[], sentinels: readonly RedisServer[], timeoutMs: number) {
    this.name = name;
    this.servers = servers;
    this.sentinels = sentinels;
    this.#timeoutMs = timeoutMs;
  }

  /** The current primary, as every live sentinel names it (waits while they disagree). */
  primary(): Promise<RedisServer> {
    return waitUntil(`the sentinels of '${this.name}' agree on a primary`, async () => {
      const answers = await Promise.all(this.#liveSentinels().map((s) => this.#primaryPortSeenBy(s)));
      const ports = new Set(answers);
      const [port] = ports;
      if (ports.size !== 1 || port === undefined) return notYet(`primary ports ${answers.join(', ')}`);
      return byPort(this.servers, port, `the primary of '${this.name}'`);
    }, { timeoutMs: this.#timeoutMs });
  }

  /** The live data nodes other than the current primary. */
  async replicas(): Promise<RedisServer[]> {
    const primary = await this.primary();
    return this.#liveServers().filter((s) => s !== primary);
  }

  /**
   * Waits until every live replica replicates from the current primary with its link up, has
   * applied all the primary had written when the wait began (offsets), and the primary counts it
   * online (so `WAIT` counts it).
   */
  async waitForSync(): Promise<void> {
    const primary = await this.primary();
    const replicas = this.#liveServers().filter((s) => s !== primary);
    await waitUntil(`the replicas of 127.0.0.1:${primary.port} are in sync`, async () => {
      const own = await info(primary, 'replication');
      if (own.get('role') !== 'master') return notYet(`the primary says role:${own.get('role')}`);
      const target = Number(own.get('master_repl_offset'));
      const online = new Set<number>();
      for (const [field, value] of own) {
        const replica = fieldsOf(value);
        if (/^slave\d+$/.test(field) && replica.get('state') === 'online') online.add(Number(replica.get('port')));
      }
      for (const replica of replicas) {
        const seen = await info(replica, 'replication');
        const offset = Number(seen.get('slave_repl_offset'));
        if (seen.get('master_port') !== String(primary.port) || seen.get('master_link_status') !== 'up' || !(offset >= target)) {
          return notYet(`127.0.0.1:${replica.port} role:${seen.get('role')} master_port:${seen.get('master_port')} link:${seen.get('master_link_status')} offset ${offset} < ${target}`);
        }
        if (!online.has(replica.port)) return notYet(`the primary does not list 127.0.0.1:${replica.port} online`);
      }
      return true;
    }, { timeoutMs: this.#timeoutMs });
  }

  /**
   * Makes the current primary fail (SIGKILL by default, or SIGSTOP) and resolves once every live
   * sentinel names a promoted replica and that replica says it is master. The failed node stays
   * down until {@link SentinelSet.revive}.
   */
  async failover(fault: Fault = 'kill'): Promise<SentinelFailover> {
    const previous = await this.primary();
    if (this.#liveServers().length < 2) throw new Error(`'${this.name}' has no live replica to promote`);
    const started = Date.now();
    await this.#inflict(previous, fault);
    const promoted = await waitUntil(`the sentinels of '${this.name}' promote a replica of 127.0.0.1:${previous.port}`, async () => {
      const answers = await Promise.all(this.#liveSentinels().map((s) => this.#primaryPortSeenBy(s)));
      const [port] = answers;
      if (port === undefined || port === previous.port || answers.some((p) => p !== port)) {
        return notYet(`primary ports ${answers.join(', ')}`);
      }
      const server = byPort(this.servers, port, 'the promoted replica');
      const role = (await info(server, 'replication')).get('role');
      return role === 'master' ? server : notYet(`127.0.0.1:${port} is named but says role:${role}`);
    }, { timeoutMs: this.#timeoutMs });
    return { previous, promoted, ms: Date.now() - started };
  }

  /** Freezes a replica (SIGSTOP; the first live one unless named) and returns it; see `revive`. */
  async pauseReplica(replica?: RedisServer): Promise<RedisServer> {
    const [first] = await this.replicas();
    const target = replica ?? first;
    if (target === undefined) throw new Error(`'${this.name}' has no live replica to pause`);
    await this.#inflict(target, 'pause');
    return target;
  }

  /**
   * Brings back a node made to fail through this set (SIGCONT, or a restart with no data) and
   * waits until it is an in-sync replica of the current primary that every sentinel deems healthy.
   */
  async revive(server: RedisServer): Promise<void> {
    const fault = this.#down.get(server);
    if (fault !== undefined) await recover(server, fault);
    this.#down.delete(server);
    const primary = await this.primary();
    const seen = await info(server, 'replication');
    if (seen.get('role') !== 'slave' || seen.get('master_port') !== String(primary.port)) {
      // Sentinel converts a stale primary or fixes a replica's master only after ~8 s of stable
      // reports; an operator does it at once, with the command Sentinel would send.
      await command(server, 'REPLICAOF', primary.host, primary.port);
    }
    await this.waitForSync();
    await this.waitForSentinels();
  }

  /**
   * An ioredis client in Sentinel mode (`new Redis({ sentinels, name })`), disconnected after the
   * file's tests. ioredis 6's class has the surface tests use; the cast only names one type.
   */
  client(options: SentinelClientOptions = {}): Redis {
    const { major, ...rest } = options;
    const settings: RedisOptions = { ...rest, sentinels: this.sentinels.map((s) => ({ host: s.host, port: s.port })), name: this.name };
    // The majors' option types differ only in what these options leave unset (Connector, and 6's
    // constructor typing replyMapping without `| undefined`).
    const settings6 = settings as Redis6Options & { replyMapping?: 'legacy' };
    return track(major === 6 ? (new Redis6(settings6) as unknown as Redis) : new Redis(settings));
  }

  /** Stops every process of the set (also done after the file's tests). */
  async stop(): Promise<void> {
    await Promise.allSettled(this.sentinels.map((s) => s.stop()));
    await Promise.allSettled(this.servers.map((s) => s.stop()));
  }

  /**
   * Waits until every live sentinel knows the other sentinels and can reach its quorum and elect a
   * leader (`SENTINEL CKQUORUM`), and sees every live replica (not down) as healthy: a failover can
   * then begin. One sentinel's view of a revived node has been seen to stay stale on a loaded CI
   * machine for longer than the wait (whatever its flags; a `SENTINEL RESET` did not bring it
   * back either), and a revived node has stayed unlisted by every sentinel for 30 s: after
   * {@link STALE_VIEW_MS}, one replica that a majority of sentinels see healthy is enough, which is
   * what a failover needs (a majority agrees, and picks a replica it sees).
   */
  async waitForSentinels(): Promise<void> {
    const primary = await this.primary();
    const replicas = this.#liveServers().filter((s) => s !== primary);
    const sentinels = this.#liveSentinels();
    const majority = Math.floor(this.sentinels.length / 2) + 1;
    const started = Date.now();
    let reset = false;
    await waitUntil(`the sentinels of '${this.name}' see it whole`, async () => {
      const views = await Promise.all(sentinels.map(async (sentinel) => {
        const at = `sentinel 127.0.0.1:${sentinel.port}`;
        // OK only when enough sentinels are known and reachable to agree and to elect a leader.
        const quorum = await command(sentinel, 'SENTINEL', 'CKQUORUM', this.name).catch((error: Error) => error.message);
        if (typeof quorum !== 'string' || !quorum.startsWith('OK')) return `${at} CKQUORUM: ${String(quorum)}`;
        const known = await command(sentinel, 'SENTINEL', 'SENTINELS', this.name);
        const others = Array.isArray(known) ? known.length : 0;
        if (others < this.sentinels.length - 1) return `${at} knows ${others} other sentinels of ${this.sentinels.length - 1}`;
        // Flags alone: not down and connected. Its master-link-status comes from INFO, which a
        // sentinel refreshes only every 10 s (every 1 s once a failover is under way).
        const listed = await command(sentinel, 'SENTINEL', 'REPLICAS', this.name);
        return new Map((Array.isArray(listed) ? listed : []).map(pairs).map((r) => [Number(r.get('port')), r.get('flags') ?? ''] as const));
      }));
      const unready = views.filter((v): v is string => typeof v === 'string');
      if (unready.length > 0) return notYet(unready.join('; '));
      const flagMaps = views.filter((v): v is Map<number, string> => typeof v !== 'string');
      const seenBy = (port: number): number => flagMaps.filter((flags) => flags.get(port) === 'slave').length;
      const stale = Date.now() - started > STALE_VIEW_MS;
      const needed = stale ? majority : sentinels.length;
      const missing = replicas.filter((r) => seenBy(r.port) < needed);
      if (missing.length === 0 || (stale && missing.length < replicas.length)) return true;
      // A replica no sentinel lists at all (seen on loaded CI runs, for 30 s and more, with a single
      // replica, where a majority view cannot help): once stale, each sentinel is told to forget its
      // view of the set and learn it again from the primary, which lists the replica.
      if (stale && !reset && missing.some((r) => flagMaps.every((flags) => !flags.has(r.port)))) {
        reset = true;
        await Promise.all(sentinels.map((sentinel) => command(sentinel, 'SENTINEL', 'RESET', this.name).catch(() => undefined)));
      }
      const describe = (port: number): string => `${port} (${flagMaps.map((flags) => flags.get(port) ?? 'unlisted').join(' / ')})`;
      return notYet(`replicas ${missing.map((r) => describe(r.port)).join(', ')} seen healthy by fewer than ${needed} sentinels`);
    }, { timeoutMs: this.#timeoutMs });
  }

  async #primaryPortSeenBy(sentinel: RedisServer): Promise<number | undefined> {
    const address = await command(sentinel, 'SENTINEL', 'GET-MASTER-ADDR-BY-NAME', this.name);
    return Array.isArray(address) && typeof address[1] === 'string' ? Number(address[1]) : undefined;
  }

  async #inflict(server: RedisServer, fault: Fault): Promise<void> {
    this.#down.set(server, fault);
    await inflict(server, fault);
  }

  #liveServers(): RedisServer[] {
    return this.servers.filter((s) => !this.#down.has(s));
  }

  #liveSentinels(): RedisServer[] {
    return this.sentinels.filter((s) => !this.#down.has(s));
  }
}

/** How long every sentinel must agree that a revived replica is healthy before a majority is enough. */
const STALE_VIEW_MS = 10_000;

/** A flat `[key, value, key, value…]` reply (SENTINEL REPLICAS entries) as a map. */
function pairs(entry: unknown): Map<string, string> {
  const fields = new Map<string, string>();
  if (!Array.isArray(entry)) return fields;
  for (let i = 0; i + 1 < entry.length; i += 2) fields.set(String(entry[i]), String(entry[i + 1]));
  return fields;
}

/** Replication settings every data node gets. */
const DATA_NODE_ARGS = [
  // Redis 7 delays a diskless full sync by 5 s to batch replicas; a test has no such batch.
  '--repl-diskless-sync-delay', '0',
];

/**
 * Sentinel logs no "Ready to accept connections" line (it tells only systemd), which is what
 * startRedisServer waits for. This wrapper execs the sentinel (same pid, so pause/kill reach it)
 * and adds that line once the sentinel has logged its ID, by which time its port is bound.
 * Debian's `redis-sentinel` when installed, else `redis-server --sentinel` (the same program).
 */
function writeSentinelLauncher(dir: string, index: number, config: string): string {
  const conf = join(dir, `sentinel-${index}.conf`);
  const launcher = join(dir, `sentinel-${index}.sh`);
  writeFileSync(conf, config);
  writeFileSync(launcher, [
    '#!/usr/bin/env bash',
    `conf='${conf}'`,
    'if command -v redis-sentinel >/dev/null 2>&1; then set -- redis-sentinel "$conf" "$@"; else set -- redis-server "$conf" --sentinel "$@"; fi',
    // A read loop, not awk or sed: those may buffer their input and hold the line back.
    'exec "$@" > >(while IFS= read -r line; do printf \'%s\\n\' "$line"; case $line in *"Sentinel ID is"*) echo "Ready to accept connections";; esac; done)',
    '',
  ].join('\n'));
  chmodSync(launcher, 0o755);
  return launcher;
}

/**
 * Starts 1 primary, `replicas` replicas and `sentinels` sentinels on free 127.0.0.1 ports, and
 * resolves once the replicas are in sync and every sentinel knows the whole set and can reach its
 * quorum (so a failover can happen at once).
 */
export async function startSentinelSet(options: SentinelSetOptions = {}): Promise<SentinelSet> {
  const name = options.name ?? 'padlock';
  const sentinelCount = options.sentinels ?? 3;
  const quorum = options.quorum ?? Math.floor(sentinelCount / 2) + 1;
  const primary = await startServer({ args: DATA_NODE_ARGS });
  const replicas = await Promise.all(Array.from({ length: options.replicas ?? 2 }, () =>
    startServer({ args: [...DATA_NODE_ARGS, '--replicaof', primary.host, String(primary.port)] })));
  const dir = tempDir('padlock-sentinel-');
  // The port comes from startRedisServer's --port (a free one); Sentinel rewrites this file as it
  // learns the set, which is why each sentinel has its own.
  const config = [
    'bind 127.0.0.1',
    'protected-mode no',
    'sentinel resolve-hostnames no',
    `sentinel monitor ${name} 127.0.0.1 ${primary.port} ${quorum}`,
    `sentinel down-after-milliseconds ${name} ${options.downAfterMs ?? 1_000}`,
    `sentinel failover-timeout ${name} ${options.failoverTimeoutMs ?? 2_000}`,
    '',
  ].join('\n');
  const sentinels = await Promise.all(Array.from({ length: sentinelCount }, (_, i) =>
    startServer({ binary: writeSentinelLauncher(dir, i, config) })));
  // Connect the operator connections now, so the first probe does not pay for it.
  for (const server of [primary, ...replicas, ...sentinels]) admin(server);
  const set = new SentinelSet(name, [primary, ...replicas], sentinels, options.timeoutMs ?? 30_000);
  await set.waitForSync();
  await set.waitForSentinels();
  return set;
}
