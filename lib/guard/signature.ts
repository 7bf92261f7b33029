import type { IncomingHttpHeaders } from 'node:http';
import { genericHmac, github, meta, shopify } from './signatures/body-hmac.ts';
import { header } from './signatures/crypto.ts';
import type { SchemeName, Signature } from '../signing.ts';
import type { Scheme, SignedRequest, Verdict } from './signatures/scheme.ts';
import { gitlab, pathToken } from './signatures/shared-token.ts';
import { slack } from './signatures/slack.ts';
import { standardWebhooks } from './signatures/standard-webhooks.ts';
import { stripe } from './signatures/stripe.ts';
import { twilio } from './signatures/twilio.ts';

export { SCHEMES, type SchemeName, type Signature } from '../signing.ts';
export type { SignedRequest, Verdict } from './signatures/scheme.ts';

const SCHEMES_BY_NAME: Readonly<Record<SchemeName, Scheme>> = {
  'standard-webhooks': standardWebhooks,
  github,
  meta,
  stripe,
  slack,
  shopify,
  twilio,
  gitlab,
  hmac: genericHmac,
  token: pathToken,
};

/** The schemes whose signature carries a timestamp, checked against `toleranceSeconds`. */
export const TIMESTAMPED: readonly SchemeName[] = ['standard-webhooks', 'stripe', 'slack'];

/**
 * Verifies a request as its scheme's provider signs it, over the raw body bytes, in constant time.
 * `nowMs` is the wall clock (milliseconds since the epoch) that signed timestamps are held against.
 */
export function verifySignature(signature: Signature, request: SignedRequest, nowMs: number): Verdict {
  return SCHEMES_BY_NAME[signature.scheme].verify(signature, request, Math.floor(nowMs / 1000));
}

/** The provider's id for this delivery (the same on each of its retries), or `null` when the scheme has none. */
export function deliveryId(signature: Signature, headers: IncomingHttpHeaders, payload: Record<string, unknown>): string | null {
  if (signature.scheme === 'stripe') return typeof payload['id'] === 'string' && payload['id'] !== '' ? payload['id'] : null;
  for (const name of SCHEMES_BY_NAME[signature.scheme].deliveryHeaders) {
    const value = header(headers, name);
    if (value !== null) return value;
  }
  return null;
}

/** The headers a real sender of this scheme would add to `body`, signed with the first secret. */
export function signRequest(signature: Signature, body: Buffer, nowMs: number, id: string): Record<string, string> {
  return { 'content-type': 'application/json', ...SCHEMES_BY_NAME[signature.scheme].sign(signature, body, Math.floor(nowMs / 1000), id) };
}

/** A refusal as the client reads it: the header at fault and why, never the expected value. */
export function describeRefusal(verdict: Verdict & { ok: false }): string {
  return `invalid signature: ${verdict.header} ${verdict.reason}`;
}
