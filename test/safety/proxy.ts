/**
 * A small TCP proxy between clients and a redis-server, to lose and delay replies (`tc netem` is
 * not available here). Requests always go through at once; the faults act on replies:
 *
 * - `delayReplies(ms)`: every reply chunk reaches the client `ms` later (order kept);
 * - `loseReplies(p, random)`: each reply chunk is, with probability `p`, swallowed and the
 *   connection reset, the way a reply is lost in practice (TCP loses no bytes without losing the
 *   connection): the server did the work, the client never hears of it and resends after reconnecting;
 * - `cutAll()`: resets every connection now.
 */
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import type { Random } from './random.js';

export interface ProxyStats {
  connections: number;
  replyChunks: number;
  lostReplies: number;
  delayedReplies: number;
}

export class RedisProxy {
  readonly stats: ProxyStats = { connections: 0, replyChunks: 0, lostReplies: 0, delayedReplies: 0 };
  readonly #pairs = new Set<{ client: Socket; upstream: Socket }>();
  readonly #timers = new Set<NodeJS.Timeout>();
  #delayMs = 0;
  #loss: { p: number; random: Random } | undefined;

  private constructor(private readonly server: Server, readonly port: number) {}

  static async start(target: { host: string; port: number }): Promise<RedisProxy> {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('proxy has no port');
    const proxy = new RedisProxy(server, address.port);
    server.on('connection', (client) => proxy.#pipe(client, target));
    return proxy;
  }

  get host(): '127.0.0.1' {
    return '127.0.0.1';
  }

  delayReplies(ms: number): void {
    this.#delayMs = ms;
  }

  loseReplies(p: number, random: Random): void {
    this.#loss = p > 0 ? { p, random } : undefined;
  }

  cutAll(): void {
    for (const { client, upstream } of this.#pairs) {
      client.resetAndDestroy();
      upstream.destroy();
    }
  }

  async close(): Promise<void> {
    for (const timer of this.#timers) clearTimeout(timer);
    this.cutAll();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  #pipe(client: Socket, target: { host: string; port: number }): void {
    this.stats.connections++;
    const upstream = createConnection(target);
    const pair = { client, upstream };
    this.#pairs.add(pair);
    let lastDelivery = 0;
    const drop = (): void => {
      this.#pairs.delete(pair);
      if (!client.destroyed) client.resetAndDestroy();
      upstream.destroy();
    };
    client.on('data', (chunk) => upstream.write(chunk));
    upstream.on('data', (chunk: Buffer) => {
      this.stats.replyChunks++;
      if (this.#loss !== undefined && this.#loss.random.chance(this.#loss.p)) {
        this.stats.lostReplies++;
        drop();
        return;
      }
      if (this.#delayMs <= 0 && lastDelivery <= Date.now()) {
        client.write(chunk);
        return;
      }
      this.stats.delayedReplies++;
      lastDelivery = Math.max(lastDelivery, Date.now() + this.#delayMs);
      const timer = setTimeout(() => {
        this.#timers.delete(timer);
        if (!client.destroyed) client.write(chunk);
      }, lastDelivery - Date.now());
      this.#timers.add(timer);
    });
    client.on('error', drop);
    upstream.on('error', drop);
    client.on('close', drop);
    upstream.on('close', drop);
  }
}
