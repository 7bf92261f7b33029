// The parts of a request on a signed path that are not the signature's arithmetic: which paths are
// signed, what is checked before the body, and the providers' set-up handshakes (the verdict over
// the body, and the delivery's identity, are taken in hooks-route.ts and ledger-note.ts).

import type { IncomingMessage } from 'node:http';
import { ErrorCode, HttpError } from '../../errors.ts';
import { describeRefusal, verifySignature } from './verify.ts';
import type { Signature } from './config.ts';
import { tokensMatch } from '../token.ts';

/** What {@link signedPaths} reads of a mapping. */
export interface SignedMapping {
  match: { path?: string };
  signature?: Signature;
}

/** The signature of each signed hook path, by the path's name. */
export function signedPaths(config: { hooks: { mappings: readonly SignedMapping[] } }): Map<string, Signature> {
  const out = new Map<string, Signature>();
  for (const m of config.hooks.mappings) {
    if (m.signature !== undefined && m.match.path !== undefined) out.set(m.match.path, m.signature);
  }
  return out;
}

/**
 * Whether a form-labelled body is read as a form even when it looks like JSON: Twilio signs a form's
 * parameters, so reading the same bytes as JSON would act on text the signature does not pin down
 * (`+` and `%20` sign alike, and so do `a=b` and `ab=`).
 */
export function formAsSigned(signature: Signature | undefined): boolean {
  return signature?.scheme === 'twilio';
}

/**
 * What can be checked before the body (to invite it with `100 Continue` or not): the refusal when
 * the header the scheme signs with is absent, since no body could then verify; else `null`. The
 * signature over an empty body fails for every real request, but names the header at fault.
 */
export function missingSignature(signature: Signature, req: IncomingMessage, nowMs: number): string | null {
  const verdict = verifySignature(signature, { headers: req.headers, body: Buffer.alloc(0), query: '' }, nowMs);
  return verdict.ok || req.headers[verdict.header.toLowerCase()] !== undefined ? null : describeRefusal(verdict);
}

/**
 * Meta's subscription check, the one GET a hook path answers (and only on a path signed by `meta`):
 * the challenge to answer as text when `hub.verify_token` is right, else a refusal for the failure limiter.
 */
export function metaHandshake(
  signature: Signature | undefined,
  query: URLSearchParams,
): { ok: true; challenge: string } | { ok: false; refusal: string } {
  if (signature?.scheme !== 'meta') {
    throw new HttpError(405, ErrorCode.MethodNotAllowed, 'method GET not allowed', { headers: { allow: 'POST' } });
  }
  const presented = query.get('hub.verify_token');
  if (
    query.get('hub.mode') !== 'subscribe' || presented === null || !tokensMatch(presented, signature.verifyToken ?? '')
  ) {
    return { ok: false, refusal: "hub.verify_token does not match this path's signature.verifyToken" };
  }
  const challenge = query.get('hub.challenge');
  if (challenge === null) throw new HttpError(400, ErrorCode.InvalidPayload, 'hub.challenge: is required');
  return { ok: true, challenge };
}

/** Slack's `url_verification` (sent when the Request URL is entered): its challenge, answered after the signature verified. */
export function slackChallenge(signature: Signature | undefined, body: Record<string, unknown>): string | null {
  if (signature?.scheme !== 'slack' || body['type'] !== 'url_verification' || typeof body['challenge'] !== 'string') {
    return null;
  }
  return body['challenge'];
}
