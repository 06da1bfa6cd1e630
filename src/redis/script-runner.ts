/**
 * Runs Lua scripts by EVALSHA, with the one NOSCRIPT fallback (EVAL, which also reloads the script),
 * and turns client errors into padlock's typed errors. This is the only place scripts are sent.
 */
import { createHash } from 'node:crypto';
import { RedisCommandError, RedisUnavailableError } from '../errors.js';
import type { Arg, CommandConnection } from './connection.js';

/** A script and how to read its reply. */
export interface Script<Result> {
  /** Its file name, for messages. */
  readonly name: string;
  /** Lua source. */
  readonly source: string;
  /** SHA1 of `source`, for EVALSHA. */
  readonly sha: string;
  /** Checks the reply's shape and types it; throws on anything unexpected. */
  readonly parse: (reply: unknown) => Result;
}

/** Defines a script whose reply `parse` checks. */
export function defineScript<Result>(name: string, source: string, parse: (reply: unknown) => Result): Script<Result> {
  return { name, source, sha: createHash('sha1').update(source).digest('hex'), parse };
}

/** Redis replied with an error (as opposed to the connection failing). */
function isReplyError(error: unknown): boolean {
  return error instanceof Error && error.name === 'ReplyError';
}

/** Sends scripts over one command connection. */
export class ScriptRunner {
  constructor(private readonly connection: CommandConnection) {}

  /** Runs `script` with `keys` and `args`; `lock` names the lock in errors. */
  async run<Result>(script: Script<Result>, keys: readonly string[], args: readonly Arg[], lock?: string): Promise<Result> {
    let reply: unknown;
    try {
      reply = await this.connection.evalsha(script.sha, keys, args);
    } catch (error) {
      if (!(isReplyError(error) && /NOSCRIPT/.test((error as Error).message))) throw wrap(error, lock);
      try {
        reply = await this.connection.eval(script.source, keys, args);
      } catch (retryError) {
        throw wrap(retryError, lock);
      }
    }
    try {
      return script.parse(reply);
    } catch (error) {
      // Only data padlock did not write (a foreign or corrupted key) can make a script answer so.
      throw new RedisCommandError(lock, error);
    }
  }
}

/** A client error as padlock's typed error: a reply error from Redis, or the connection failing. */
export function wrap(error: unknown, lock: string | undefined): Error {
  return isReplyError(error) ? new RedisCommandError(lock, error) : new RedisUnavailableError(lock, error);
}
