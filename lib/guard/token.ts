import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { TOKEN_HEADERS } from '../credentials.ts';

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
  const a = createHash('sha256').update(presented).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

/** A new random token: 32 bytes of entropy, base64url (43 characters). */
export function generateToken(): string {
  return randomBytes(32).toString('base64url');
}
