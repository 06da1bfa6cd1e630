/**
 * How the CLI prints: borderless tables (cli-table3), colours (picocolors, off unless the output is
 * a terminal and NO_COLOR is unset), and the units operators read (durations, owner tokens).
 */
import Table from 'cli-table3';
import pc from 'picocolors';
import type { TerminalOutput } from './progress.js';

/** The colour functions of picocolors, as identity functions when colour is off. */
export type Colors = ReturnType<typeof pc.createColors>;

/** The colours to use on `output`. */
export function colors(output: Pick<TerminalOutput, 'color'>): Colors {
  return pc.createColors(output.color);
}

/** A column of {@link table}. */
export interface Column {
  /** Header text. */
  readonly title: string;
  /** Alignment of the header and the cells. @default 'left' */
  readonly align?: 'left' | 'right';
}

const NO_BORDERS = {
  top: '',
  'top-mid': '',
  'top-left': '',
  'top-right': '',
  bottom: '',
  'bottom-mid': '',
  'bottom-left': '',
  'bottom-right': '',
  left: '',
  'left-mid': '',
  mid: '',
  'mid-mid': '',
  right: '',
  'right-mid': '',
  middle: '  ',
} as const;

/**
 * Rows of already-rendered cells (which may hold colours) as a table without borders: a header line,
 * then one line per row, columns two spaces apart, no trailing spaces.
 * @param headerStyle applied to each header cell (e.g. bold)
 */
export function table(columns: readonly Column[], rows: readonly (readonly string[])[], headerStyle: (text: string) => string = (t) => t): string {
  const aligns = columns.map((c) => c.align ?? 'left');
  const t = new Table({ chars: NO_BORDERS, style: { head: [], border: [], 'padding-left': 0, 'padding-right': 0 }, colAligns: aligns, wordWrap: false });
  // The header as a first row: cli-table3 aligns its own header cells left whatever the column.
  t.push(columns.map((c, i) => ({ content: headerStyle(c.title), hAlign: aligns[i] ?? 'left' })));
  for (const row of rows) t.push([...row]);
  return t
    .toString()
    .split('\n')
    .map((line) => line.trimEnd())
    .join('\n');
}

/** A duration for people: `850 ms`, `28.1 s`, `12m 05s`, `3h 02m`, `2d 04h`; `—` for `null`. */
export function duration(ms: number | null): string {
  if (ms === null) return '—';
  const sign = ms < 0 ? '-' : '';
  const abs = Math.abs(ms);
  if (abs < 1_000) return `${sign}${Math.round(abs)} ms`;
  if (abs < 60_000) return `${sign}${(Math.floor(abs / 100) / 10).toFixed(1)} s`;
  const s = Math.floor(abs / 1_000);
  const two = (n: number): string => String(n).padStart(2, '0');
  if (s < 3_600) return `${sign}${Math.floor(s / 60)}m ${two(s % 60)}s`;
  if (s < 86_400) return `${sign}${Math.floor(s / 3_600)}h ${two(Math.floor(s / 60) % 60)}m`;
  return `${sign}${Math.floor(s / 86_400)}d ${two(Math.floor(s / 3_600) % 24)}h`;
}

/** The first 8 characters of an owner token, enough to tell holders apart on screen. */
export function shortToken(token: string): string {
  return token.length > 9 ? `${token.slice(0, 8)}…` : token;
}
