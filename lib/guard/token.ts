// Reading the token from headers (and the header names that carry one), constant-time comparison, token
// generation.

import * as crypto from 'node:crypto';
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { TOKEN_HEADERS } from './credentials.ts';

/**
 * Takes the hook token from the headers: `Authorization: Bearer <token>` (scheme in any
 * case), else `x-gateway-token`, else `x-openclaw-token`. Never from the URL.
 */
export function extractToken(headers: IncomingHttpHeaders): string | null {
  const auth = headers.authorization;
  if (auth !== undefined) {
    const match = /^bearer[ \t]+(\S.*)$/i.exec(auth.trim());
    if (match !== null) return match[1]!.trim();
  }
  for (const name of TOKEN_HEADERS.slice(1)) {
    const value = headers[name];
    const first = Array.isArray(value) ? value[0] : value;
    if (first !== undefined && first.trim() !== '') return first.trim();
  }
  return null;
}

/**
 * Compares a presented token with the expected one in constant time. Both are hashed first,
 * so neither the comparison nor an early length check tells an attacker the token's length.
 */
export function tokensMatch(presented: string, expected: string): boolean {
  return tokenMatches(presented, tokenDigest(expected));
}

/** The digest a configured token is compared by: made once per configuration, not per request. */
export function tokenDigest(token: string): Buffer {
  return _sha256(token);
}

/**
 * Whether a presented token is the one `expected` is the digest of. Only the presented token is
 * hashed; equal-length digests compared with `timingSafeEqual` tell nothing about the length.
 */
export function tokenMatches(presented: string, expected: Buffer): boolean {
  return timingSafeEqual(_sha256(presented), expected);
}

// The one-shot `hash` (Node >= 20.12, Deno) skips the Hash object; older Node 20 has only createHash.
const _oneShot = (crypto as { hash?: (algorithm: string, data: string, encoding: 'buffer') => Buffer }).hash;
const _sha256: (text: string) => Buffer = typeof _oneShot === 'function'
  ? (text) => _oneShot('sha256', text, 'buffer')
  : (text) => crypto.createHash('sha256').update(text).digest();

/** A new random token: 32 bytes of entropy, base64url (43 characters). */
export function generateToken(): string {
  return randomBytes(32).toString('base64url');
}
