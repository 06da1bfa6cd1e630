/**
 * The one error type the CLI reports to its user: a one-line message and an exit code, never a stack.
 */

/** Exit codes of the `padlock` bin. */
export const ExitCode = {
  /** The command did what was asked. */
  ok: 0,
  /** The command failed (Redis unreachable, redis-server missing, a seller crashed, …). */
  failure: 1,
  /** The command line was wrong (unknown command or option, bad value). */
  usage: 2,
  /** Interrupted by SIGINT (Ctrl-C): 128 + 2, as shells report it. */
  interrupted: 130,
} as const;

/** A failure to report as `padlock: <message>` on stderr, exiting with `exitCode`. */
export class CliError extends Error {
  override readonly name = 'CliError';
  /** The process exit code to use. */
  readonly exitCode: number;
  /** For usage errors: the command whose help to point at (e.g. `padlock demo --help`). */
  hint: string | undefined;

  /**
   * @param message one line that says what went wrong and, where possible, what to change
   * @param exitCode the process exit code; {@link ExitCode.failure} by default
   */
  constructor(message: string, exitCode: number = ExitCode.failure, options?: { cause?: unknown }) {
    super(message, options);
    this.exitCode = exitCode;
    this.hint = undefined;
  }
}

/** A {@link CliError} for a wrong command line (exit code 2). */
export function usageError(message: string): CliError {
  return new CliError(message, ExitCode.usage);
}

/** The first line of an error's message (or of `String(value)`), for one-line reports. */
export function firstLine(value: unknown): string {
  const text = value instanceof Error ? value.message : String(value);
  return text.split('\n', 1)[0]?.trim() ?? '';
}

/**
 * The error a command throws when `signal` (aborted by `main` on SIGINT or SIGTERM) stops it: exit
 * code 130 for SIGINT, 143 for SIGTERM, as shells report them.
 */
export function interruptedError(signal: AbortSignal): CliError {
  return new CliError('interrupted', signal.reason === 'SIGTERM' ? 143 : ExitCode.interrupted);
}
