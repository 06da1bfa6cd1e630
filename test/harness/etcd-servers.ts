/**
 * Real etcd members (Debian's `etcd-server` package, /usr/bin/etcd 3.4) on free loopback ports, as
 * one member or a cluster, for the tests (test/harness/etcd.ts stops them after a file) and the
 * benchmarks.
 *
 * Members keep their data on disk as etcd always does (a killed member that restarts finds its
 * write-ahead log again and rejoins), with etcd's own fsync: a grant is only as durable as a real
 * cluster makes it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../src/devserver/redis-server.js';
import { freeze } from './freeze.js';
import './terminated.js';
import { exitedAtStart, onFreshPorts, startedOrStopped } from './port-taken.js';

const ETCD = process.env['ETCD_BIN'] ?? '/usr/bin/etcd';
/**
 * Raft timing. etcd's defaults (100/1000 ms) but a longer election time-out: the machine is shared
 * and loaded, and a member that misses heartbeats for a moment must not start elections all the
 * time. etcd's shortest lease TTL follows from it: 1.5 election time-outs.
 */
const HEARTBEAT_MS = 100;
const ELECTION_MS = 1_200;

/** One etcd process of a {@link Cluster}. */
export interface EtcdMember {
  /** The member's name, `m1`, `m2`, … */
  readonly name: string;
  /** The client port, on 127.0.0.1. */
  readonly port: number;
  /** `127.0.0.1:<port>`, as an `Etcd3` client's host. */
  readonly address: string;
  /** Whether the process runs (and is not frozen). */
  readonly running: boolean;
  /** Kills the process (SIGKILL); its data stays on disk for {@link start}. */
  kill(): Promise<void>;
  /** Starts the process again on the same ports and data. */
  start(): Promise<void>;
  /** Freezes the process (SIGSTOP): connections stay open but nothing answers. */
  pause(): void;
  /** Resumes a frozen process (SIGCONT). */
  resume(): void;
  /** The member's status: its own id and the leader's; `undefined` when it does not answer. */
  status(): Promise<{ memberId: string; leader: string } | undefined>;
  /** One Prometheus metric's value from the member's `/metrics` (summed over its labels); `undefined` when absent. */
  metric(name: string): Promise<number | undefined>;
}

/** One member or a cluster, as a client reaches it. */
export interface Cluster {
  readonly members: readonly EtcdMember[];
  /** Every member's address, for `new Etcd3({ hosts })`. */
  readonly hosts: string[];
  /** The member that leads now, once one does. */
  leader(): Promise<EtcdMember>;
  /** Stops every member and removes their data. Safe to call twice. */
  stop(): Promise<void>;
}

// Whatever happens to the test process, no etcd outlives it: an exit, or the test runner's SIGTERM
// for a file that timed out (after which no `after` hook runs).
const live = new Set<ChildProcess>();
const killAll = (): void => {
  for (const child of live) child.kill('SIGKILL');
};
process.once('exit', killAll);
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    killAll();
    process.exit(128 + (signal === 'SIGTERM' ? 15 : 2));
  });
}

