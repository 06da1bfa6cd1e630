/**
 * Progress bars for the terminal, in plain ANSI (colours from picocolors), that degrade to one line per finished task when the
 * output is not a terminal (CI, pipes, tests).
 */
import type { Writable } from 'node:stream';
import { colors } from './render.js';

/** Where and how to draw. */
export interface TerminalOutput {
  /** The stream to write to. */
  readonly stream: Writable;
  /** Redraw a line in place (a TTY); otherwise print each finished line once. */
  readonly interactive: boolean;
  /** Use ANSI colours. */
  readonly color: boolean;
  /** Terminal width in columns. */
  readonly columns: number;
}

/**
 * Describes `stream` as a {@link TerminalOutput}: interactive when it is a TTY, coloured when it is a
 * TTY and neither `NO_COLOR` is set nor `TERM=dumb`.
 */
export function terminalOutput(stream: Writable & { isTTY?: boolean; columns?: number }, env: NodeJS.ProcessEnv = process.env): TerminalOutput {
  const interactive = stream.isTTY === true && env['TERM'] !== 'dumb';
  return {
    stream,
    interactive,
    color: interactive && env['NO_COLOR'] === undefined,
    columns: stream.columns !== undefined && stream.columns > 0 ? stream.columns : 80,
  };
}

/** What a progress line shows at one moment. */
export interface ProgressState {
  /** Units done so far (may exceed the total: the bar stays full). */
  readonly done: number;
  /** Text after the counter, already styled (e.g. "+12 oversold"). */
  readonly note?: string;
}

const BAR_WIDTH = 28;
const REDRAW_MS = 50;
// Visible length of a string that may hold ANSI styles.
const ESCAPE = String.fromCharCode(27);
const visible = (text: string): number => text.split(ESCAPE).map((part, i) => (i === 0 ? part : part.replace(/^\[[0-9;]*m/, ''))).join('').length;

/**
 * One task's progress line: `label [██████░░░░] done/total note`.
 *
 * On a terminal the line is redrawn in place (at most every 50 ms) until {@link ProgressLine.finish}
 * writes its last state and a newline. Elsewhere nothing is drawn until `finish`, which prints the
 * summary once, so logs get one line per task.
 */
export class ProgressLine {
  readonly #output: TerminalOutput;
  readonly #label: string;
  readonly #total: number;
  #state: ProgressState = { done: 0 };
  #drawnAt = -Infinity;
  #pending: NodeJS.Timeout | undefined;
  #finished = false;

  /**
   * @param label text before the bar, padded by the caller to align several lines
   * @param total units at which the bar is full
   */
  constructor(output: TerminalOutput, label: string, total: number) {
    this.#output = output;
    this.#label = label;
    this.#total = Math.max(1, total);
    if (output.interactive) this.#draw();
  }

  /** Records the latest state; redraws now or within 50 ms. */
  update(state: ProgressState): void {
    if (this.#finished) return;
    this.#state = state;
    if (!this.#output.interactive || this.#pending !== undefined) return;
    const wait = this.#drawnAt + REDRAW_MS - performance.now();
    if (wait <= 0) this.#draw();
    else this.#pending = setTimeout(() => {
      this.#pending = undefined;
      if (!this.#finished) this.#draw();
    }, wait);
  }

  /**
   * Draws the final state followed by `suffix` (e.g. the elapsed time) and ends the line.
   * On a non-terminal this is the only line written. Safe to call twice.
   */
  finish(state: ProgressState, suffix: string): void {
    if (this.#finished) return;
    this.#finished = true;
    clearTimeout(this.#pending);
    this.#state = state;
    if (this.#output.interactive) this.#draw(suffix, '\n');
    else this.#output.stream.write(`${this.#label} ${this.#counter()}${this.#noteText()}  ${suffix}\n`);
  }

  /** Ends the line as it stands (e.g. on Ctrl-C), so later output starts on a fresh line. */
  abandon(): void {
    if (this.#finished) return;
    this.#finished = true;
    clearTimeout(this.#pending);
    if (this.#output.interactive) this.#output.stream.write('\n');
  }

  #counter(): string {
    const width = String(this.#total).length;
    return `${String(this.#state.done).padStart(width)}/${this.#total} sold`;
  }

  #noteText(): string {
    return this.#state.note === undefined ? '' : ` ${this.#state.note}`;
  }

  #draw(suffix = '', end = ''): void {
    this.#drawnAt = performance.now();
    const s = colors(this.#output);
    const filled = Math.min(BAR_WIDTH, Math.round((this.#state.done / this.#total) * BAR_WIDTH));
    const bar = `[${'█'.repeat(filled)}${s.dim('░'.repeat(BAR_WIDTH - filled))}]`;
    let line = `${this.#label} ${bar} ${this.#counter()}${this.#noteText()}${suffix === '' ? '' : `  ${suffix}`}`;
    // Never wrap: a wrapped line cannot be redrawn in place.
    if (visible(line) >= this.#output.columns) line = `${this.#label} ${this.#counter()}${this.#noteText()}`;
    this.#output.stream.write(`\r\x1b[2K${line}${end}`);
  }
}
