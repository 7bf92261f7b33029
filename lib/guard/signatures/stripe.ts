// Stripe's scheme: Stripe-Signature's timestamp and signatures over the timestamp and body.

import { epochSeconds, header, hmac, safeEqual } from './crypto.ts';
import { fresh, PASS, refuse, type Scheme, type SignedRequest, type Verdict } from './scheme.ts';
import type { Signature } from './config.ts';

const HEADER = 'Stripe-Signature';

function _signature(secret: string, timestamp: string, body: Buffer): string {
  return hmac('sha256', secret, [`${timestamp}.`, body]).toString('hex');
}

// `t=<seconds>,v1=<hex>[,v1=<hex>][,v0=...]`: one timestamp, any number of signatures per scheme.
function _parse(value: string): { timestamp: string | null; v1: string[] } {
  let timestamp: string | null = null;
  const v1: string[] = [];
  for (const item of value.split(',')) {
    const eq = item.indexOf('=');
    const [key, rest] = eq === -1 ? [item, ''] : [item.slice(0, eq).trim(), item.slice(eq + 1).trim()];
    if (key === 't') timestamp = rest;
    else if (key === 'v1') v1.push(rest.toLowerCase());
  }
  return { timestamp, v1 };
}

function verify(signature: Signature, request: SignedRequest, nowSeconds: number): Verdict {
  const value = header(request.headers, HEADER);
  if (value === null) return refuse(HEADER, 'is missing');
  const { timestamp, v1 } = _parse(value);
  const seconds = timestamp === null ? null : epochSeconds(timestamp);
  if (timestamp === null || seconds === null) return refuse(HEADER, 'has no timestamp (t=)');
  if (v1.length === 0) return refuse(HEADER, 'has no v1 signature');
  if (!fresh(seconds, nowSeconds, signature.toleranceSeconds)) {
    return refuse(
      HEADER,
      `has a timestamp more than ${signature.toleranceSeconds} s from the server's clock`,
      nowSeconds - seconds,
    );
  }
  for (const secret of signature.secrets) {
    const expected = _signature(secret, timestamp, request.body);
    if (v1.some((candidate) => safeEqual(candidate, expected))) return PASS;
  }
  return refuse(HEADER, 'does not match the body');
}

function sign(signature: Signature, body: Buffer, nowSeconds: number): Record<string, string> {
  const timestamp = String(nowSeconds);
  return { 'stripe-signature': `t=${timestamp},v1=${_signature(signature.secrets[0]!, timestamp, body)}` };
}

/** Stripe: HMAC-SHA256 over `t.body` keyed by the endpoint secret as written; the delivery id is the event's `id`. */
export const stripe: Scheme = {
  verify,
  sign,
  // The event's id is in the signed body: Stripe sends the same one on each retry.
  delivery: (
    _request,
    payload,
  ) => (typeof payload['id'] === 'string' && payload['id'] !== '' ? { id: payload['id'], signed: true } : null),
};
