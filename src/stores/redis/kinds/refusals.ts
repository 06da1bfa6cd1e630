/**
 * What a script's refusal means to the caller, for every lock kind and call: one table from a
 * reply status to the typed error, rather than a check at each call site.
 */
import { LockNotHeldError, type PadlockError } from '../../../errors.js';

/** A status a script answers with when it refuses a call. */
export type Refusal = 'not-held';

/** The call that was refused, for the message. */
export type Action = 'release' | 'extend' | 're-enter';

const ERRORS: Record<Refusal, (lock: string, owner: string, action: Action) => PadlockError> = {
  'not-held': (lock, owner, action) => new LockNotHeldError(lock, owner, action),
};

/** The error a refusal stands for. */
export function refusalError(status: Refusal, lock: string, owner: string, action: Action): PadlockError {
  return ERRORS[status](lock, owner, action);
}
