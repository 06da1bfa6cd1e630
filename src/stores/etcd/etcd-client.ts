/**
 * The few etcd operations the lock recipes use, as promises over an `etcd3` client's raw KV, lease
 * and watch services (the `Etcd3` builders hide what a recipe needs: a transaction's read results,
 * the header revision a watch must start from, a lease's granted TTL).
 *
 * Revisions and lease ids are int64 on the wire and strings in `etcd3`; revisions are read as numbers
 * (exact below 2^53 writes), lease ids stay strings.
 */
import type { Etcd3, IKeyValue, Watcher } from 'etcd3';

/** One key of a lock's queue as the recipe reads it. */
export interface Entry {
  /** The key's last segment (after the lock's prefix). */
  readonly name: string;
  /** The revision of the write that created the key: the cluster-wide order of creation. */
  readonly createRevision: number;
  /** The revision of the key's last write (compare-and-set on it). */
  readonly modRevision: number;
  /** The lease the key is attached to (decimal, as etcd3 gives it). */
  readonly lease: string;
  readonly value: string;
}

/** A read of a lock's queue at one revision. */
export interface Snapshot {
  /** The store's revision the read saw: a watch from `revision + 1` misses no later change. */
  readonly revision: number;
  /** The queue's keys, by create revision (oldest first). */
  readonly entries: readonly Entry[];
  /** The values of the extra keys read with it (a semaphore's stored limit), `undefined` where absent. */
  readonly extras?: readonly (string | undefined)[];
}

function rangeOf(prefix: string): { request_range: { key: Buffer; range_end: Buffer; sort_target: 'Create'; sort_order: 'Ascend' } } {
  return { request_range: { key: utf8(prefix), range_end: prefixEnd(prefix), sort_target: 'Create', sort_order: 'Ascend' } };
}

/** The value of the one key a range response read, if it exists. */
function valueOf(response: { response_range?: { kvs: IKeyValue[] } } | undefined): string | undefined {
  return response?.response_range?.kvs[0]?.value.toString('utf8');
}

/** A lease as etcd granted it. */
export interface Granted {
  readonly id: string;
  /** The TTL etcd granted (it may raise a short one to its minimum), in ms. */
  readonly ttlMs: number;
}

const utf8 = (text: string): Buffer => Buffer.from(text, 'utf8');

/** The end of the range of every key that starts with `prefix` (its last byte, plus one). */
export function prefixEnd(prefix: string): Buffer {
  const end = utf8(prefix);
  end[end.length - 1] = (end[end.length - 1] ?? 0) + 1; // prefixes end in '/', never in 0xff
  return end;
}

function entryOf(kv: IKeyValue, prefix: string): Entry {
  return {
    name: kv.key.toString('utf8').slice(prefix.length),
    createRevision: Number(kv.create_revision),
    modRevision: Number(kv.mod_revision),
    lease: kv.lease,
    value: kv.value.toString('utf8'),
  };
}

/** The promise-returning face of one `Etcd3` client. */
export class EtcdOps {
  constructor(readonly client: Etcd3) {}

  /** Grants a lease of `ttlSeconds` (etcd's unit), not kept alive. */
  async grantLease(ttlSeconds: number): Promise<Granted> {
    const granted = await this.client.leaseClient.leaseGrant({ TTL: ttlSeconds });
    return { id: granted.ID, ttlMs: Number(granted.TTL) * 1_000 };
  }

  /**
   * Renews the lease once; resolves with the TTL etcd renewed it for, in ms (0: the lease is gone,
   * expired or revoked). Rejects when no answer came within `ms`.
   */
  async keepAlive(id: string, ms: number): Promise<number> {
    const stream = await this.client.leaseClient.leaseKeepAlive({ deadline: new Date(Date.now() + ms) });
    try {
      return await new Promise<number>((resolve, reject) => {
        stream.on('data', (reply) => resolve(Number(reply.TTL) * 1_000));
        stream.on('error', reject);
        stream.write({ ID: id });
      });
    } finally {
      stream.end();
    }
  }

