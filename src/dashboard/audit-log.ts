/**
 * The dashboard's audit log: every force-release, who asked, when and why, in one capped Redis list
 * (`<prefix>:dashboard:audit`, the newest {@link AUDIT_CAP} entries) that expires
 * {@link AUDIT_TTL_MS} after the last entry. On Redlock each master keeps a copy (written to all,
 * read from the first that answers).
 */
import type { LockKind } from '../lock-state.js';
import type { ScriptRunner } from '../stores/redis/adapters/script-runner.js';
import { auditAppendScript, auditReadScript } from './scripts.js';
import type { AuditEntry } from './snapshot.js';

/** Entries kept. */
export const AUDIT_CAP = 1_000;
/** The log expires this long after its last entry: 30 days. */
export const AUDIT_TTL_MS = 30 * 86_400_000;

/** The log's key under `prefix`. */
export function auditKey(prefix: string): string {
  return `${prefix}:dashboard:audit`;
}

const KINDS: readonly LockKind[] = ['mutex', 'readWrite', 'semaphore'];

/** An entry read back, or `undefined` for text that is not one (never trusted blindly: the page shows it). */
export function parseAuditEntry(text: string): AuditEntry | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const e = value as Record<string, unknown>;
  if (typeof e['at'] !== 'string' || typeof e['who'] !== 'string' || typeof e['name'] !== 'string' || typeof e['why'] !== 'string') return undefined;
  if (!KINDS.includes(e['kind'] as LockKind) || typeof e['released'] !== 'boolean' || !(e['fence'] === null || typeof e['fence'] === 'number')) return undefined;
  return { at: e['at'], who: e['who'], name: e['name'], kind: e['kind'] as LockKind, fence: e['fence'], why: e['why'], released: e['released'] };
}

/** Appends to and reads the log on one server (or each Redlock master). */
export class AuditLog {
  readonly #runners: readonly ScriptRunner[];
  readonly #key: string;

  /** @param runners the server's, or each Redlock master's */
  constructor(runners: readonly ScriptRunner[], prefix: string) {
    this.#runners = runners;
    this.#key = auditKey(prefix);
  }

  /**
   * Records `entry`.
   * @throws RedisUnavailableError or RedisCommandError when no server took it
   */
  async append(entry: AuditEntry): Promise<void> {
    const results = await Promise.allSettled(this.#runners.map((runner) => runner.send(auditAppendScript, [this.#key], [JSON.stringify(entry), AUDIT_CAP, AUDIT_TTL_MS])));
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed !== undefined && results.every((r) => r.status === 'rejected')) throw failed.reason;
  }

  /** The newest `n` entries, newest first (from the first server that answers). */
  async read(n: number): Promise<AuditEntry[]> {
    let lastError: unknown;
    for (const runner of this.#runners) {
      try {
        return (await runner.send(auditReadScript, [this.#key], [n])).flatMap((text) => parseAuditEntry(text) ?? []);
      } catch (error) {
        lastError = error;
      }
    }
    throw lastError;
  }
}
