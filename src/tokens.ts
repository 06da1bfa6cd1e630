/**
 * Unguessable tokens, from the operating system's CSPRNG (never `Math.random`). Random bytes are
 * drawn 4 KiB at a time: one system call serves 256 owner tokens.
 */
import { randomBytes, randomFillSync } from 'node:crypto';

const pool = Buffer.alloc(4096);
let offset = pool.length;

/** A fresh owner token: 128 random bits as 32 hex digits. */
export function newOwnerToken(): string {
  if (offset + 16 > pool.length) {
    randomFillSync(pool);
    offset = 0;
  }
  const token = pool.toString('hex', offset, offset + 16);
  offset += 16;
  return token;
}

// Request ids need only be unique, not secret: a random per-process prefix and a counter.
const requestPrefix = randomBytes(6).toString('base64url');
let requestCounter = 0;

/** A request id for idempotent script calls: 14 characters, no spaces, unique across processes. */
export function newRequestId(): string {
  requestCounter = (requestCounter + 1) % 2_176_782_336; // 36^6: six base-36 digits
  return requestPrefix + requestCounter.toString(36).padStart(6, '0');
}
