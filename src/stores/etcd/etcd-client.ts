/**
 * The few etcd operations the lock recipes use, as promises over an `etcd3` client's raw KV, lease
 * and watch services (the `Etcd3` builders hide what a recipe needs: a transaction's read results,
 * the header revision a watch must start from, a lease's granted TTL).
 *
 * Revisions and lease ids are int64 on the wire and strings in `etcd3`; revisions are read as numbers
 * (exact below 2^53 writes), lease ids stay strings.
 *
 * Every call is sent with a bound per try and sent again while the reply time-out lasts: a member
 * that forwarded it to a leader that died (or a member that is itself frozen) never answers, and
 * etcd only gives up on it after its own request time-out (5 s + 2 election time-outs), while the
 * other members elect a new leader in one or two election time-outs. A try cut off after its bound
 * is sent again on a member etcd3 picks afresh (EtcdOps.#send). Sending again is safe: every write
 * is written to be sent twice (a create-if-absent whose keys exist is read as this take's own, a
 * count write is tagged, a guarded delete that finds its key gone after a resend is its own landing).
 */
import type { Etcd3, IKeyValue, Watcher } from 'etcd3';
import { monotonicNow } from '../../clock.js';
import { Deadline } from '../../deadlines.js';

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

/** The call options etcd3 passes on to gRPC for one call. */
type CallOptions = NonNullable<Parameters<Etcd3['kv']['range']>[1]>;

/** The default reply time-out (a Padlock passes its own). */
const REPLY_TIMEOUT_MS = 5_000;
/** The shortest bound of one try: a healthy cluster's slowest calls here take ~0.3 s under load. */
const MIN_TRY_MS = 250;
/** The longest pause before a call that failed at once is sent again (no leader yet, every member refusing). */
const MAX_PAUSE_MS = 200;
/** The gRPC status a try cut off at its bound ends with: one etcd3 does not count against the member. */
const FAILED_PRECONDITION = 9;
/** The words of a try cut off at its bound (its status as etcd3 sees it). */
const CUT = 'padlock: no answer within the bound of one try';

/** The little of gRPC's interceptor interface (`@grpc/grpc-js`) the per-try bound uses. */
interface GrpcStatus {
  code: number;
  details: string;
}
interface GrpcListener {
  onReceiveMetadata?(metadata: unknown): void;
  onReceiveMessage?(message: unknown): void;
  onReceiveStatus?(status: GrpcStatus): void;
}
interface GrpcCall {
  start(metadata: unknown, listener?: GrpcListener): void;
  cancelWithStatus(code: number, details: string): void;
}
interface GrpcCallOptions {
  method_definition?: unknown;
}
type NextCall = (options: GrpcCallOptions) => GrpcCall;
type Interceptor = (options: GrpcCallOptions, next: NextCall) => GrpcCall;

/**
 * The interceptors the client was made with (`grpcOptions.interceptors`, `interceptor_providers`):
 * gRPC runs a call's own interceptors instead of its client's, so padlock's bound runs them itself.
 * Read by shape from the client's options (etcd3 keeps them on its connection pool).
 */
function clientInterceptors(client: Etcd3): Interceptor[] {
  const grpcOptions = (client as unknown as { pool?: { options?: { grpcOptions?: { interceptors?: unknown; interceptor_providers?: unknown } } } }).pool?.options?.grpcOptions;
  const own = Array.isArray(grpcOptions?.interceptors) ? (grpcOptions.interceptors as Interceptor[]) : [];
  const providers = Array.isArray(grpcOptions?.interceptor_providers) ? (grpcOptions.interceptor_providers as ((method: unknown) => Interceptor | undefined)[]) : [];
  return [
    ...own,
    ...providers.map(
      (provide): Interceptor =>
        (options, next) =>
          (provide(options.method_definition) ?? ((o: GrpcCallOptions, n: NextCall) => n(o)))(options, next),
    ),
  ];
}

/**
 * Whether `error` from etcd3 is one its own fault handling counts as transient (it marks those with a
 * symbol described `RecoverableError`: unavailable, deadline exceeded, …), or its circuit breaker
 * refusing every member for now: a call that met it is worth sending again. Checked by shape, as
 * padlock imports nothing of etcd3 at run time.
 */
