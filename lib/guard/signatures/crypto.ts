// What the schemes share: the HMAC of a signature's parts, constant-time comparison, a header's value, a
// timestamp in epoch seconds.

import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

import type { Algorithm } from './config.ts';

/** The HMAC of the parts, in order, as raw bytes: the parts are never joined into a string. */
export function hmac(algorithm: Algorithm, key: string | Buffer, parts: readonly (string | Buffer)[]): Buffer {
  const mac = createHmac(algorithm, key);
  for (const part of parts) mac.update(part);
  return mac.digest();
}

/**
 * Compares a presented value with the expected one in constant time. Both are hashed first, so
 * the time taken says nothing about where they differ, nor about the expected value's length.
 */
export function safeEqual(presented: string | Buffer, expected: string | Buffer): boolean {
  const a = createHash('sha256').update(presented).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

/** A request header's value (the first one when repeated), or `null` when absent or blank. */
export function header(headers: IncomingHttpHeaders, name: string): string | null {
  const value = headers[name.toLowerCase()];
  const first = Array.isArray(value) ? value[0] : value;
  if (first === undefined) return null;
  const trimmed = first.trim();
  return trimmed === '' ? null : trimmed;
}

/** A whole number of seconds since the epoch, as senders write timestamps; `null` for anything else. */
export function epochSeconds(text: string): number | null {
  return /^\d{1,12}$/.test(text) ? Number(text) : null;
}
