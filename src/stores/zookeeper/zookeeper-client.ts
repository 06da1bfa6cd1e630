/**
 * The few ZooKeeper operations the lock recipes use, as promises over a `node-zookeeper-client`
 * client, with ZooKeeper's error codes kept (a recipe branches on "no node", "node exists", "not
 * empty"). Requests are written to the one session socket in the order they are made, so two calls
 * made without awaiting in between share a round trip.
 */
import type { Client, Stat } from 'node-zookeeper-client';
import { monotonicNow } from '../../clock.js';
import { Deadline } from '../../deadlines.js';

// Types only: node-zookeeper-client is the application's (an optional peer), never loaded by padlock
// itself, so its constants are ZooKeeper's own wire values, written out here.
/** ZooKeeper's create modes (the protocol's values). */
const CreateMode = { PERSISTENT: 0, EPHEMERAL_SEQUENTIAL: 3 } as const;

/** ZooKeeper's error codes the recipes tell apart (the protocol's values). */
export const ZK = {
  connectionLoss: -4,
  noNode: -101,
  badVersion: -103,
  nodeExists: -110,
  notEmpty: -111,
  sessionExpired: -112,
} as const;

/** The code of an error node-zookeeper-client made from ZooKeeper's answer (or of a lost connection); `undefined` for any other error. */
export function zkCode(error: unknown): number | undefined {
  const getCode = (error as { getCode?: unknown } | null)?.getCode;
  return error instanceof Error && typeof getCode === 'function' ? (getCode.call(error) as number) : undefined;
}

/** A znode's creation zxid as a number: the ensemble-wide, strictly increasing id of the write that made it. */
export function creationZxid(stat: Stat): number {
  // 64 bits: the leader's epoch (high 32) and a counter. Exact as a double while the epoch is below
  // 2^21 (two million leader elections).
  return stat.czxid.readUInt32BE(0) * 2 ** 32 + stat.czxid.readUInt32BE(4);
}

/** When a znode was created, ms since the epoch by the clock of the server that led then (its `ctime`). */
export function creationTime(stat: Stat): number {
  return stat.ctime.readUInt32BE(0) * 2 ** 32 + stat.ctime.readUInt32BE(4);
}

/** node-zookeeper-client 1.x's connection manager, as far as padlock reads it (its public API says neither). */
interface ConnectionManagerLike {
  /** 0 (DISCONNECTED) until `connect()` is first called; `getState()` says DISCONNECTED while connecting too. */
  readonly state?: unknown;
  readonly connectionStringParser?: { getConnectionString?(): unknown };
}

function managerOf(client: Client): ConnectionManagerLike | undefined {
  const manager = (client as unknown as { connectionManager?: unknown }).connectionManager;
  return typeof manager === 'object' && manager !== null ? manager : undefined;
}

/**
 * Connects `client` if its owner never called `connect()`: padlock takes a client "connected or not
 * yet", and one never connected would leave every call unanswered, then crash in the client's own
 * `close()` (it writes the close request to a socket it never opened).
 */
export function connectIfNeverConnected(client: Client): void {
  const manager = managerOf(client);
  // Between two attempts the manager passes through 0 and connects again in the same tick: from
  // here, 0 means connect() was never called. A client of another shape is left as it is.
  if (manager?.state === 0 && client.getState().name === 'DISCONNECTED') client.connect();
}

/** The connect string `client` was made with (`host:port,…[/chroot]`), for messages; `undefined` where it cannot be read. */
export function connectStringOf(client: Client): string | undefined {
  const text = managerOf(client)?.connectionStringParser?.getConnectionString?.();
  return typeof text === 'string' ? text : undefined;
}

/** No reply within the session's time-out: a lost connection, as the recipes read it ({@link zkCode}). */
class LostReply extends Error {
  constructor() {
    super('no reply from ZooKeeper within the session time-out');
  }

  getCode(): number {
    return ZK.connectionLoss;
  }
}

/** One child of a lock's znode, by its name and sequence number. */
export interface Child {
  readonly name: string;
  /** The sequence number ZooKeeper appended: the order of creation under the parent. */
  readonly sequence: number;
}