/** An HTTP call to a member's client port, bounded by `ms`; `undefined` on no answer. */
async function http(port: number, path: string, body?: string, ms = 1_000): Promise<string | undefined> {
  try {
    const response = await fetch(`http://127.0.0.1:${port}${path}`, { method: body === undefined ? 'GET' : 'POST', signal: AbortSignal.timeout(ms), ...(body === undefined ? {} : { body }) });
    return response.ok ? await response.text() : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Starts `size` etcd members on free loopback ports (1, or 3 or 5 for a cluster) and waits until
 * one leads; the caller stops them (tests: {@link startEtcd}). Started again on fresh ports when
 * one was taken meanwhile (port-taken.ts); a start that fails stops the members it started.
 */
export function startCluster(size = 1): Promise<Cluster> {
  return onFreshPorts(() => startClusterOnce(size));
}

async function startClusterOnce(size: number): Promise<Cluster> {
  const dir = mkdtempSync(join(tmpdir(), 'padlock-etcd-'));
  const ports = await Promise.all(Array.from({ length: size }, async () => ({ client: await freePort(), peer: await freePort() })));
  const initialCluster = ports.map((p, i) => `m${i + 1}=http://127.0.0.1:${p.peer}`).join(',');
  const token = `padlock-${process.pid}-${Date.now()}`;
  const members = ports.map((port, index) => {
    const name = `m${index + 1}`;
    const dataDir = join(dir, name);
    mkdirSync(dataDir, { recursive: true });
    const args = [
      `--name=${name}`,
      `--data-dir=${join(dataDir, 'data')}`,
      `--listen-client-urls=http://127.0.0.1:${port.client}`,
      `--advertise-client-urls=http://127.0.0.1:${port.client}`,
      `--listen-peer-urls=http://127.0.0.1:${port.peer}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${port.peer}`,
      `--initial-cluster=${initialCluster}`,
      `--initial-cluster-token=${token}`,
      '--initial-cluster-state=new',
      `--heartbeat-interval=${HEARTBEAT_MS}`,
      `--election-timeout=${ELECTION_MS}`,
      '--logger=zap',
      '--log-level=warn',
    ];
    return new Member(name, port.client, args, join(dataDir, 'etcd.log'));
  });
  const cluster: Cluster = {
    members,
    hosts: members.map((m) => m.address),
    async leader() {
      for (let tries = 0; tries < 300; tries++) {
        for (const member of members) {
          const status = member.running ? await member.status() : undefined;
          if (status !== undefined && status.leader !== '0' && status.leader === status.memberId) return member;
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      throw new Error('no etcd member leads');
    },
    async stop() {
      await Promise.all(members.map((m) => m.kill()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return startedOrStopped(cluster, async () => {
    await Promise.all(members.map((m) => m.start()));
    await cluster.leader();
  });
}

class Member implements EtcdMember {
  #process: ChildProcess | undefined;
  #paused = false;
  readonly address: string;

  constructor(
    readonly name: string,
    readonly port: number,
    private readonly args: readonly string[],
    private readonly log: string,
  ) {
    this.address = `127.0.0.1:${port}`;
  }

  get running(): boolean {
    return this.#process !== undefined && !this.#paused;
  }

  async start(): Promise<void> {
    if (this.#process !== undefined) return;
    const out = openSync(this.log, 'a');
    const child = spawn(ETCD, this.args, { stdio: ['ignore', out, out] });
    closeSync(out);
    this.#process = child;
    live.add(child);
    child.once('exit', () => {
      live.delete(child);
      if (this.#process === child) this.#process = undefined;
    });
    // A member of a new cluster answers /health only once a leader is elected, which needs the
    // others: wait for its client port to answer at all (the metrics page), not for health.
    const end = Date.now() + 30_000;
    while (Date.now() < end) {
      if (this.#process !== child) throw exitedAtStart(`etcd member ${this.name}`, this.log);
      if ((await http(this.port, '/version', undefined, 500)) !== undefined) return;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(`etcd member ${this.name} did not answer within 30 s`);
  }

  async kill(): Promise<void> {
    const child = this.#process;
    if (child === undefined) return;
    this.#process = undefined;
    this.#paused = false;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  }

  pause(): void {
    const pid = this.#process?.pid;
    if (pid !== undefined) freeze(pid);
    this.#paused = true;
  }

  resume(): void {
    this.#process?.kill('SIGCONT');
    this.#paused = false;
  }

  async status(): Promise<{ memberId: string; leader: string } | undefined> {
    const reply = await http(this.port, '/v3/maintenance/status', '{}', 500);
    if (reply === undefined) return undefined;
    const status = JSON.parse(reply) as { header?: { member_id?: string }; leader?: string };
    return { memberId: status.header?.member_id ?? '', leader: status.leader ?? '0' };
  }

  async metric(name: string): Promise<number | undefined> {
    const page = await http(this.port, '/metrics');
    if (page === undefined) return undefined;
    let total: number | undefined;
    for (const line of page.split('\n')) {
      const match = /^(\w+)(?:\{[^}]*\})? (\S+)$/.exec(line);
      if (match?.[1] === name) total = (total ?? 0) + Number(match[2]);
    }
    return total;
  }
}
