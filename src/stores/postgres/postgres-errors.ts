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
