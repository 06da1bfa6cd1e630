/** Checks the `zookeeper` option: a `node-zookeeper-client` client, connected or not yet. */
import type { Client } from 'node-zookeeper-client';
import { PadlockOptionError } from '../../errors.js';

/** The client's methods padlock calls. */
const METHODS = ['create', 'remove', 'exists', 'getChildren', 'getData', 'setData', 'transaction', 'mkdirp', 'getState', 'getSessionTimeout', 'on', 'once', 'removeListener'] as const;

/** `client`, when it is a `node-zookeeper-client` client; else `PadlockOptionError` naming `zookeeper`. */
export function checkZooKeeperClient(client: unknown): Client {
  const methods = client as Record<string, unknown> | null;
  if (typeof client !== 'object' || methods === null || METHODS.some((method) => typeof methods[method] !== 'function')) {
    throw new PadlockOptionError('zookeeper', 'a node-zookeeper-client Client (zookeeper.createClient(connectString), connected or not yet)', client);
  }
  return client as Client;
}
