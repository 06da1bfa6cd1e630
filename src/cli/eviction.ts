/**
 * What `list` and `inspect` say about the servers' `maxmemory-policy`: a server that evicts keys when
 * full may take a lock away from its holder (src/stores/redis/adapters/eviction-policy.ts), so each such server gets
 * a warning line under the output, and `--json` a `servers` field.
 */
import { evictionRisk, evicts, memoryPolicyOf, SAFE_POLICY } from '../stores/redis/adapters/eviction-policy.js';
import type { Connection } from './connection.js';
import type { Colors } from './render.js';

/** One server's memory policy, as `list --json` and `inspect --json` report it. */
export interface ServerPolicy {
  /** `host:port` of the server (each master of a Cluster). */
  readonly address: string;
  /** Its `maxmemory-policy`; `null` when it could not be read (INFO refused). */
  readonly maxmemoryPolicy: string | null;
  /** Whether that policy may evict padlock's keys when memory is full; `null` when unknown. */
  readonly evicts: boolean | null;
}

/** Reads `INFO memory` of every server the connection's locks live on (the server, or each Cluster master). */
export async function readServerPolicies(connection: Connection): Promise<ServerPolicy[]> {
  return Promise.all(
    (await connection.servers()).map(async (node): Promise<ServerPolicy> => {
      const memory = memoryPolicyOf(String(await node.call(['INFO', 'memory']).catch(() => '')));
      return { address: node.address, maxmemoryPolicy: memory?.policy ?? null, evicts: memory === undefined ? null : evicts(memory.policy) };
    }),
  );
}

/** A warning line for each server whose policy evicts (none when all are `noeviction`). */
export function evictionLines(servers: readonly ServerPolicy[], c: Colors): string[] {
  return servers
    .filter((server) => server.evicts === true)
    .map((server) => c.yellow(`warning: Redis ${server.address} has maxmemory-policy ${server.maxmemoryPolicy ?? '?'}: ${evictionRisk(server.maxmemoryPolicy ?? '')}. Only ${SAFE_POLICY} is safe for locks (docs/safety.md).`));
}
