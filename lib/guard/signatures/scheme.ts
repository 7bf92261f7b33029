import type { IncomingHttpHeaders } from 'node:http';
import type { Signature } from '../../signing.ts';

export type { SchemeName, Signature } from '../../signing.ts';

/** What verification reads: the headers, the raw body bytes (never parsed), the raw query string. */
export interface SignedRequest {
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** The query string as received, without `?` (`''` when none). */
  query: string;
}

/** A verification outcome; a failure names the header at fault and never the expected value. */
export type Verdict = { ok: true } | { ok: false; header: string; reason: string };

/** One scheme: how it verifies, how a provider would sign, and which headers carry its delivery id. */
export interface Scheme {
  verify(signature: Signature, request: SignedRequest, nowSeconds: number): Verdict;
  /** The headers a provider adds for this body (`id` is the delivery id it would send). */
  sign(signature: Signature, body: Buffer, nowSeconds: number, id: string): Record<string, string>;
  /** Headers holding the provider's delivery id, in order of preference. */
  deliveryHeaders: readonly string[];
}

/** A failed verdict. */
export function refuse(header: string, reason: string): Verdict {
  return { ok: false, header, reason };
}

export const PASS: Verdict = { ok: true };

/** Whether a signed timestamp lies within the tolerance of `nowSeconds`, in either direction. */
export function fresh(timestamp: number, nowSeconds: number, toleranceSeconds: number): boolean {
  return Math.abs(nowSeconds - timestamp) <= toleranceSeconds;
}
