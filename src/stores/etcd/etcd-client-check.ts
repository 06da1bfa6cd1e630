/** Checks the `etcd` option of `new Padlock(options)`: an `Etcd3` client of the `etcd3` package. */
import type { Etcd3 } from 'etcd3';
import { PadlockOptionError } from '../../errors.js';

/**
 * `value` as an `Etcd3` client: it must have the services padlock calls (`kv`, `leaseClient`,
 * `watch`). Checked by shape, not class, so that a copy of `etcd3` other than padlock's own passes.
 */
export function checkEtcdClient(value: unknown): Etcd3 {
  const client = value as Partial<Record<'kv' | 'leaseClient' | 'watch', unknown>> | null;
  if (typeof value !== 'object' || client === null || typeof client.kv !== 'object' || typeof client.leaseClient !== 'object' || typeof client.watch !== 'function') {
    throw new PadlockOptionError('etcd', 'an Etcd3 client of the etcd3 package (new Etcd3({ hosts }))', value);
  }
  return value as Etcd3;
}
