/** Checks the `etcd` option of `new Padlock(options)`: an `Etcd3` client of the `etcd3` package. */
import type { Etcd3 } from 'etcd3';
import { PadlockOptionError } from '../../errors.js';

/**
 * What the `etcd` option must be, by shape: an `Etcd3` of the `etcd3` package has it. Declared here,
 * not imported from `etcd3`, so that padlock's published types name no etcd3 type (a project
 * without etcd3 type-checks them as it is).
 */
export interface EtcdClientLike {
  readonly kv: object;
  readonly leaseClient: object;
  watch(): unknown;
}

/** The `Etcd3` a checked {@link EtcdClientLike} is (checked by {@link checkEtcdClient}). */
export function asEtcd3(client: EtcdClientLike): Etcd3 {
  return client as unknown as Etcd3;
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
