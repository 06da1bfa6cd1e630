/**
 * What the operator commands (`list`, `inspect`, `release`, `watch`) share: the connection options
 * every one of them takes, and opening and closing the connection around the command's work.
 */
import type { Command as CommanderCommand } from 'commander';
import { checkPrefix } from '../options.js';
import { LockReader } from '../stores/redis/inspection.js';
import { connectionFor } from '../stores/redis/adapters/clients.js';
import type { CommandContext } from './command.js';
import { connect, parseTarget, type Connection } from './connection.js';
import { interruptedError, usageError } from './errors.js';

/** The options every operator command takes, as commander parses them. */
export interface ConnectionFlags {
  readonly url?: string;
  readonly cluster?: boolean;
  readonly prefix: string;
  readonly json?: boolean;
}

/** Adds `--url`, `--cluster`, `--prefix` and `--json` to `command`. */
export function withConnectionOptions(command: CommanderCommand, json: string): CommanderCommand {
  return command
    .option('--url <url>', 'the Redis: redis://…, rediss://… or redis+sentinel://… (default: $REDIS_URL)')
    .option('--cluster', 'the URL is a node of a Redis Cluster (found out by itself otherwise)')
    .option('--prefix <prefix>', "the key prefix the Padlock clients use", 'padlock')
    .option('--json', json);
}

/** What an operator command works with. */
export interface Session {
  readonly connection: Connection;
  readonly reader: LockReader;
  readonly prefix: string;
}

/**
 * Checks the flags, connects, runs `work` and closes the connection, whatever happens.
 * @throws CliError for bad flags (exit code 2), an unreachable Redis (1), or an interruption (130)
 */
export async function withSession<T>(flags: ConnectionFlags, context: CommandContext, work: (session: Session) => Promise<T>): Promise<T> {
  const prefix = checkedPrefix(flags.prefix);
  const target = parseTarget({ url: flags.url, cluster: flags.cluster === true, env: context.env });
  if (context.signal.aborted) throw interruptedError(context.signal);
  const connection = await connect(target, context.env);
  try {
    if (context.signal.aborted) throw interruptedError(context.signal);
    return await work({ connection, reader: new LockReader(connectionFor('--url', connection.client), prefix), prefix });
  } finally {
    connection.close();
  }
}

/** `--prefix`, checked as padlock checks it. */
export function checkedPrefix(prefix: string): string {
  try {
    return checkPrefix(prefix);
  } catch {
    throw usageError(`--prefix must be 1 to 64 characters from A-Z a-z 0-9 _ . : -, got '${prefix}'`);
  }
}
