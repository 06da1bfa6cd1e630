/** How PostgreSQL's failures reach the caller: typed as padlock's own, saying what to change where one can. */
import { PadlockError, PostgresUnavailableError } from '../../errors.js';

/** SQLSTATEs of a server that cannot write: a read-only transaction (a standby, `default_transaction_read_only`). */
const READ_ONLY = new Set(['25006']);

/** What a server that cannot hold locks is told: the read-only refusal's text. */
export const READ_ONLY_MESSAGE =
  'the server is read-only (a standby in recovery, or transaction_read_only is on): padlock needs a primary it can write to; point the pool at the primary';

/** padlock's errors as they are; anything else from pg (unreachable, a read-only server, a time-out) as `PostgresUnavailableError`. */
export function unavailable(lock: string | undefined, error: unknown): unknown {
  if (error instanceof PadlockError) return error;
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && READ_ONLY.has(code)) return new PostgresUnavailableError(lock, error, READ_ONLY_MESSAGE);
  return new PostgresUnavailableError(lock, error);
}

/** Unavailability padlock itself saw (no reply, no connection in time): it may pass. */
const passingErrors = new WeakSet<PostgresUnavailableError>();

/** Marks `error`, made by padlock for a call that got no answer in time, as one that may pass. */
export function passing(error: PostgresUnavailableError): PostgresUnavailableError {
  passingErrors.add(error);
  return error;
}

/**
 * SQLSTATE classes that say "not now" rather than "no": a connection exception (08), the server out
 * of resources such as connections (53), an operator's intervention such as a shutdown, a crash
 * restart or a server still starting (57), a transaction rolled back by a conflict (40); and a
 * read-only server (25006), which a failover ends.
 */
const PASSING_CLASSES = new Set(['08', '53', '57', '40']);

/** pg's own words for a connection that ended under a query (it gives them no code). */
const CONNECTION_ENDED = /connection terminated|connection ended|not queryable|timeout exceeded when trying to connect/i;

/**
 * Whether a call that failed with `error` may succeed if sent again a little later: the server was
 * unreachable, restarting, out of connections, read-only for a failover, or did not answer in time.
 * Bad credentials, a missing database or schema, a closed pool or Padlock are final.
 */
export function isTransientPostgres(error: unknown): boolean {
  if (!(error instanceof PostgresUnavailableError)) return false;
  if (passingErrors.has(error)) return true;
  const cause = error.cause;
  if (!(cause instanceof Error)) return false;
  const code = (cause as { code?: unknown }).code;
  // The server's own error (pg's DatabaseError carries its severity): its SQLSTATE says.
  if ('severity' in cause && typeof code === 'string') return PASSING_CLASSES.has(code.slice(0, 2)) || READ_ONLY.has(code);
  // A Node socket error (ECONNREFUSED, ECONNRESET, EPIPE…) or a connection pg saw end.
  return (typeof code === 'string' && /^E[A-Z]+$/.test(code)) || CONNECTION_ENDED.test(cause.message);
}
