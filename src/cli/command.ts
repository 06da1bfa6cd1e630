/**
 * What a subcommand of the `padlock` bin gets from the process, so that it can be run (and tested)
 * without globals. `program.ts` declares the subcommands (commander) and calls each one's `run`.
 */
import type { Readable, Writable } from 'node:stream';

/** A writable stream that may be a terminal. */
export type OutputStream = Writable & { isTTY?: boolean; columns?: number; rows?: number };

/** A readable stream that may be a terminal. */
export type InputStream = Readable & { isTTY?: boolean };

/** What a subcommand gets from the process. */
export interface CommandContext {
  /** Results and progress. */
  readonly stdout: OutputStream;
  /** Warnings and prompts. Errors are not written by commands: they throw a `CliError` and `main` reports it. */
  readonly stderr: OutputStream;
  /** Answers to prompts (`release` asks for confirmation when this and stderr are terminals). */
  readonly stdin: InputStream;
  /** Environment variables (e.g. `REDIS_URL`, `NO_COLOR`). */
  readonly env: NodeJS.ProcessEnv;
  /** Aborted on Ctrl-C (SIGINT) or SIGTERM, with the signal's name as its reason. */
  readonly signal: AbortSignal;
}
