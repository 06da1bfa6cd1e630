/**
 * What the `zookeeper` option must be, by shape, and its check. This file imports nothing of
 * `node-zookeeper-client`: padlock's published types reach it (options.ts), and a project without
 * that library (or its `@types`) must type-check them.
 */
import { PadlockOptionError } from '../../errors.js';

/** The client's methods padlock calls. */
const METHODS = ['create', 'remove', 'exists', 'getChildren', 'getData', 'setData', 'transaction', 'mkdirp', 'getState', 'getSessionTimeout', 'on', 'once', 'removeListener', 'connect', 'close'] as const;

/** A `node-zookeeper-client` client, as padlock checks it: the methods it calls. */
export type ZooKeeperClientLike = { readonly [method in (typeof METHODS)[number]]: (...args: never[]) => unknown };

/** `client`, when it is a `node-zookeeper-client` client; else `PadlockOptionError` naming `option` (`zookeeper`, or `zookeeperFactory` for what it returned). */
export function checkZooKeeperClient(client: unknown, option = 'zookeeper'): ZooKeeperClientLike {
  const methods = client as Record<string, unknown> | null;
  if (typeof client !== 'object' || methods === null || METHODS.some((method) => typeof methods[method] !== 'function')) {
    const expected = option === 'zookeeper' ? 'a node-zookeeper-client Client (zookeeper.createClient(connectString), connected or not yet)' : 'a function returning a new node-zookeeper-client Client (zookeeper.createClient(connectString)), not yet connected';
    throw new PadlockOptionError(option, expected, client);
  }
  return client as ZooKeeperClientLike;
}
