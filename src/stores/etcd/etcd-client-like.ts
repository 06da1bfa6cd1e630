/**
 * What the `etcd` option must be, by shape, and its check. This file imports nothing of `etcd3`:
 * padlock's published types reach it (options.ts), and a project without etcd3 must type-check them.
 */
import { PadlockOptionError } from '../../errors.js';

/** An `Etcd3` client of the `etcd3` package, as padlock checks it: the services it calls. */
export interface EtcdClientLike {
  /** The key-value service (ranges, transactions). */
  readonly kv: object;
  /** The lease service (grant, keep-alive, revoke). */
  readonly leaseClient: object;
  /** Starts a watch builder. */
  watch(): unknown;
}

/**
 * `value` as an `Etcd3` client: it must have the services padlock calls (`kv`, `leaseClient`,
 * `watch`). Checked by shape, not class, so that a copy of `etcd3` other than padlock's own passes.
 */
export function checkEtcdClient(value: unknown): EtcdClientLike {
  const client = value as Partial<Record<'kv' | 'leaseClient' | 'watch', unknown>> | null;
  if (typeof value !== 'object' || client === null || typeof client.kv !== 'object' || typeof client.leaseClient !== 'object' || typeof client.watch !== 'function') {
    throw new PadlockOptionError('etcd', 'an Etcd3 client of the etcd3 package (new Etcd3({ hosts }))', value);
  }
  return value as EtcdClientLike;
}
