/**
 * What the topology harness makes besides server processes (those are stopped by ./redis.ts):
 * clients in Sentinel or Cluster mode and temporary directories, all let go after the file's tests,
 * whether they passed or not.
 */
import { after } from 'node:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** What a client must offer to be tracked (ioredis `Redis` and `Cluster`, majors 5 and 6). */
export interface Disconnectable {
  disconnect(): void;
  on(event: 'error', listener: (error: Error) => void): unknown;
}

const clients: Disconnectable[] = [];
const dirs: string[] = [];

after(() => {
  for (const client of clients) client.disconnect();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** Disconnects `client` after the file's tests; its connection errors are expected (nodes die). */
export function track<C extends Disconnectable>(client: C): C {
  client.on('error', () => undefined);
  clients.push(client);
  return client;
}

/** A new temporary directory, removed after the file's tests. */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(dir);
  return dir;
}
