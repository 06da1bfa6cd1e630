/** Unguessable tokens, from the operating system's CSPRNG (never `Math.random`). */
import { randomBytes } from 'node:crypto';

/** A fresh owner token: 128 random bits as 32 hex digits. */
export function newOwnerToken(): string {
  return randomBytes(16).toString('hex');
}

/** A request id for idempotent script calls: 72 random bits as 12 base64url characters (no spaces). */
export function newRequestId(): string {
  return randomBytes(9).toString('base64url');
}
