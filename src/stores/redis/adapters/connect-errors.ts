/**
 * A Redis client's connection error in a few words, the same for the library's errors (a Padlock
 * whose client never reached Redis) and the CLI's (`cannot reach Redis at …`).
 */

/** A client's connection error in a few words (refused, unknown host, timed out, …). */
export function describeConnectError(error: unknown): string {
  // ioredis's Cluster fails as a whole ("Failed to refresh slots cache."): its last node's error says why.
  const lastNodeError = (error as { lastNodeError?: unknown } | null | undefined)?.lastNodeError;
  if (lastNodeError instanceof Error) return describeConnectError(lastNodeError);
  const code = (error as { code?: unknown } | null | undefined)?.code;
  const message = firstLine(error);
  if (code === 'ECONNREFUSED') return 'connection refused (is redis-server running there?)';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'unknown host';
  if (code === 'ETIMEDOUT' || /ETIMEDOUT/.test(message)) return 'connection timed out';
  if (/DB index is out of range/.test(message)) return `the server has not the database the URL names (${message})`;
  // redis-parser (ioredis 5, iovalkey) says "Protocol error", the RESP decoders of ioredis 6 and node-redis "Unknown RESP type".
  if (/Protocol error|Unknown RESP type|is it a Redis server/.test(message)) return 'the server there is not a Redis server: it does not speak the Redis protocol (wrong port?)';
  const sentinels = /All sentinels are unreachable.*?(?:Last error: (.*))?$/.exec(message);
  if (sentinels !== null) {
    const last = sentinels[1]?.trim() ?? '';
    return last === '' || /Connection is closed/.test(last) ? 'no sentinel answered (is redis-sentinel running there?)' : `the sentinels answered: ${last}`;
  }
  if (/max retries per request/.test(message)) return 'the connection dropped and could not be made again';
  if (/Connection is closed/.test(message)) return 'the connection was closed before Redis answered';
  return message;
}

/** The first line of an error's message (or of `String(value)`). */
function firstLine(value: unknown): string {
  const text = value instanceof Error ? value.message : String(value);
  return text.split('\n', 1)[0]?.trim() ?? '';
}
