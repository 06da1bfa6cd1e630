/**
 * Runs Lua scripts by EVALSHA, with the one NOSCRIPT fallback (EVAL, which also reloads the script),
 * and turns client errors into padlock's typed errors. This is the only place scripts are sent; how
 * long padlock waits for them is its topology's business (src/stores/redis/topology/).
 */
import { createHash } from 'node:crypto';
import { PadlockError, RedisCommandError, RedisUnavailableError } from '../../../errors.js';
import { debugEnabled, knownScripts, loggedConnection } from '../../../observability/debug-log.js';
import type { GaveUp } from '../topology/topology.js';
import { describeConnectError } from './connect-errors.js';
import type { Arg, CommandConnection, Settled, WaitFor } from './connection.js';
import { isPassingReply, noteClientState } from './transient.js';
import { formatMs } from '../../../durations.js';

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
  const script = { name, source, sha: createHash('sha1').update(source).digest('hex'), parse };
  knownScripts.set(script.sha, script);
  return script;
}

/** Tells Redis's error replies from connection failures, in the words of the client that raised them. */
export type ReplyErrorTest = (error: unknown) => boolean;

/** Sends scripts over one command connection. */
export class ScriptRunner {
  private readonly connection: CommandConnection;
  readonly #isReply: ReplyErrorTest;

  constructor(connection: CommandConnection) {
    // NODE_DEBUG=padlock: every command this runner sends is logged with its outcome.
    this.connection = debugEnabled ? loggedConnection(connection) : connection;
    this.#isReply = (error) => connection.isReplyError(error);
  }

  /** The error for a call that had no reply within `ms`; its cause says what the client's connection was doing. */
  noReply(lock: string | undefined, ms: number): RedisUnavailableError {
    const cause = new Error(`no reply from Redis within ${formatMs(ms)} (the client's connection is ${this.connection.status})`);
    return new RedisUnavailableError(lock, cause);
  }

