// What a scheme is; one file per scheme family beside it (body-hmac, standard-webhooks, stripe, slack,
// twilio, shared-token).

import type { IncomingHttpHeaders } from 'node:http';
import type { Signature } from './config.ts';
import { header } from './crypto.ts';

/** What verification reads: the headers, the raw body bytes (never parsed), the raw query string. */
export interface SignedRequest {
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** The query string as received, without `?` (`''` when none). */
  query: string;
}

/**
 * A verification outcome; a failure names the header at fault and never the expected value. A
 * signed timestamp too far from the clock carries how far (`skewSeconds`, positive when in the past).
 */
export type Verdict = { ok: true } | { ok: false; header: string; reason: string; skewSeconds?: number };

/**
 * A delivery's identity as its sender gives it (the same on each of its retries). `signed` when the
 * signature covers it: then no header of the request may stand in for it, since anyone who replays
 * a captured delivery can change the headers the signature does not cover.
 */
export interface DeliveryId {
  id: string;
  signed: boolean;
  /** How long the id is remembered, when not for `hooks.idempotencyTtlSeconds`. */
  windowSeconds?: number;
}

/** One scheme: how it verifies, how a provider would sign, and where its delivery id is. */
export interface Scheme {
  verify(signature: Signature, request: SignedRequest, nowSeconds: number): Verdict;
  /** The headers a provider adds for this body (`id` is the delivery id it would send). */
  sign(signature: Signature, body: Buffer, nowSeconds: number, id: string): Record<string, string>;
  /** The delivery's id in a verified request (`payload` is its parsed body), or `null` when the sender gives none. */
  delivery(request: SignedRequest, payload: Record<string, unknown>): DeliveryId | null;
  /** The secret itself, as presented, for a scheme that sends it (a shared token): what its fingerprint is made of. */
  presented?(headers: SignedRequest['headers']): string | null;
}

/** The id a provider puts in the first of `names` present, which its signature does not cover. */
export function headerDelivery(...names: string[]): Scheme['delivery'] {
  return ({ headers }) => {
    for (const name of names) {
      const id = header(headers, name);
      if (id !== null) return { id, signed: false };
    }
    return null;
  };
}

/** For a sender that gives no delivery id. */
export const NO_DELIVERY: Scheme['delivery'] = () => null;

/** A failed verdict. */
export function refuse(header: string, reason: string, skewSeconds?: number): Verdict {
  return skewSeconds === undefined ? { ok: false, header, reason } : { ok: false, header, reason, skewSeconds };
}

export const PASS: Verdict = { ok: true };

/** Whether a signed timestamp lies within the tolerance of `nowSeconds`, in either direction. */
export function fresh(timestamp: number, nowSeconds: number, toleranceSeconds: number): boolean {
  return Math.abs(nowSeconds - timestamp) <= toleranceSeconds;
}