/** Reads `<prefix>-<10 digits>` into a child; `undefined` for a name that is not padlock's. */
export function parseChild(name: string): Child | undefined {
  const match = /-(\d{10})$/.exec(name);
  return match === null ? undefined : { name, sequence: Number(match[1]) };
}

/** The promise-returning face of the store's current `node-zookeeper-client` client (a new one once a session expired). */
export class ZooKeeperOps {
  #client: Client;

  constructor(client: Client) {
    this.#client = client;
  }

  /** The client every call goes to. */
  get client(): Client {
    return this.#client;
  }

  /** Sends every later call to `client` (a new session's), calls already sent stay with the old one. */
  use(client: Client): void {
    this.#client = client;
  }

  /**
   * One request's promise, rejected as a lost connection when no reply came within the session's
   * time-out. node-zookeeper-client never times a reply out, and after a server was killed a reply
   * was seen never to come, on a session that otherwise lived (its beats answered): the recipes treat
   * a lost connection as "maybe applied, look again", which is what such a request needs.
   */
  #reply<T>(send: (resolve: (value: T) => void, reject: (error: unknown) => void) => void): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      // The shared timer of every reply bound (a Node timer per request would be armed and cleared each time).
      const lost = new Deadline(this.client.getSessionTimeout(), () => reject(new LostReply()));
      send(
        (value) => {
          lost.cancel();
          resolve(value);
        },
        (error) => {
          lost.cancel();
          reject(error);
        },
      );
    });
  }

  /** Creates an ephemeral sequential child `<parent>/<stem>-NNNNNNNNNN`; resolves with its path. */
  createSequential(parent: string, stem: string, data: Buffer): Promise<string> {
    return this.#reply((resolve, reject) => {
      this.client.create(`${parent}/${stem}-`, data, CreateMode.EPHEMERAL_SEQUENTIAL, (error, path) => (error ? reject(error) : resolve(path)));
    });
  }

  /**
   * Creates `parent` (persistent) and its first child `<stem>-0000000000` in one transaction;
   * rejects with "node exists" when the parent is there already.
   */
  createWithParent(parent: string, stem: string, data: Buffer): Promise<string> {
    return this.#reply((resolve, reject) => {
      this.client
        .transaction()
        .create(parent, CreateMode.PERSISTENT)
        .create(`${parent}/${stem}-`, data, CreateMode.EPHEMERAL_SEQUENTIAL)
        .commit((error, results: { path?: string }[]) => (error ? reject(error) : resolve(results[1]?.path ?? '')));
    });
  }

  /** Creates a persistent node and its missing ancestors; resolves when it exists. */
  ensurePath(path: string): Promise<void> {
    return this.#reply((resolve, reject) => {
      this.client.mkdirp(path, CreateMode.PERSISTENT, (error) => (error && zkCode(error) !== ZK.nodeExists ? reject(error) : resolve()));
    });
  }

  /** The node's stat, or `undefined` when it does not exist; `watch` is called once on its next change. */
  exists(path: string, watch?: () => void): Promise<Stat | undefined> {
    return this.#reply((resolve, reject) => {
      const done = (error: unknown, stat: Stat | null): void => (error ? reject(error) : resolve(stat ?? undefined));
      if (watch === undefined) this.client.exists(path, done);
      else this.client.exists(path, () => watch(), done);
    });
  }

  /** The node's children's names, or `undefined` when the node does not exist. */
  children(path: string): Promise<string[] | undefined> {
    return this.#reply((resolve, reject) => {
      this.client.getChildren(path, (error, names) => (error ? (zkCode(error) === ZK.noNode ? resolve(undefined) : reject(error)) : resolve(names)));
    });
  }

  /** The node's data and stat, or `undefined` when it does not exist; `watch` (where it exists) is called once on its next change or deletion. */
  data(path: string, watch?: () => void): Promise<{ data: Buffer; stat: Stat } | undefined> {
    return this.#reply((resolve, reject) => {
      const done = (error: unknown, data: Buffer | null | undefined, stat: Stat): void => (error ? (zkCode(error) === ZK.noNode ? resolve(undefined) : reject(error)) : resolve({ data: data ?? Buffer.alloc(0), stat }));
      // A watch is set only where the node exists (a read of a missing node leaves none behind).
      if (watch === undefined) this.client.getData(path, done);
      else this.client.getData(path, () => watch(), done);
    });
  }

  /** Replaces the node's data if its version is still `version`. */
  setData(path: string, data: Buffer, version: number): Promise<Stat> {
    return this.#reply((resolve, reject) => {
      this.client.setData(path, data, version, (error, stat) => (error ? reject(error) : resolve(stat)));
    });
  }

  /** Deletes the node if its data version is still `version` (−1: any); false when it was gone. */
  remove(path: string, version = -1): Promise<boolean> {
    return this.#reply((resolve, reject) => {
      this.client.remove(path, version, (error) => (error ? (zkCode(error) === ZK.noNode ? resolve(false) : reject(error)) : resolve(true)));
    });
  }

  /**
   * Deletes `child` and, in the same transaction, its parent when that leaves it empty; when others
   * are queued there (not empty), deletes the child alone. False when the child was gone. With a
   * `version`, rejects with "bad version" when the child's data changed since.
   */
  async removeWithParent(child: string, parent: string, version = -1): Promise<boolean> {
    const transaction = this.client.transaction().remove(child, version).remove(parent, -1);
    if (version === 0 && !keepVersionZero(transaction, 0)) return this.removeThenParent(child, parent, 0);
    try {
      await this.#reply<void>((resolve, reject) => transaction.commit((error) => (error ? reject(error) : resolve())));
      return true;
    } catch (error) {
      const code = zkCode(error);
      // Others are queued: the child goes alone, and the parent after it in case they left meanwhile.
      if (code === ZK.notEmpty) return this.removeThenParent(child, parent, version);
      if (code === ZK.noNode) return false;
      throw error;
    }
  }

  /**
   * {@link removeWithParent} for a child nobody else will delete (a wait given up, a hold told lost):
   * sent again while its answer is lost with the connection, backing off up to 1 s, for as long as
   * the session may live (its time-out, and a second more). A delete lost with a dying server may not
   * have been applied, and the child would then sit in the queue, ahead of every waiter, for as long
   * as this client's session lives. Past that the session has expired and its children with it.
   */
  removeLeftover(child: string, parent: string): Promise<boolean> {
    return this.whileConnectionLost(() => this.removeWithParent(child, parent));
  }

  /**
   * Runs `call` again while it fails with a lost connection, backing off up to 1 s, for as long as
   * the session may live (its time-out, and a second more); then rejects as the last try did.
   */
  async whileConnectionLost<T>(call: () => Promise<T>): Promise<T> {
    const end = monotonicNow() + this.client.getSessionTimeout() + 1_000;
    for (let pause = 50; ; pause = Math.min(pause * 2, 1_000)) {
      try {
        return await call();
      } catch (error) {
        if (zkCode(error) !== ZK.connectionLoss || monotonicNow() + pause > end) throw error;
        await new Promise((resolve) => setTimeout(resolve, pause).unref());
      }
    }
  }

  /**
   * Deletes `child`, with the parent's delete sent right behind it on the same socket (one round
   * trip): it fails harmlessly when others are queued or the child's delete failed, and the last
   * child to go, whoever sent it, is always followed by such a delete. Cheaper than
   * {@link removeWithParent} when others are queued (that transaction would fail first).
   */
  removeThenParent(child: string, parent: string, version: number): Promise<boolean> {
    const removed = this.remove(child, version);
    void this.remove(parent, -1).catch(() => false);
    return removed;
  }
}

/**
 * node-zookeeper-client 1.1.3's transaction reads a version of 0 as "any" (`version || -1`): a
 * fresh child's release would then delete it even after another Padlock re-entered it by owner
 * (its version 1). Puts 0 back into operation `index` of `transaction`; false when the transaction
 * does not keep its operations where 1.1.3 does (the caller then sends two plain deletes).
 */
function keepVersionZero(transaction: object, index: number): boolean {
  const ops: unknown = (transaction as { ops?: unknown }).ops;
  const op: unknown = Array.isArray(ops) ? ops[index] : undefined;
  if (typeof op !== 'object' || op === null || !('version' in op)) return false;
  (op as { version: number }).version = 0;
  return true;
}
