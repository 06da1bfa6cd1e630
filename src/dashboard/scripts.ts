/** The dashboard's own Lua scripts (the lock states are read by src/stores/redis/inspection.ts's), typed at the boundary. */
import { defineScript } from '../stores/redis/adapters/script-runner.js';
import { luaSources } from '../stores/redis/scripts/embedded.js';

function strings(name: string, reply: unknown): string[] {
  if (!Array.isArray(reply)) throw new TypeError(`${name}: unexpected reply ${JSON.stringify(reply)}`);
  return reply.map(String);
}

/** One SCAN step on the server the call is sent to: the next cursor and the keys found. */
export const scanScript = defineScript('dashboard-scan.lua', luaSources.dashboardScan, (reply): { cursor: string; keys: string[] } => {
  if (!Array.isArray(reply) || reply.length !== 2) throw new TypeError(`dashboard-scan.lua: unexpected reply ${JSON.stringify(reply)}`);
  return { cursor: String(reply[0]), keys: strings('dashboard-scan.lua', reply[1]) };
});

/** Appends one audit entry: the log's length after it. */
export const auditAppendScript = defineScript('dashboard-audit-append.lua', luaSources.dashboardAuditAppend, (reply): number => {
  if (typeof reply !== 'number') throw new TypeError(`dashboard-audit-append.lua: unexpected reply ${JSON.stringify(reply)}`);
  return reply;
});

/** The newest audit entries, as stored (JSON text). */
export const auditReadScript = defineScript('dashboard-audit-read.lua', luaSources.dashboardAuditRead, (reply): string[] => strings('dashboard-audit-read.lua', reply));
