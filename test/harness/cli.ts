/**
 * Running the built `padlock` bin as users run it: as a child process with pipes, or in a real
 * terminal (tmux), whose screen a test reads with `capture-pane` and types into with `send-keys`.
 */
import assert from 'node:assert/strict';
import { execFile, spawn, spawnSync } from 'node:child_process';
import { after } from 'node:test';
import { fileURLToPath } from 'node:url';
import { delay } from './redis.js';

/** The compiled bin (`build/src/cli/main.js`, made by `npm run build:all`). */
export const BIN = fileURLToPath(new URL('../../src/cli/main.js', import.meta.url));

/** How a run of the bin ended. */
export interface Run {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** The environment of a user who set no REDIS_URL (or `extra`'s). */
export function cleanEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env = { ...process.env, ...extra };
  if (!('REDIS_URL' in extra)) delete env['REDIS_URL'];
  delete env['PADLOCK_DEBUG'];
  delete env['NO_COLOR'];
  return env;
}

/** Runs the bin with `args`; `onStdout` sees the output as it arrives (and may signal the process). */
export function runBin(args: readonly string[], options: { env?: NodeJS.ProcessEnv; onStdout?: (soFar: string, pid: number) => void } = {}): Promise<Run> {
  const child = spawn(process.execPath, [BIN, ...args], { env: options.env ?? cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
    options.onStdout?.(stdout, child.pid ?? -1);
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

/** Asserts a failure was reported as one `padlock: …` line (plus at most a usage hint), no stack. */
export function assertOneLineError(run: Run, code: number, pattern: RegExp): void {
  assert.equal(run.code, code, `exit code; stderr: ${run.stderr}`);
  const lines = run.stderr.trimEnd().split('\n');
  assert.match(lines[0] ?? '', /^padlock: /);
  assert.match(lines[0] ?? '', pattern);
  assert.ok(lines.length === 1 || (lines.length === 2 && /^Run 'padlock/.test(lines[1] ?? '')), `one line expected, got:\n${run.stderr}`);
  assert.doesNotMatch(run.stderr, /^\s+at /m, 'no stack trace');
}

/** `read()`'s value once `done` says so (polled every 20 ms), or fails after `ms`, naming `what`. */
export async function until<T>(read: () => T | Promise<T>, what: string, done: (value: T) => boolean = Boolean, ms = 10_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > end) assert.fail(`not within ${ms} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Runs `padlock dashboard args…`: its URL (its first line) once it listens, its pid, and its end. */
export function startDashboardBin(args: readonly string[]): { url: Promise<string>; pid: Promise<number>; done: Promise<Run> } {
  let resolveUrl: (url: string) => void = () => undefined;
  let resolvePid: (pid: number) => void = () => undefined;
  const url = new Promise<string>((resolve) => (resolveUrl = resolve));
  const pid = new Promise<number>((resolve) => (resolvePid = resolve));
  const done = runBin(['dashboard', ...args], {
    env: cleanEnv(),
    onStdout: (soFar, childPid) => {
      resolvePid(childPid);
      const line = /^(.*)\n/.exec(soFar)?.[1];
      if (line !== undefined) resolveUrl(line);
    },
  });
  void done.then((run) => resolveUrl(`(exited ${run.code}: ${run.stderr})`));
  return { url, pid, done };
}

/** Why tmux tests cannot run here, or `undefined` when they can. */
export const noTmux: string | undefined =
  spawnSync('tmux', ['-V'], { stdio: 'ignore' }).status === 0 ? undefined : 'tmux is not installed (npm test installs it on Debian: scripts/prepare-machine.mjs)';

/** A private tmux server (its own socket), killed after the file's tests. */
const SOCKET = `padlock-test-${process.pid}`;
let started: Promise<string> | undefined;
after(async () => {
  if (started !== undefined) await tmux(['kill-server']).catch(() => undefined);
});

/**
 * Starts the server once, told to live on with no session: by default it exits when its last
 * session closes, and a test opening a terminal just then failed ("server exited unexpectedly").
 */
function tmuxServer(): Promise<string> {
  return (started ??= tmux(['start-server', ';', 'set-option', '-g', 'exit-empty', 'off']));
}

function tmux(args: readonly string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('tmux', ['-L', SOCKET, ...args], { timeout: 10_000 }, (error, stdout, stderr) => (error === null ? resolve(stdout) : reject(new Error(`tmux ${args.join(' ')}: ${stderr || error.message}`))));
  });
}

/** Quotes `text` for the shell tmux runs a command with. */
function shellQuote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}

/** A terminal (a tmux window of `columns` × `rows`) running the bin. */
export class Terminal {
  readonly #name: string;

  private constructor(name: string) {
    this.#name = name;
  }

  /**
   * Runs `padlock args…` in a new terminal; when it ends, the shell prints `EXIT=<code>` and keeps
   * the window open, so the test can read both.
   */
  static async open(args: readonly string[], options: { columns?: number; rows?: number; env?: NodeJS.ProcessEnv } = {}): Promise<Terminal> {
    await tmuxServer();
    const name = `t${Math.random().toString(36).slice(2, 10)}`;
    const env = Object.entries(options.env ?? {}).map(([k, v]) => `${k}=${shellQuote(v ?? '')} `).join('');
    const command = `${env}${shellQuote(process.execPath)} ${shellQuote(BIN)} ${args.map(shellQuote).join(' ')}; echo EXIT=$?; sleep 600`;
    await tmux(['new-session', '-d', '-s', name, '-x', String(options.columns ?? 120), '-y', String(options.rows ?? 30), command]);
    return new Terminal(name);
  }

  /** The visible screen, as text: a line the terminal wrapped is one line; trailing blank lines are dropped. */
  async screen(): Promise<string> {
    return (await tmux(['capture-pane', '-p', '-J', '-t', this.#name])).replace(/\s+$/, '');
  }

  /** Waits until the screen matches `pattern`; returns it. */
  async waitFor(pattern: RegExp, ms = 10_000): Promise<string> {
    const end = Date.now() + ms;
    let text = await this.screen();
    while (!pattern.test(text)) {
      if (Date.now() > end) assert.fail(`the terminal never showed ${pattern}; it shows:\n${text}`);
      await delay(50);
      text = await this.screen();
    }
    return text;
  }

  /** Types `keys` (tmux key names: `C-c`, `Enter`, or text). */
  async send(...keys: string[]): Promise<void> {
    await tmux(['send-keys', '-t', this.#name, ...keys]);
  }

  /** Closes the window (and what runs in it). */
  async close(): Promise<void> {
    await tmux(['kill-session', '-t', this.#name]).catch(() => undefined);
  }
}
