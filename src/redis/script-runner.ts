/**
 * Runs Lua scripts by EVALSHA, with the one NOSCRIPT fallback (EVAL, which also reloads the script),
 * and turns client errors into padlock's typed errors. This is the only place scripts are sent; how
 * long padlock waits for them is its topology's business (src/topology/).
 */
import { createHash } from 'node:crypto';
import { RedisCommandError, RedisUnavailableError } from '../errors.js';
import type { Arg, CommandConnection, WaitFor } from './connection.js';

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
    const [reply] = await this.#send(script, lock, (sha) => this.connection.evalsha(sha, keys, args).then((r) => [r, 0] as const), (source) =>
      this.connection.eval(source, keys, args).then((r) => [r, 0] as const),
    );
    return reply;
  }

  /** As {@link send}, followed in the same round trip by `WAIT`: the reply and how many replicas acknowledged. */
  sendThenWait<Result>(script: Script<Result>, keys: readonly string[], args: readonly Arg[], lock: string | undefined, wait: WaitFor): Promise<readonly [Result, number]> {
    return this.#send(
      script,
      lock,
      (sha) => this.connection.evalshaThenWait(sha, keys, args, wait),
      (source) => this.connection.evalThenWait(source, keys, args, wait),
    );
  }

  /** EVALSHA, with the one EVAL fallback on NOSCRIPT; checks the reply. */
  async #send<Result>(
    script: Script<Result>,
    lock: string | undefined,
    bySha: (sha: string) => Promise<readonly [unknown, number]>,
    bySource: (source: string) => Promise<readonly [unknown, number]>,
  ): Promise<readonly [Result, number]> {
    let reply: readonly [unknown, number];
    try {
      reply = await bySha(script.sha);
    } catch (error) {
      if (!(isReplyError(error) && /NOSCRIPT/.test((error as Error).message))) throw wrap(error, lock);
      try {
        reply = await bySource(script.source);
      } catch (retryError) {
        throw wrap(retryError, lock);
      }
    }
    try {
      return [script.parse(reply[0]), reply[1]];
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
