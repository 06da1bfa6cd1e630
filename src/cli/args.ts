/**
 * Command-line parsing shared by every subcommand: node's `util.parseArgs` in strict mode, with its
 * errors turned into short usage errors, and validators for the values options take.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { usageError } from './errors.js';

/** The option table of one subcommand, as `util.parseArgs` takes it. */
export type OptionSpec = NonNullable<ParseArgsConfig['options']>;

/** Parsed option values: strings for `type: 'string'`, booleans for `type: 'boolean'`. */
export type ParsedOptions = Record<string, string | boolean | undefined>;

/**
 * Parses `argv` against `spec` (no positional arguments allowed).
 * @throws CliError (exit code 2) naming the unknown option, the missing value or the stray argument
 */
export function parseOptions(argv: readonly string[], spec: OptionSpec): ParsedOptions {
  try {
    const { values } = parseArgs({ args: [...argv], options: spec, strict: true, allowPositionals: false });
    return values as ParsedOptions;
  } catch (error) {
    throw usageError(describeParseError(error));
  }
}

function describeParseError(error: unknown): string {
  const code = (error as { code?: unknown }).code;
  const message = error instanceof Error ? error.message : String(error);
  const token = /'([^']*)'/.exec(message)?.[1] ?? '';
  switch (code) {
    case 'ERR_PARSE_ARGS_UNKNOWN_OPTION':
      return `unknown option '${token}'`;
    case 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE':
      return /argument missing/.test(message) ? `option '${token.split(' ')[0] ?? token}' needs a value` : `option '${token}' does not take a value`;
    case 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL':
      return `unexpected argument '${token}'`;
    default:
      return message.split('\n', 1)[0] ?? message;
  }
}

/**
 * Reads an integer option within `[min, max]`, or `fallback` when it was not given.
 * @throws CliError (exit code 2) saying which range is allowed
 */
export function integerOption(values: ParsedOptions, name: string, fallback: number, min: number, max: number): number {
  const raw = values[name];
  if (raw === undefined) return fallback;
  const text = String(raw).trim();
  const value = /^\d+$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw usageError(`--${name} must be an integer from ${min} to ${max}, got '${String(raw)}'`);
  }
  return value;
}

/** Reads a string option, `undefined` when it was not given. */
export function stringOption(values: ParsedOptions, name: string): string | undefined {
  const raw = values[name];
  return typeof raw === 'string' ? raw : undefined;
}
