/**
 * Real ZooKeeper servers (Debian's `zookeeper` package, run by the JVM) on free loopback ports,
 * standalone or as an ensemble, for the tests (test/harness/zookeeper.ts stops them after a file)
 * and the benchmarks.
 *
 * The servers keep their data on disk as ZooKeeper always does (a killed server that restarts
 * finds its log again), with `forceSync` on: a grant is only as durable as a real ensemble makes it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { connect as tcpConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../src/devserver/redis-server.js';
import { freeze } from './freeze.js';
import './terminated.js';
import { exitedAtStart, onFreshPorts, startedOrStopped } from './port-taken.js';

/** Where Debian's package puts the server's jar (its manifest names every other jar it needs). */
const ZOOKEEPER_JAR = process.env['ZOOKEEPER_JAR'] ?? '/usr/share/java/zookeeper.jar';
/** One tick; session time-outs are bounded by 2 and 20 ticks unless the config says otherwise. */
const TICK_MS = 200;

/** One ZooKeeper server process of an {@link Ensemble}. */
export interface ZooKeeperServer {
  /** The server's id in the ensemble (its `myid`), from 1. */
  readonly id: number;
  /** The client port, on 127.0.0.1. */
  readonly port: number;
  /** `127.0.0.1:<port>`. */
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
  /** `srvr`'s mode line: `leader`, `follower` or `standalone`; `undefined` when it does not answer. */
  mode(): Promise<string | undefined>;
}

/** A standalone server or an ensemble, as a client reaches it. */
export interface Ensemble {
  readonly servers: readonly ZooKeeperServer[];
  /** The connection string of every server: `127.0.0.1:p1,127.0.0.1:p2,…`. */
  readonly connectString: string;
  /** The server that leads now (the standalone server of a one-server ensemble). */
  leader(): Promise<ZooKeeperServer>;
  /** Stops every server and removes their data. Safe to call twice. */
  stop(): Promise<void>;
}

// Whatever happens to the test process, no JVM outlives it.
const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

/** Sends a four-letter command and returns the reply; `undefined` when the server does not answer within `ms`. */
export function fourLetters(port: number, word: string, ms = 1_000): Promise<string | undefined> {
  return new Promise((resolve) => {
    const socket = tcpConnect({ host: '127.0.0.1', port });
    let reply = '';
    const timer = setTimeout(() => done(undefined), ms);
    const done = (value: string | undefined): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(value);
    };
    socket.on('connect', () => socket.write(word));
    socket.on('data', (chunk) => (reply += chunk.toString()));
    socket.on('end', () => done(reply));
    socket.on('error', () => done(undefined));
  });
}

/**
 * Starts `size` ZooKeeper servers on free loopback ports (1: standalone; 3 or 5: an ensemble) and
 * waits until every one serves; the caller stops them (tests: {@link startZooKeeper}). Started
 * again on fresh ports when one was taken meanwhile (port-taken.ts); a start that fails stops the
 * servers it started.
 */
export function startEnsemble(size = 1, options: { maxSessionTimeoutMs?: number } = {}): Promise<Ensemble> {
  return onFreshPorts(() => startEnsembleOnce(size, options));
}

async function startEnsembleOnce(size: number, options: { maxSessionTimeoutMs?: number }): Promise<Ensemble> {
  const dir = mkdtempSync(join(tmpdir(), 'padlock-zookeeper-'));
  const ports = await Promise.all(Array.from({ length: size }, async () => ({ client: await freePort(), quorum: await freePort(), election: await freePort() })));
  const servers = ports.map((port, index) => {
    const id = index + 1;
    const dataDir = join(dir, `server-${id}`);
    mkdirSync(dataDir, { recursive: true });
    const lines = [
      `tickTime=${TICK_MS}`,
      `dataDir=${dataDir}`,
      `clientPort=${port.client}`,
      'clientPortAddress=127.0.0.1',
      'admin.enableServer=false',
      'initLimit=50',
      'syncLimit=10',
      `minSessionTimeout=${2 * TICK_MS}`,
      `maxSessionTimeout=${options.maxSessionTimeoutMs ?? 60_000}`,
      '4lw.commands.whitelist=*',
      // Quick to notice a dead peer: the tests kill leaders.
      'cnxTimeout=1000',
    ];
    if (size > 1) {
      writeFileSync(join(dataDir, 'myid'), `${id}\n`);
      ports.forEach((p, i) => lines.push(`server.${i + 1}=127.0.0.1:${p.quorum}:${p.election}`));
    }
    const config = join(dataDir, 'zoo.cfg');
    writeFileSync(config, `${lines.join('\n')}\n`);
    return new Server(id, port.client, config, join(dataDir, 'server.log'));
  });
  const ensemble: Ensemble = {
    servers,
    connectString: servers.map((s) => s.address).join(','),
    async leader() {
      for (let tries = 0; tries < 200; tries++) {
        for (const server of servers) {
          const mode = server.running ? await server.mode() : undefined;
          if (mode === 'leader' || mode === 'standalone') return server;
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      throw new Error('no ZooKeeper server leads');
    },
    async stop() {
      await Promise.all(servers.map((s) => s.kill()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return startedOrStopped(ensemble, async () => {
    await Promise.all(servers.map((s) => s.start()));
    await ensemble.leader();
  });
}

class Server implements ZooKeeperServer {
  #process: ChildProcess | undefined;
  #paused = false;
  readonly address: string;

  constructor(
    readonly id: number,
    readonly port: number,
    private readonly config: string,
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
    const child = spawn('java', ['-Xmx256m', '-XX:+UseSerialGC', '-XX:TieredStopAtLevel=1', '-cp', ZOOKEEPER_JAR, 'org.apache.zookeeper.server.quorum.QuorumPeerMain', this.config], {
      stdio: ['ignore', out, out],
    });
    closeSync(out);
    this.#process = child;
    live.add(child);
    child.once('exit', () => {
      live.delete(child);
      if (this.#process === child) this.#process = undefined;
    });
    const end = Date.now() + 30_000;
    while (Date.now() < end) {
      if (this.#process !== child) throw exitedAtStart(`ZooKeeper server ${this.id}`, this.log);
      if ((await fourLetters(this.port, 'ruok', 500)) === 'imok') return;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error(`ZooKeeper server ${this.id} did not answer within 30 s`);
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

  async mode(): Promise<string | undefined> {
    const reply = await fourLetters(this.port, 'srvr', 500);
    return /^Mode: (\w+)/m.exec(reply ?? '')?.[1];
  }
}
