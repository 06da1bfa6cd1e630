/**
 * The dashboard's live feed: while at least one page listens (server-sent events), reads the
 * source every interval and sends each page the same snapshot; with no page listening, reads
 * nothing. One read at a time, shared by every page and by one-off requests.
 */
import type { ServerResponse } from 'node:http';
import { monotonicNow } from '../clock.js';
import { HoldAges } from './hold-ages.js';
import { MAX_LOCKS, type Snapshot } from './snapshot.js';
import type { DashboardSource } from './source.js';

/** How the feed reads. */
export interface LiveFeedOptions {
  /** Time between two reads, in ms. */
  readonly intervalMs: number;
  /** Whether force-release is offered (the page shows the buttons). */
  readonly allowRelease: boolean;
}

export class LiveFeed {
  readonly #source: DashboardSource;
  readonly #options: LiveFeedOptions;
  readonly #ages = new HoldAges();
  readonly #pages = new Set<ServerResponse>();
  #reading: Promise<Snapshot> | undefined;
  #timer: NodeJS.Timeout | undefined;
  #running = false;
  #closed = false;

  constructor(source: DashboardSource, options: LiveFeedOptions) {
    this.#source = source;
    this.#options = options;
  }

  /** Reads the source now (or joins the read under way). */
  snapshot(): Promise<Snapshot> {
    this.#reading ??= this.#read().finally(() => (this.#reading = undefined));
    return this.#reading;
  }

  /** Streams snapshots to `res` (an event stream) until it closes. */
  listen(res: ServerResponse): void {
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', connection: 'keep-alive', 'x-accel-buffering': 'no' });
    // The browser reconnects on its own after a drop; 2 s keeps a restarted dashboard's gap short.
    res.write('retry: 2000\n\n');
    if (this.#closed) return void res.end();
    this.#pages.add(res);
    res.on('close', () => this.#pages.delete(res));
    if (!this.#running) void this.#loop();
    else this.#refresh();
  }

  /** Reads and sends at once (after a force-release, say), instead of at the next interval. */
  refresh(): void {
    if (this.#running) this.#refresh();
  }

  /** Ends every page's stream and stops reading. */
  close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
    for (const res of this.#pages) res.end();
    this.#pages.clear();
  }

  async #read(): Promise<Snapshot> {
    const started = monotonicNow();
    const reading = await this.#source.read();
    const locks = this.#ages.date(reading.locks);
    return {
      at: new Date().toISOString(),
      store: this.#source.description,
      allowRelease: this.#options.allowRelease,
      locks: locks.slice(0, MAX_LOCKS),
      totalLocks: locks.length,
      timings: reading.timings,
      audit: reading.audit,
      readMs: Math.round(monotonicNow() - started),
    };
  }

  /** Reads and sends while pages listen, one interval apart. */
  async #loop(): Promise<void> {
    this.#running = true;
    while (this.#pages.size > 0 && !this.#closed) {
      await this.#sendOne();
      if (this.#pages.size === 0 || this.#closed) break;
      await new Promise<void>((resolve) => {
        this.#wake = resolve;
        this.#timer = setTimeout(resolve, this.#options.intervalMs);
      });
      this.#wake = undefined;
    }
    this.#running = false;
  }

  #wake: (() => void) | undefined;

  #refresh(): void {
    clearTimeout(this.#timer);
    this.#wake?.();
  }

  async #sendOne(): Promise<void> {
    let message: string;
    try {
      message = `event: snapshot\ndata: ${JSON.stringify(await this.snapshot())}\n\n`;
    } catch (error) {
      message = `event: problem\ndata: ${JSON.stringify({ at: new Date().toISOString(), message: error instanceof Error ? error.message : String(error) })}\n\n`;
    }
    for (const res of this.#pages) res.write(message);
  }
}
