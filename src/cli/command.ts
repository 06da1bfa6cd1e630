/**
 * What a subcommand of the `padlock` bin is. `main.ts` dispatches to one by name; each lives in its
 * own module (`demo.ts`; later `list`, `inspect`, `force-release`, `watch`).
 */
import type { Writable } from 'node:stream';

/** A writable stream that may be a terminal. */
export type OutputStream = Writable & { isTTY?: boolean; columns?: number };

/** What a subcommand gets from the process, so that it can be run (and tested) without globals. */
export interface CommandContext {
  /** Results and progress. */
  readonly stdout: OutputStream;
  /** Warnings. Errors are not written by commands: they throw a `CliError` and `main` reports it. */
  readonly stderr: OutputStream;
  /** Environment variables (e.g. `REDIS_URL`, `NO_COLOR`). */
  readonly env: NodeJS.ProcessEnv;
  /** Aborted on Ctrl-C (SIGINT) or SIGTERM: the command cleans up and throws `CliError` with exit code 130. */
  readonly signal: AbortSignal;
}

/** A subcommand: `padlock <name> [options]`. */
export interface Command {
  /** The word after `padlock`. */
  readonly name: string;
  /** One line for `padlock --help`. */
  readonly summary: string;
  /** The full text of `padlock <name> --help`. */
  readonly help: string;
  /**
   * Runs the command with the arguments after its name.
   * @returns the exit code
   * @throws CliError for every failure the user should see as one line
   */
  run(argv: readonly string[], context: CommandContext): Promise<number>;
}
