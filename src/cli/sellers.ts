/**
 * The seller processes of `padlock demo`: forks them, runs a phase on all of them at once, collects
 * their results, and turns any crash, error report, stall or interruption into one {@link CliError}.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { CliError, firstLine, interruptedError } from './errors.js';
import type { FromSeller, RunMessage, SellerResult, ToSeller } from './demo-protocol.js';

/** The compiled seller module, next to this one (in `dist/cli/` or `build/src/cli/`). */
const SELLER_MODULE = fileURLToPath(new URL('./demo-seller.js', import.meta.url));
/** How long all sellers together may take to start and connect. */
const START_TIMEOUT_MS = 20_000;
/** A phase fails when no seller reported anything for this long. */
const STALL_TIMEOUT_MS = 30_000;
/** How long `stop` waits for sellers to exit before killing them. */
const STOP_TIMEOUT_MS = 3_000;

interface Seller {
  readonly index: number;
  readonly child: ChildProcess;
  stderr: string;
  exited: boolean;
}

/** A set of running seller processes. */
export class SellerPool {
  readonly #sellers: Seller[];
  readonly #signal: AbortSignal;
  readonly #failure: Promise<never>;
  #fail!: (error: CliError) => void;
  #stopping = false;
  #lastHeard = performance.now();
  readonly #listeners = new Set<(seller: number, message: FromSeller) => void>();

  private constructor(count: number, signal: AbortSignal) {
    this.#signal = signal;
    this.#failure = new Promise<never>((_, reject) => (this.#fail = reject));
    this.#failure.catch(() => undefined); // observed by whichever wait races it
    const onAbort = (): void => this.#fail(interruptedError(signal));
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
    this.#sellers = Array.from({ length: count }, (_, index) => this.#spawn(index));
  }

  /**
   * Forks `count` sellers and waits until each has connected to `url`.
   * @param signal aborting it (Ctrl-C) makes every pending wait reject with an "interrupted" CliError
   */
  static async start(count: number, url: string, prefix: string, signal: AbortSignal): Promise<SellerPool> {
    const pool = new SellerPool(count, signal);
    try {
      const ready = pool.#collect('ready', START_TIMEOUT_MS, `${count === 1 ? 'the seller' : `the ${count} sellers`} did not start within ${START_TIMEOUT_MS / 1000} s`);
      pool.#broadcast({ type: 'connect', url, prefix });
      await ready;
      return pool;
    } catch (error) {
      await pool.stop();
      throw error;
    }
  }

  /**
   * Runs one phase on every seller at once and resolves with each seller's result, in seller order.
   * @param onProgress called with the tickets sold so far by all sellers together
   */
  async run(run: Omit<RunMessage, 'type'>, onProgress: (sold: number) => void): Promise<SellerResult[]> {
    const sold = new Array<number>(this.#sellers.length).fill(0);
    const progress = (seller: number, message: FromSeller): void => {
      if (message.type !== 'progress' && message.type !== 'done') return;
      sold[seller] = message.sold;
      onProgress(sold.reduce((a, b) => a + b, 0));
    };
    this.#listeners.add(progress);
    try {
      const done = this.#collect('done', Infinity, '');
      this.#broadcast({ type: 'run', ...run });
      return await done;
    } finally {
      this.#listeners.delete(progress);
    }
  }

  /** Asks every seller to exit, and kills those still running after 3 s. Safe to call twice. */
  async stop(): Promise<void> {
    this.#stopping = true;
    this.#broadcast({ type: 'stop' });
    const running = this.#sellers.filter((s) => !s.exited);
    const exited = Promise.all(running.map((s) => new Promise((resolve) => s.child.once('exit', resolve))));
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), STOP_TIMEOUT_MS)));
    if ((await Promise.race([exited, timeout])) === 'timeout') {
      for (const s of running) if (!s.exited) s.child.kill('SIGKILL');
      await exited;
    }
    clearTimeout(timer);
  }

  #spawn(index: number): Seller {
    const child = fork(SELLER_MODULE, [], { stdio: ['ignore', 'ignore', 'pipe', 'ipc'], execArgv: [], serialization: 'json' });
    const seller: Seller = { index, child, stderr: '', exited: false };
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (chunk: string) => (seller.stderr = (seller.stderr + chunk).slice(-4_000)));
    child.on('message', (message: FromSeller) => {
      this.#lastHeard = performance.now();
      if (message.type === 'error') this.#fail(new CliError(`seller ${index + 1}: ${message.message}`));
      for (const listener of this.#listeners) listener(index, message);
    });
    child.on('error', (error) => this.#fail(new CliError(`seller ${index + 1} could not run: ${firstLine(error)}`, undefined, { cause: error })));
    child.on('exit', (code, signal) => {
      seller.exited = true;
      if (this.#stopping || this.#signal.aborted) return;
      // Let a pending 'error' message win: it says more than the exit status.
      setImmediate(() => {
        const detail = firstLine(seller.stderr.split('\n').find((line) => /Error|error:/.test(line)) ?? seller.stderr);
        this.#fail(new CliError(`seller ${index + 1} exited unexpectedly (${signal ?? `code ${code}`})${detail ? `: ${detail}` : ''}`));
      });
    });
    return seller;
  }

  #broadcast(message: ToSeller): void {
    for (const { child, exited } of this.#sellers) {
      if (!exited && child.connected) child.send(message, (error) => void error /* its exit is reported */);
    }
  }

  /** Waits until every seller sent a message of `type`; resolves with those messages in seller order. */
  #collect<T extends FromSeller['type']>(type: T, timeoutMs: number, timeoutMessage: string): Promise<Extract<FromSeller, { type: T }>[]> {
    const received = new Array<Extract<FromSeller, { type: T }> | undefined>(this.#sellers.length);
    let count = 0;
    let listener: ((seller: number, message: FromSeller) => void) | undefined;
    let timer: NodeJS.Timeout | undefined;
    let stallCheck: NodeJS.Timeout | undefined;
    const all = new Promise<Extract<FromSeller, { type: T }>[]>((resolve, reject) => {
      listener = (seller, message) => {
        if (message.type !== type || received[seller] !== undefined) return;
        received[seller] = message as Extract<FromSeller, { type: T }>;
        if (++count === received.length) resolve(received as Extract<FromSeller, { type: T }>[]);
      };
      this.#listeners.add(listener);
      if (Number.isFinite(timeoutMs)) timer = setTimeout(() => reject(new CliError(timeoutMessage)), timeoutMs);
      this.#lastHeard = performance.now();
      stallCheck = setInterval(() => {
        if (performance.now() - this.#lastHeard > STALL_TIMEOUT_MS) {
          reject(new CliError(`no seller made progress for ${STALL_TIMEOUT_MS / 1000} s`));
        }
      }, 1_000);
    });
    return Promise.race([all, this.#failure]).finally(() => {
      if (listener !== undefined) this.#listeners.delete(listener);
      clearTimeout(timer);
      clearInterval(stallCheck);
    });
  }
}
