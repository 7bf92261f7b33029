import { createHash } from 'node:crypto';
import { genericHmac, github, meta, shopify } from './signatures/body-hmac.ts';
import type { SchemeName, Signature } from '../signing.ts';
import type { DeliveryId, Scheme, SignedRequest, Verdict } from './signatures/scheme.ts';
import { gitlab, pathToken } from './signatures/shared-token.ts';
import { slack } from './signatures/slack.ts';
import { standardWebhooks } from './signatures/standard-webhooks.ts';
import { stripe } from './signatures/stripe.ts';
import { twilio } from './signatures/twilio.ts';

export { SCHEMES, type SchemeName, type Signature } from '../signing.ts';
export type { DeliveryId, SignedRequest, Verdict } from './signatures/scheme.ts';

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

/**
 * The identity of a verified delivery, the same on each of its retries: the id its signature covers;
 * else, with `dedupeBodySeconds`, the body's hash for that long (the body is signed, the id header
 * is not); else the id the sender puts in a header; `null` when there is none.
 */
export function deliveryId(signature: Signature, request: SignedRequest, payload: Record<string, unknown>): DeliveryId | null {
  const given = SCHEMES_BY_NAME[signature.scheme].delivery(request, payload);
  if (given?.signed === true || signature.dedupeBodySeconds === undefined) return given;
  return { id: `sha256:${createHash('sha256').update(request.body).digest('hex')}`, signed: true, windowSeconds: signature.dedupeBodySeconds };
}

/** The headers a real sender of this scheme would add to `body`, signed with the first secret. */
export function signRequest(signature: Signature, body: Buffer, nowMs: number, id: string): Record<string, string> {
  return { 'content-type': 'application/json', ...SCHEMES_BY_NAME[signature.scheme].sign(signature, body, Math.floor(nowMs / 1000), id) };
}

/** A refusal as the client reads it: the header at fault and why, never the expected value. */
export function describeRefusal(verdict: Verdict & { ok: false }): string {
  return `invalid signature: ${verdict.header} ${verdict.reason}`;
}