  /** The lease's remaining TTL in ms; ≤ 0 when it is gone. */
  async leaseRemainingMs(id: string): Promise<number> {
    const reply = await this.client.leaseClient.leaseTimeToLive({ ID: id });
    return Number(reply.TTL) * 1_000;
  }

  /** Revokes the lease: every key attached to it is deleted with it. */
  async revokeLease(id: string): Promise<void> {
    await this.client.leaseClient.leaseRevoke({ ID: id }).catch((error: unknown) => {
      if (!(error instanceof Error && /lease not found/i.test(error.message))) throw error;
    });
  }

  /**
   * Creates each `keys[i]` with `value`, attached to `lease`, unless one of them exists (all or
   * none), and reads every `prefixes[i]`'s queue in the same transaction, after the writes: one round
   * trip says where the new keys stand. `created` is false (and the reads empty) when a key existed.
   */
  async join(keys: readonly string[], value: string, lease: string, prefixes: readonly string[], extras: readonly string[] = []): Promise<{ created: boolean; snapshots: Snapshot[] }> {
    const reply = await this.client.kv.txn({
      compare: keys.map((key) => ({ key: utf8(key), target: 'Create', result: 'Equal', create_revision: 0 })),
      success: [...keys.map((key) => ({ request_put: { key: utf8(key), value: utf8(value), lease } })), ...prefixes.map(rangeOf), ...extras.map((key) => ({ request_range: { key: utf8(key) } }))],
      failure: [],
    });
    if (!reply.succeeded) return { created: false, snapshots: [] };
    const revision = Number(reply.header.revision);
    const ranges = reply.responses.slice(keys.length);
    const extraValues = ranges.slice(prefixes.length).map(valueOf);
    return { created: true, snapshots: prefixes.map((prefix, i) => ({ revision, entries: (ranges[i]?.response_range.kvs ?? []).map((kv) => entryOf(kv, prefix)), extras: extraValues })) };
  }

  /** A linearizable read of the queue under `prefix`. */
  async queue(prefix: string): Promise<Snapshot> {
    const reply = await this.client.kv.range({ key: utf8(prefix), range_end: prefixEnd(prefix), sort_target: 'Create', sort_order: 'Ascend' });
    return { revision: Number(reply.header.revision), entries: reply.kvs.map((kv) => entryOf(kv, prefix)) };
  }

  /** Linearizable reads of the queues under each of `prefixes`, all at one revision (one transaction). */
  async queues(prefixes: readonly string[], extras: readonly string[] = []): Promise<Snapshot[]> {
    if (prefixes.length === 1 && extras.length === 0) return [await this.queue(prefixes[0] ?? '')];
    const reply = await this.client.kv.txn({ compare: [], success: [...prefixes.map(rangeOf), ...extras.map((key) => ({ request_range: { key: utf8(key) } }))], failure: [] });
    const revision = Number(reply.header.revision);
    const extraValues = reply.responses.slice(prefixes.length).map(valueOf);
    return prefixes.map((prefix, i) => ({ revision, entries: (reply.responses[i]?.response_range.kvs ?? []).map((kv) => entryOf(kv, prefix)), extras: extraValues }));
  }

  /** The value of `key`, if it exists (linearizable). */
  async get(key: string): Promise<string | undefined> {
    const reply = await this.client.kv.range({ key: utf8(key) });
    return reply.kvs[0]?.value.toString('utf8');
  }

  /**
   * Which of `keys` exist, and the lease each is attached to, in one linearizable read (a
   * transaction of ranges): `undefined` where a key is gone.
   */
  async leasesOf(keys: readonly string[]): Promise<(string | undefined)[]> {
    const reply = await this.client.kv.txn({ compare: [], success: keys.map((key) => ({ request_range: { key: utf8(key) } })), failure: [] });
    return keys.map((_, i) => reply.responses[i]?.response_range.kvs[0]?.lease);
  }

