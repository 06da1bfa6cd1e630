/**
 * Starts private `redis-server` processes on free loopback ports.
 *
 * Used by the demo (`padlock demo` without a URL) and by the test harness. It is not part of the
 * lock API: it lives here so that the published CLI can start a server without test code.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Options for {@link startRedisServer}. */
export interface RedisServerOptions {
  /** Port to listen on; a free loopback port when omitted. */
  port?: number;
  /** Extra `redis-server` arguments, e.g. `['--requirepass', 'secret']`. */
  args?: readonly string[];
  /** Path or name of the server binary. @default 'redis-server' */
  binary?: string;
  /** How long to wait for the server to accept connections. @default 10000 */
  startTimeoutMs?: number;
}

/** A running private `redis-server`. */
export interface RedisServer {
  /** Loopback host the server listens on. */
  readonly host: '127.0.0.1';
  /** TCP port. */
  readonly port: number;
  /** `redis://127.0.0.1:port`. */
  readonly url: string;
  /** Operating-system process id. */
  readonly pid: number;
  /** Working directory (removed by `stop`). */
  readonly dir: string;
  /** Freezes the server (SIGSTOP): it accepts TCP connections but answers nothing. */
  pause(): void;
  /** Resumes a paused server (SIGCONT). */
  resume(): void;
  /** Kills the server (SIGKILL) without removing its directory; see {@link RedisServer.restart}. */
  kill(): Promise<void>;
  /** Starts the server again on the same port after `kill` (data is gone: no persistence). */
  restart(): Promise<void>;
  /** Stops the server and removes its directory. Safe to call twice. */
  stop(): Promise<void>;
}

/** Raised when `redis-server` is not installed or does not start. */
export class RedisServerStartError extends Error {
  override readonly name = 'RedisServerStartError';
}

const live = new Set<ChildProcess>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // Whatever happens to the parent, no redis-server outlives it.
  process.once('exit', () => {
    for (const child of live) child.kill('SIGKILL');
  });
}

/** Finds a free TCP port on 127.0.0.1 by binding port 0 and releasing it. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

function launch(binary: string, port: number, dir: string, args: readonly string[], timeoutMs: number): Promise<ChildProcess> {
  const child = spawn(
    binary,
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, ...args],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  live.add(child);
  installExitHook();
  return new Promise((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => fail(new RedisServerStartError(`redis-server did not start on port ${port} within ${timeoutMs} ms:\n${output}`)), timeoutMs);
    const onData = (chunk: Buffer): void => {
      output += chunk.toString();
      if (output.includes('Ready to accept connections')) {
        cleanup();
        // Keep draining output so the pipe never fills and blocks the server.
        child.stdout?.resume();
        child.stderr?.resume();
        resolve(child);
      }
    };
    const onError = (error: NodeJS.ErrnoException): void => {
      fail(
        error.code === 'ENOENT'
          ? new RedisServerStartError(`'${binary}' was not found: install Redis (Debian: apt-get install redis-server) or pass --url`)
          : new RedisServerStartError(`could not start ${binary}: ${error.message}`),
      );
    };
    // 'close', not 'exit': it comes once the output is read to the end, so the error names its cause
    // (say "Address already in use", which the callers retry on another port).
    const onExit = (code: number | null): void => {
      fail(new RedisServerStartError(`redis-server exited with code ${code} while starting on port ${port}:\n${output}`));
    };
    function cleanup(): void {
      clearTimeout(timer);
      child.stdout?.off('data', onData);
      child.stderr?.off('data', onData);
      child.off('error', onError);
      child.off('close', onExit);
    }
    function fail(error: Error): void {
      cleanup();
      live.delete(child);
      child.kill('SIGKILL');
      reject(error);
    }
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.on('error', onError);
    child.on('close', onExit);
  });
}

function waitForExit(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/**
 * Starts a `redis-server` bound to 127.0.0.1 on a free port, without persistence.
 * It is killed when this process exits, whatever the reason.
 */
export async function startRedisServer(options: RedisServerOptions = {}): Promise<RedisServer> {
  const binary = options.binary ?? 'redis-server';
  const args = options.args ?? [];
  const timeoutMs = options.startTimeoutMs ?? 10_000;
  const dir = mkdtempSync(join(tmpdir(), 'padlock-redis-'));
  let port = options.port ?? 0;
  let child: ChildProcess | undefined;
  // A port found free can be taken before the server binds it: try a few.
  for (let attempt = 0; child === undefined; attempt++) {
    const candidate = port === 0 ? await freePort() : port;
    try {
      child = await launch(binary, candidate, dir, args, timeoutMs);
      port = candidate;
    } catch (error) {
      const retryable = error instanceof RedisServerStartError && /Address already in use/.test(error.message);
      if (!retryable || options.port !== undefined || attempt >= 4) {
        rmSync(dir, { recursive: true, force: true });
        throw error;
      }
    }
  }
  let current: ChildProcess = child;
  let stopped = false;
  const kill = async (): Promise<void> => {
    current.kill('SIGCONT');
    current.kill('SIGKILL');
    await waitForExit(current);
    live.delete(current);
  };
  return {
    host: '127.0.0.1',
    port,
    url: `redis://127.0.0.1:${port}`,
    get pid() {
      return current.pid ?? -1;
    },
    dir,
    pause: () => void current.kill('SIGSTOP'),
    resume: () => void current.kill('SIGCONT'),
    kill,
    restart: async () => {
      await kill();
      current = await launch(binary, port, dir, args, timeoutMs);
    },
    stop: async () => {
      if (stopped) return;
      stopped = true;
      await kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