function worthSendingAgain(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  return 'isBrokenCircuitError' in error || Object.getOwnPropertySymbols(error).some((symbol) => symbol.description === 'RecoverableError');
}

/** What one call's sends came to: the reply, and whether it was sent more than once (an earlier send may have been applied). */
interface Sent<T> {
  readonly reply: T;
  readonly resent: boolean;
}

/** How long a call may take in all, and one try of it. */
export interface EtcdPatience {
  /** The reply time-out: no call is sent again after it. */
  readonly replyTimeoutMs: number;
  /** The bound of one try (default: a tenth of the reply time-out, at least 250 ms). */
  readonly tryMs?: number;
}

/** The promise-returning face of one `Etcd3` client. */
export class EtcdOps {
  readonly replyTimeoutMs: number;
  /** How long one try of a call may go unanswered before it is sent again. */
  readonly tryMs: number;
  readonly #clientInterceptors: Interceptor[];

  constructor(
    readonly client: Etcd3,
    patience: EtcdPatience = { replyTimeoutMs: REPLY_TIMEOUT_MS },
  ) {
    this.replyTimeoutMs = patience.replyTimeoutMs;
    this.tryMs = Math.min(patience.replyTimeoutMs, patience.tryMs ?? Math.max(MIN_TRY_MS, Math.round(patience.replyTimeoutMs / 10)));
    this.#clientInterceptors = clientInterceptors(client);
  }

