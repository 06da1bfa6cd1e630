/**
 * Runs Lua scripts by EVALSHA, with the one NOSCRIPT fallback (EVAL, which also reloads the script),
 * and turns client errors into padlock's typed errors. This is the only place scripts are sent, and
 * where padlock bounds how long it waits for a reply: whatever the client's own retry settings, a
 * call Redis does not answer in time is reported as `RedisUnavailableError`.
 */
import { createHash } from 'node:crypto';
import { bound } from '../clock.js';
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
  constructor(
    private readonly connection: CommandConnection,
    /** How long a call may wait for its reply (see {@link ScriptRunner.run}). */
    readonly replyTimeoutMs: number,
  ) {}

  /**
   * Runs `script` with `keys` and `args`, and rejects with `RedisUnavailableError` if no reply comes
   * within `replyTimeoutMs`. Only for calls whose late success does no harm (a release, a renewal, a
   * read, leaving a queue): a reply that comes after the time-out is dropped. `lock` names the lock
   * in errors.
   */
  run<Result>(script: Script<Result>, keys: readonly string[], args: readonly Arg[], lock?: string): Promise<Result> {
    return bound(this.send(script, keys, args, lock), { ms: this.replyTimeoutMs, timeout: () => this.noReply(lock, this.replyTimeoutMs) });
  }

  /** The error for a call that had no reply within `ms`; its cause says what the client's connection was doing. */
  noReply(lock: string | undefined, ms: number): RedisUnavailableError {
    const cause = new Error(`no reply from Redis within ${Math.round(ms)} ms (the client's connection is ${this.connection.status})`);
    return new RedisUnavailableError(lock, cause);
  }

  /**
   * Runs `script` with no time limit of padlock's own: the caller bounds it (an acquire attempt,
   * whose late grant must reach the code that gives it back, never be dropped).
   */
  async send<Result>(script: Script<Result>, keys: readonly string[], args: readonly Arg[], lock?: string): Promise<Result> {
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
