/** Checks the `zookeeper` option: a `node-zookeeper-client` client, connected or not yet. */
import type { Client } from 'node-zookeeper-client';
import { PadlockOptionError } from '../../errors.js';

/** The client's methods padlock calls. */
const METHODS = ['create', 'remove', 'exists', 'getChildren', 'getData', 'setData', 'transaction', 'mkdirp', 'getState', 'getSessionTimeout', 'on', 'once', 'removeListener'] as const;

/**
 * What the `zookeeper` option must be, by shape: a `node-zookeeper-client` `Client` has it. Declared
 * here, not imported from the library, so that padlock's published types name no type of it (a
 * project without it, or without its `@types`, type-checks them as it is).
 */
export type ZooKeeperClientLike = { readonly [method in (typeof METHODS)[number]]: (...args: never[]) => unknown };

/** The `Client` a checked {@link ZooKeeperClientLike} is (checked by {@link checkZooKeeperClient}). */
export function asZooKeeperClient(client: ZooKeeperClientLike): Client {
  return client as unknown as Client;
}

/** `client`, when it is a `node-zookeeper-client` client; else `PadlockOptionError` naming `zookeeper`. */
export function checkZooKeeperClient(client: unknown): ZooKeeperClientLike {
  const methods = client as Record<string, unknown> | null;
  if (typeof client !== 'object' || methods === null || METHODS.some((method) => typeof methods[method] !== 'function')) {
    throw new PadlockOptionError('zookeeper', 'a node-zookeeper-client Client (zookeeper.createClient(connectString), connected or not yet)', client);
  }
  return client as ZooKeeperClientLike;
}
