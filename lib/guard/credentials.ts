/**
 * The one list of request headers that carry credentials. Token extraction reads the hook token
 * from TOKEN_HEADERS; templates and transforms never see any credential header unless a mapping
 * names it in `allowCredentialHeaders`, and never see the token headers at all.
 */
import { refine, type Schema, string } from '../schema.ts';

/** Where the hook token may come from, in the order it is looked for (never the URL). */
export const TOKEN_HEADERS = ['authorization', 'x-gateway-token', 'x-openclaw-token'] as const;

// Credentials by name that the pattern below does not catch.
const _NAMED: ReadonlySet<string> = new Set([...TOKEN_HEADERS, 'proxy-authorization', 'x-api-key', 'api-key']);

// *-Token, *-Secret, *-Signature, *-Key, *-Password, *-Hmac (each also with an algorithm or
// version after it: X-Hub-Signature-256, X-Shopify-Hmac-Sha256), anything cookie-like, and
// *-Authorization, *-Credential(s), *-Passphrase: X-Authorization and X-Serverless-Authorization
// carry a bearer token as Authorization does.
const _PATTERN =
  /(?:^|-)(?:token|secret|signature|key|apikey|password|passwd|passphrase|hmac|auth|authorization|credentials?)(?:-(?:sha)?\d+)?$|cookie/;

// End in -key, but name a delivery for deduplication, not a credential: the ledger keeps them, so a
// replay is known by the same key as a live copy.
const _NOT_CREDENTIALS: ReadonlySet<string> = new Set(['idempotency-key', 'x-openclaw-idempotency-key']);

/** Whether a header (any case) carries a credential and so is hidden from templates and transforms. */
export function isCredentialHeader(name: string): boolean {
  const lower = name.toLowerCase();
  return _NAMED.has(lower) || (_PATTERN.test(lower) && !_NOT_CREDENTIALS.has(lower));
}

/** Whether a header (any case) is one the hook token is read from. */
export function isTokenHeader(name: string): boolean {
  return _TOKEN.has(name.toLowerCase());
}

const _TOKEN: ReadonlySet<string> = new Set(TOKEN_HEADERS);

/** A name in a mapping's `allowCredentialHeaders`: any header but those the hook token is read from. */
export const allowableHeader: Schema<string> = refine(
  string({ trim: true, nonEmpty: true }),
  (name) =>
    isTokenHeader(name)
      ? `may not name ${name}: the hook token is read from it, and templates and transforms never see it`
      : null,
);

/**
 * The headers a mapping may read: every header, values of repeated ones joined with `, `, except
 * credential headers the mapping does not name in `allow` (lowercase names), and except the
 * token headers whatever `allow` says: they carry the hook token itself.
 */
export function visibleHeaders(
  headers: Readonly<Record<string, string | readonly string[] | undefined>>,
  allow: ReadonlySet<string> = _NONE,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || (isCredentialHeader(name) && (!allow.has(name.toLowerCase()) || isTokenHeader(name)))) {
      continue;
    }
    out[name.toLowerCase()] = typeof value === 'string' ? value : value.join(', ');
  }
  return out;
}

const _NONE: ReadonlySet<string> = new Set();

// A config key that holds a secret, by its last segment: token, botToken, hookToken, secret(s),
// apiKey, appPassword, clientSecret, an Authorization or X-Api-Key header. `tokenUrl` and the like are not.
const _SECRET_KEY = /(?:token|secrets?|password|apikey|api-key|authorization)$/i;

/** Whether a config key (its last segment) holds a secret: what file-mode warnings and reload verdicts look for. */
export function isSecretKey(key: string): boolean {
  return _SECRET_KEY.test(key);
}
