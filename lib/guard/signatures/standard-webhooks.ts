// The Standard Webhooks scheme (and Svix's names for its headers): HMAC-SHA256 over id, timestamp and body,
// keyed by the whsec_ secret.

import { STANDARD_SECRET_PREFIX as SECRET_PREFIX } from './config.ts';
import { epochSeconds, header, hmac, safeEqual } from './crypto.ts';
import { fresh, PASS, refuse, type Scheme, type SignedRequest, type Verdict } from './scheme.ts';
import type { Signature } from './config.ts';

/** The key bytes of a `whsec_` secret. */
export function secretKey(secret: string): Buffer {
  return Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64');
}

// Svix, the reference sender, sends the same three headers under its own names.
const HEADER_SETS = [
  ['webhook-id', 'webhook-timestamp', 'webhook-signature'],
  ['svix-id', 'svix-timestamp', 'svix-signature'],
] as const;

function _signature(key: Buffer, id: string, timestamp: string, body: Buffer): string {
  return hmac('sha256', key, [`${id}.${timestamp}.`, body]).toString('base64');
}

// The names the request uses: Svix's only when it has no `webhook-id`.
function _names(request: SignedRequest): (typeof HEADER_SETS)[number] {
  return HEADER_SETS.find(([id]) => header(request.headers, id) !== null) ?? HEADER_SETS[0];
}

function verify(signature: Signature, request: SignedRequest, nowSeconds: number): Verdict {
  const [idName, timestampName, signatureName] = _names(request);
  const id = header(request.headers, idName);
  const timestamp = header(request.headers, timestampName);
  const presented = header(request.headers, signatureName);
  if (id === null) return refuse(idName, 'is missing');
  if (timestamp === null) return refuse(timestampName, 'is missing');
  if (presented === null) return refuse(signatureName, 'is missing');
  const seconds = epochSeconds(timestamp);
  if (seconds === null) return refuse(timestampName, 'must be whole seconds since the epoch');
  if (!fresh(seconds, nowSeconds, signature.toleranceSeconds)) {
    return refuse(
      timestampName,
      `is more than ${signature.toleranceSeconds} s from the server's clock`,
      nowSeconds - seconds,
    );
  }
  // A space-separated list of `version,signature`; only v1 (HMAC-SHA256) is symmetric.
  const offered = presented.split(' ').flatMap((entry) => (entry.startsWith('v1,') ? [entry.slice(3)] : []));
  if (offered.length === 0) return refuse(signatureName, 'holds no v1 signature');
  for (const secret of signature.secrets) {
    const expected = _signature(secretKey(secret), id, timestamp, request.body);
    if (offered.some((candidate) => safeEqual(candidate, expected))) return PASS;
  }
  return refuse(signatureName, 'does not match the body');
}

function sign(signature: Signature, body: Buffer, nowSeconds: number, id: string): Record<string, string> {
  const timestamp = String(nowSeconds);
  return {
    'webhook-id': id,
    'webhook-timestamp': timestamp,
    'webhook-signature': `v1,${_signature(secretKey(signature.secrets[0]!), id, timestamp, body)}`,
  };
}

/** Standard Webhooks (and Svix): HMAC-SHA256 over `id.timestamp.body`, base64, keyed by the decoded `whsec_` secret. */
export const standardWebhooks: Scheme = {
  verify,
  sign,
  // The id is part of what is signed: the one verified is the delivery's, whatever else the request says.
  delivery: (request) => {
    const id = header(request.headers, _names(request)[0]);
    return id === null ? null : { id, signed: true };
  },
};
