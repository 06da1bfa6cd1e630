/**
 * Test harness: real PostgreSQL servers (./postgres-server.ts) stopped after the file's tests.
 */
import { after } from 'node:test';
import { startPostgresServer, type PostgresServer } from './postgres-server.js';

export type { PostgresServer } from './postgres-server.js';

const servers: PostgresServer[] = [];
after(() => Promise.all(servers.map((s) => s.stop())));

/** Starts a fresh server (`settings`: `name=value` server settings), stopped after this file's tests. */
export async function startPostgres(settings: readonly string[] = []): Promise<PostgresServer> {
  const server = await startPostgresServer(settings);
  servers.push(server);
  return server;
}