  /**
   * Puts `value` at `key` attached to a new lease of `ttlSeconds` and revokes the lease the key had
   * before (so a value replaced leaves no lease behind).
   */
  async putWithOwnLease(key: string, value: string, ttlSeconds: number): Promise<void> {
    const before = await this.client.kv.range({ key: utf8(key) });
    const { id } = await this.grantLease(ttlSeconds);
    await this.client.kv.put({ key: utf8(key), value: utf8(value), lease: id });
    const old = before.kvs[0]?.lease;
    if (old !== undefined && old !== '0' && old !== id) await this.revokeLease(old);
  }

  /** Puts `value` at `key` attached to the existing lease `lease` (decimal id); rejects when that lease is gone. */
  async putOnLease(key: string, value: string, lease: string): Promise<void> {
    await this.client.kv.put({ key: utf8(key), value: utf8(value), lease });
  }

  /** Watches `key` from now on: `onPut` is given each value put there. Resolves once etcd confirmed the watch. */
  watchPuts(key: string, onPut: (value: string) => void): Promise<Watcher> {
    return this.client
      .watch()
      .key(key)
      .create()
      .then((watcher) => {
        watcher.on('put', (kv) => onPut(kv.value.toString('utf8'))).on('error', () => undefined);
        return watcher;
      });
  }

  /**
   * Watches `key` from `fromRevision` (so a change made since a read at `fromRevision − 1` is
   * delivered at once, never missed); `onChange` is called on each put or delete. Resolves once etcd
   * confirmed the watch; cancel it with the returned watcher.
   */
  watch(key: string, fromRevision: number, onChange: () => void): Promise<Watcher> {
    return this.client
      .watch()
      .key(key)
      .startRevision(String(fromRevision))
      .create()
      .then((watcher) => {
        // An error (a compacted revision, a lost stream etcd3 could not resume) is a reason to read again.
        watcher.on('put', onChange).on('delete', onChange).on('error', onChange);
        return watcher;
      });
  }

  /**
   * Writes `value` to `key` if its last write is still `modRevision`, keeping its lease; the key's new
   * mod revision, or `undefined` when it changed or is gone. etcd3 sends a transaction again when its
   * answer is lost, and the first may have been applied: its resend then fails the compare. So the
   * failure reads the key, and a key holding `value` (unique to this write: the caller tags it) is
   * this write applied.
   */
  async replace(key: string, value: string, modRevision: number): Promise<number | undefined> {
    const reply = await this.client.kv.txn({
      compare: [{ key: utf8(key), target: 'Mod', result: 'Equal', mod_revision: modRevision }],
      success: [{ request_put: { key: utf8(key), value: utf8(value), ignore_lease: true } }],
      failure: [{ request_range: { key: utf8(key) } }],
    });
    if (reply.succeeded) return Number(reply.header.revision);
    const now = reply.responses[0]?.response_range?.kvs[0];
    return now !== undefined && now.value.toString('utf8') === value ? Number(now.mod_revision) : undefined;
  }

  /**
   * Deletes `keys` if each one's last write is still `modRevisions[i]` (all or none); `'changed'` when
   * one of them changed but is still there, false when one is gone.
   */
  async removeIf(keys: readonly string[], modRevisions: readonly number[]): Promise<true | false | 'changed'> {
    const reply = await this.client.kv.txn({
      compare: keys.map((key, i) => ({ key: utf8(key), target: 'Mod', result: 'Equal', mod_revision: modRevisions[i] ?? 0 })),
      success: keys.map((key) => ({ request_delete_range: { key: utf8(key) } })),
      failure: keys.map((key) => ({ request_range: { key: utf8(key), count_only: true } })),
    });
    if (reply.succeeded) return true;
    return reply.responses.every((r) => Number(r.response_range.count) > 0) ? 'changed' : false;
  }

  /** Deletes `keys` whatever their state; how many there were. */
  async remove(...keys: readonly string[]): Promise<number> {
    if (keys.length === 1) return Number((await this.client.kv.deleteRange({ key: utf8(keys[0] ?? '') })).deleted);
    const reply = await this.client.kv.txn({ compare: [], success: keys.map((key) => ({ request_delete_range: { key: utf8(key) } })), failure: [] });
    return reply.responses.reduce((n, r) => n + Number(r.response_delete_range.deleted), 0);
  }
}