  /**
   * Runs `script` with no time limit of padlock's own: the caller bounds it (an acquire attempt,
   * whose late grant must reach the code that gives it back, never be dropped). Once `gaveUp` is
   * aborted, a NOSCRIPT answer is not followed by the EVAL fallback: the caller has moved on (and
   * may have sent a call, such as leaving a queue, that the late re-send would undo).
   */
  send<Result>(script: Script<Result>, keys: readonly string[], args: readonly Arg[], lock?: string, gaveUp?: GaveUp): Promise<Result> {
    // Connected (nearly every call): the EVALSHA goes out now, its reply read in one step, with no
    // async frame of its own (this runs twice per acquire+release).
    // Asked once: a client that failed to connect answers with a rejected promise, which #send
    // must await (dropped, it would be an unhandled rejection).
    const connecting = this.connection.firstConnection();
    if (connecting === undefined) {
      let sent: Promise<unknown>;
      try {
        sent = this.connection.evalsha(script.sha, keys, args);
      } catch (error) {
        return this.#evalInstead(error, script, keys, args, lock, gaveUp);
      }
      return sent.then(
        (reply) => parsed(script, reply, lock),
        (error: unknown) => this.#evalInstead(error, script, keys, args, lock, gaveUp),
      );
    }
    return this.#send(
      script,
      lock,
      (sha) => this.connection.evalsha(sha, keys, args).then((r) => [r, 0] as const),
      (source) => this.connection.eval(source, keys, args).then((r) => [r, 0] as const),
      gaveUp,
      connecting,
    ).then(([reply]) => reply);
  }

  /** After an EVALSHA failed with `error`: the EVAL fallback when the server lacks the script (NOSCRIPT), else the typed error. */
  async #evalInstead<Result>(error: unknown, script: Script<Result>, keys: readonly string[], args: readonly Arg[], lock: string | undefined, gaveUp: GaveUp | undefined): Promise<Result> {
    if (!isNoScript(error, this.#isReply) || gaveUp?.aborted === true) throw this.#wrap(error, lock);
    let reply: unknown;
    try {
      reply = await this.connection.eval(script.source, keys, args);
    } catch (retryError) {
      throw this.#wrap(retryError, lock);
    }
    return parsed(script, reply, lock);
  }

  /** As {@link send}, followed in the same round trip by `WAIT`: the reply and how many replicas acknowledged. */
  sendThenWait<Result>(script: Script<Result>, keys: readonly string[], args: readonly Arg[], lock: string | undefined, wait: WaitFor, gaveUp?: GaveUp): Promise<readonly [Result, number]> {
    return this.#send(
      script,
      lock,
      (sha) => this.connection.evalshaThenWait(sha, keys, args, wait),
      (source) => this.connection.evalThenWait(source, keys, args, wait),
      gaveUp,
    );
  }

  /**
   * Several script calls in one round trip (their keys all on one node): each one's result or typed
   * error, in order. A call the server answers NOSCRIPT is sent again alone, by EVAL.
   */
  async sendMany<Result>(calls: readonly ScriptSend<Result>[]): Promise<PromiseSettledResult<Result>[]> {
    let settled: readonly Settled[];
    try {
      await this.#connected(undefined);
      settled = await this.connection.evalshaMany(calls.map(({ script, keys, args }) => ({ sha: script.sha, keys, args })));
    } catch (error) {
      return calls.map(({ lock }) => ({ status: 'rejected', reason: this.#wrap(error, lock) }));
    }
    return Promise.all(
      calls.map(async ({ script, keys, args, lock }, i): Promise<PromiseSettledResult<Result>> => {
        const outcome = settled[i];
        try {
          if (outcome === undefined) throw new Error('the pipelined call was discarded');
          if (outcome.error === null) return { status: 'fulfilled', value: parsed(script, outcome.reply, lock) };
          if (isNoScript(outcome.error, this.#isReply)) return { status: 'fulfilled', value: await this.send(script, keys, args, lock) };
          throw this.#wrap(outcome.error, lock);
        } catch (error) {
          return { status: 'rejected', reason: error instanceof PadlockError ? error : this.#wrap(error, lock) };
        }
      }),
    );
  }

  /** EVALSHA, with the one EVAL fallback on NOSCRIPT; checks the reply. */
  async #send<Result>(
    script: Script<Result>,
    lock: string | undefined,
    bySha: (sha: string) => Promise<readonly [unknown, number]>,
    bySource: (source: string) => Promise<readonly [unknown, number]>,
    gaveUp?: GaveUp,
    connecting: Promise<void> | undefined = this.connection.firstConnection(),
  ): Promise<readonly [Result, number]> {
    await this.#connected(lock, gaveUp, connecting);
    let reply: readonly [unknown, number];
    try {
      reply = await bySha(script.sha);
    } catch (error) {
      if (!isNoScript(error, this.#isReply)) throw this.#wrap(error, lock);
      if (gaveUp?.aborted === true) throw this.#wrap(error, lock);
      try {
        reply = await bySource(script.source);
      } catch (retryError) {
        throw this.#wrap(retryError, lock);
      }
    }
    return [parsed(script, reply[0], lock), reply[1]];
  }

  /**
   * Until the client is first seen connected, waits for it to connect; when it fails to, throws
   * `RedisUnavailableError` naming the address and why (its own error the cause). Nothing is sent
   * meanwhile: a call left in the client's offline queue would run whenever it connects, after its
   * caller has moved on (and after `gaveUp`, it is not sent at all).
   */
  async #connected(lock: string | undefined, gaveUp?: GaveUp, connecting: Promise<void> | undefined = this.connection.firstConnection()): Promise<void> {
    if (connecting === undefined) return;
    try {
      await connecting;
    } catch (error) {
      // Redis answered and refused (a wrong password, no password, an unknown user): not unreachable.
      if (this.#isReply(error) && !isPassingReply(error)) throw new RedisCommandError(lock, error);
      throw new RedisUnavailableError(lock, error, `cannot reach ${this.connection.address}: ${describeConnectError(error)}`);
    }
    if (gaveUp?.aborted === true) throw new RedisUnavailableError(lock, undefined, 'the call was given up on before the client connected');
  }

  /** As {@link wrap}, noting whether the client was closed for good (then no wait tries again). */
  #wrap(error: unknown, lock: string | undefined): Error {
    return noteClientState(wrap(error, lock, this.#isReply), this.connection.status);
  }
}

/** What one script call sends to one server: what {@link ScriptRunner.sendMany} takes, and what a topology's calls are made of. */
export interface ScriptSend<Result> {
  readonly script: Script<Result>;
  readonly keys: readonly string[];
  readonly args: readonly Arg[];
  readonly lock: string | undefined;
}

/** The server does not have the script cached (a restart, SCRIPT FLUSH): send its source. */
function isNoScript(error: unknown, isReply: ReplyErrorTest): boolean {
  return isReply(error) && /NOSCRIPT/.test((error as Error).message);
}

/** Checks a script's reply and types it. */
function parsed<Result>(script: Script<Result>, reply: unknown, lock: string | undefined): Result {
  try {
    return script.parse(reply);
  } catch (error) {
    // Only data padlock did not write (a foreign or corrupted key) can make a script answer so.
    throw new RedisCommandError(lock, error);
  }
}

/**
 * A client error as padlock's typed error: a reply error from Redis (as `isReply` tells), or the
 * connection failing. A reply a failover or a slot move produces (`CLUSTERDOWN`, `TRYAGAIN`, …:
 * ./transient.ts) says that Redis is unavailable for now, not that it refused the call.
 */
export function wrap(error: unknown, lock: string | undefined, isReply: ReplyErrorTest): Error {
  return isReply(error) && !isPassingReply(error) ? new RedisCommandError(lock, error) : new RedisUnavailableError(lock, error);
}