  /**
   * Sends one call (`call` makes it with the options given) until it is answered, the reply time-out
   * passes, or it fails for good.
   *
   * Each try (etcd3's own tries on another member included) gets {@link tryMs} to answer, from an
   * interceptor that starts with it; then the try is cancelled with a status etcd3 takes as final
   * (FAILED_PRECONDITION), not as a transient failure such as a gRPC deadline's: etcd3 counts
   * transient failures against a member, and after three in a row its circuit breaker shuts the
   * member out for 5 s (tried with a deadline per try: the tries cut while the members waited for a
   * dead leader shut out every member, and the calls after the election failed at once). The cut try
   * is sent again here at once, on a member etcd3 picks afresh; a call that failed at once (no leader
   * yet, every member refusing) after a pause that doubles up to {@link MAX_PAUSE_MS}.
   */
  async #send<T>(call: (options: CallOptions) => Promise<T>): Promise<Sent<T>> {
    const endAt = monotonicNow() + this.replyTimeoutMs;
    let tries = 0;
    let cut = false;
    const bound: Interceptor = (options, next) => {
      tries++;
      const tryCall = next(options);
      const cutOff = new Deadline(Math.min(this.tryMs, endAt - monotonicNow()), () => {
        cut = true;
        tryCall.cancelWithStatus(FAILED_PRECONDITION, CUT);
      });
      const start = tryCall.start.bind(tryCall);
      tryCall.start = (metadata, listener) =>
        start(metadata, {
          onReceiveMetadata: (received) => listener?.onReceiveMetadata?.(received),
          onReceiveMessage: (message) => listener?.onReceiveMessage?.(message),
          onReceiveStatus: (status) => {
            cutOff.cancel();
            listener?.onReceiveStatus?.(status);
          },
        });
      return tryCall;
    };
    const options = { interceptors: [bound, ...this.#clientInterceptors] } as unknown as CallOptions;
    for (let pauseMs = 25; ; ) {
      cut = false;
      try {
        const reply = await call(options);
        return { reply, resent: tries > 1 };
      } catch (error) {
        if (cut && monotonicNow() < endAt) continue;
        if (!worthSendingAgain(error) || monotonicNow() + pauseMs >= endAt) throw error;
        await new Promise((resolve) => setTimeout(resolve, pauseMs));
        pauseMs = Math.min(2 * pauseMs, MAX_PAUSE_MS);
      }
    }
  }

  /** The reply of one call sent as {@link #send} does. */
  async #reply<T>(call: (options: CallOptions) => Promise<T>): Promise<T> {
    return (await this.#send(call)).reply;
  }

  /** Grants a lease of `ttlSeconds` (etcd's unit), not kept alive. */
  async grantLease(ttlSeconds: number): Promise<Granted> {
    const granted = await this.#reply((options) => this.client.leaseClient.leaseGrant({ TTL: ttlSeconds }, options));
    return { id: granted.ID, ttlMs: Number(granted.TTL) * 1_000 };
  }

  /**
   * Renews the lease once; resolves with the TTL etcd renewed it for, in ms (0: the lease is gone,
   * expired or revoked). Rejects when no answer came within `ms`: padlock then closes the stream
   * itself rather than by a gRPC deadline, which etcd3 would count against the member (see #send).
   */
  async keepAlive(id: string, ms: number): Promise<number> {
    const stream = await this.client.leaseClient.leaseKeepAlive();
    let cutOff: Deadline | undefined;
    let timedOut = false;
    try {
      return await new Promise<number>((resolve, reject) => {
        cutOff = new Deadline(ms, () => {
          timedOut = true;
          reject(new Error(`no keep-alive answer within ${ms} ms`));
        });
        stream.on('data', (reply) => resolve(Number(reply.TTL) * 1_000));
        stream.on('error', reject);
        stream.write({ ID: id });
      });
    } finally {
      cutOff?.cancel();
      // Ended first, the stream's error for the cancel is not reported to etcd3's fault handling.
      stream.end();
      if (timedOut) stream.cancel();
    }
  }

  /** The lease's remaining TTL in ms; ≤ 0 when it is gone. */
  async leaseRemainingMs(id: string): Promise<number> {
    const reply = await this.#reply((options) => this.client.leaseClient.leaseTimeToLive({ ID: id }, options));
    return Number(reply.TTL) * 1_000;
  }

  /** Revokes the lease: every key attached to it is deleted with it. */
  async revokeLease(id: string): Promise<void> {
    await this.#reply((options) => this.client.leaseClient.leaseRevoke({ ID: id }, options)).catch((error: unknown) => {
      if (!(error instanceof Error && /lease not found/i.test(error.message))) throw error;
    });
  }

  /**
   * Creates each `keys[i]` with `value`, attached to `lease`, unless one of them exists (all or
   * none), and reads every `prefixes[i]`'s queue in the same transaction, after the writes: one round
   * trip says where the new keys stand. `created` is false (and the reads empty) when a key existed.
   */
  async join(keys: readonly string[], value: string, lease: string, prefixes: readonly string[], extras: readonly string[] = []): Promise<{ created: boolean; snapshots: Snapshot[] }> {
    const request = {
      compare: keys.map((key) => ({ key: utf8(key), target: 'Create' as const, result: 'Equal' as const, create_revision: 0 })),
      success: [...keys.map((key) => ({ request_put: { key: utf8(key), value: utf8(value), lease } })), ...prefixes.map(rangeOf), ...extras.map((key) => ({ request_range: { key: utf8(key) } }))],
      failure: [],
    };
    const reply = await this.#reply((options) => this.client.kv.txn(request, options));
    if (!reply.succeeded) return { created: false, snapshots: [] };
    const revision = Number(reply.header.revision);
    const ranges = reply.responses.slice(keys.length);
    const extraValues = ranges.slice(prefixes.length).map(valueOf);
    return { created: true, snapshots: prefixes.map((prefix, i) => ({ revision, entries: (ranges[i]?.response_range.kvs ?? []).map((kv) => entryOf(kv, prefix)), extras: extraValues })) };
  }

  /** A linearizable read of the queue under `prefix`. */
  async queue(prefix: string): Promise<Snapshot> {
    const request = { key: utf8(prefix), range_end: prefixEnd(prefix), sort_target: 'Create' as const, sort_order: 'Ascend' as const };
    const reply = await this.#reply((options) => this.client.kv.range(request, options));
    return { revision: Number(reply.header.revision), entries: reply.kvs.map((kv) => entryOf(kv, prefix)) };
  }

  /** Linearizable reads of the queues under each of `prefixes`, all at one revision (one transaction). */
  async queues(prefixes: readonly string[], extras: readonly string[] = []): Promise<Snapshot[]> {
    if (prefixes.length === 1 && extras.length === 0) return [await this.queue(prefixes[0] ?? '')];
    const request = { compare: [], success: [...prefixes.map(rangeOf), ...extras.map((key) => ({ request_range: { key: utf8(key) } }))], failure: [] };
    const reply = await this.#reply((options) => this.client.kv.txn(request, options));
    const revision = Number(reply.header.revision);
    const extraValues = reply.responses.slice(prefixes.length).map(valueOf);
    return prefixes.map((prefix, i) => ({ revision, entries: (reply.responses[i]?.response_range.kvs ?? []).map((kv) => entryOf(kv, prefix)), extras: extraValues }));
  }

  /** The value of `key`, if it exists (linearizable). */
  async get(key: string): Promise<string | undefined> {
    const reply = await this.#reply((options) => this.client.kv.range({ key: utf8(key) }, options));
    return reply.kvs[0]?.value.toString('utf8');
  }

  /**
   * Which of `keys` exist, and the lease each is attached to, in one linearizable read (a
   * transaction of ranges): `undefined` where a key is gone.
   */
  async leasesOf(keys: readonly string[]): Promise<(string | undefined)[]> {
    const request = { compare: [], success: keys.map((key) => ({ request_range: { key: utf8(key) } })), failure: [] };
    const reply = await this.#reply((options) => this.client.kv.txn(request, options));
    return keys.map((_, i) => reply.responses[i]?.response_range.kvs[0]?.lease);
  }

  /**
   * Puts `value` at `key` attached to a new lease of `ttlSeconds` and revokes the lease the key had
   * before (so a value replaced leaves no lease behind).
   */
  async putWithOwnLease(key: string, value: string, ttlSeconds: number): Promise<void> {
    const before = await this.#reply((options) => this.client.kv.range({ key: utf8(key) }, options));
    const { id } = await this.grantLease(ttlSeconds);
    await this.#reply((options) => this.client.kv.put({ key: utf8(key), value: utf8(value), lease: id }, options));
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
    const request = {
      compare: [{ key: utf8(key), target: 'Mod' as const, result: 'Equal' as const, mod_revision: modRevision }],
      success: [{ request_put: { key: utf8(key), value: utf8(value), ignore_lease: true } }],
      failure: [{ request_range: { key: utf8(key) } }],
    };
    const reply = await this.#reply((options) => this.client.kv.txn(request, options));
    if (reply.succeeded) return Number(reply.header.revision);
    const now = reply.responses[0]?.response_range?.kvs[0];
    return now !== undefined && now.value.toString('utf8') === value ? Number(now.mod_revision) : undefined;
  }

  /**
   * Deletes `keys` if each one's last write is still `modRevisions[i]` (all or none); `'changed'` when
   * one of them changed but is still there, false when one is gone. A call sent more than once whose
   * keys are all gone is this delete, applied though its answer was lost: true.
   */
  async removeIf(keys: readonly string[], modRevisions: readonly number[]): Promise<true | false | 'changed'> {
    const request = {
      compare: keys.map((key, i) => ({ key: utf8(key), target: 'Mod' as const, result: 'Equal' as const, mod_revision: modRevisions[i] ?? 0 })),
      success: keys.map((key) => ({ request_delete_range: { key: utf8(key) } })),
      failure: keys.map((key) => ({ request_range: { key: utf8(key), count_only: true } })),
    };
    const { reply, resent } = await this.#send((options) => this.client.kv.txn(request, options));
    if (reply.succeeded) return true;
    const counts = reply.responses.map((r) => Number(r.response_range.count));
    if (counts.every((count) => count > 0)) return 'changed';
    return resent && counts.every((count) => count === 0);
  }

  /** Deletes `keys` whatever their state; how many there were. */
  async remove(...keys: readonly string[]): Promise<number> {
    if (keys.length === 1) return Number((await this.#reply((options) => this.client.kv.deleteRange({ key: utf8(keys[0] ?? '') }, options))).deleted);
    const request = { compare: [], success: keys.map((key) => ({ request_delete_range: { key: utf8(key) } })), failure: [] };
    const reply = await this.#reply((options) => this.client.kv.txn(request, options));
    return reply.responses.reduce((n, r) => n + Number(r.response_delete_range.deleted), 0);
  }
}
