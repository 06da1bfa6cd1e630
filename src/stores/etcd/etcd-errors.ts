/** How etcd's failures reach the caller: typed as padlock's own. */
import { EtcdUnavailableError, PadlockError } from '../../errors.js';

/** padlock's errors as they are; anything else from etcd3 (unreachable, no leader, a time-out) as `EtcdUnavailableError`. */
export function unavailable(lock: string | undefined, error: unknown): unknown {
  return error instanceof PadlockError ? error : new EtcdUnavailableError(lock, error);
}
