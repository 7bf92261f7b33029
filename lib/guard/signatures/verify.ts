// Verifying a request over the raw body, its delivery id, signing one (`hooks-ingress sign`), the refusal's
// text; loads each scheme's file when a loaded config names it.

import { createHash } from 'node:crypto';
import type { SchemeName, Signature } from './config.ts';
import type { DeliveryId, Scheme, SignedRequest, Verdict } from './scheme.ts';

// Each scheme's module, imported when a config first names the scheme (loading a config does it:
// see loadSchemes), so a server without signed paths loads none of them.
const IMPORTS: Readonly<Record<SchemeName, () => Promise<Scheme>>> = {
  'standard-webhooks': async () => (await import('./standard-webhooks.ts')).standardWebhooks,
  github: async () => (await import('./body-hmac.ts')).github,
  meta: async () => (await import('./body-hmac.ts')).meta,
  stripe: async () => (await import('./stripe.ts')).stripe,
  slack: async () => (await import('./slack.ts')).slack,
  shopify: async () => (await import('./body-hmac.ts')).shopify,
  twilio: async () => (await import('./twilio.ts')).twilio,
  gitlab: async () => (await import('./shared-token.ts')).gitlab,
  hmac: async () => (await import('./body-hmac.ts')).genericHmac,
  token: async () => (await import('./shared-token.ts')).pathToken,
};

// The schemes imported so far; a module once imported stays for the life of the process anyway.
const LOADED = new Map<SchemeName, Scheme>();

/** Imports the schemes named, so requests on their paths are verified without waiting; a config's loading calls it. */
export async function loadSchemes(names: Iterable<SchemeName>): Promise<void> {
  for (const name of new Set(names)) if (!LOADED.has(name)) LOADED.set(name, await IMPORTS[name]());
}

function _scheme(name: SchemeName): Scheme {
  const scheme = LOADED.get(name);
  if (scheme === undefined) throw new Error(`Cannot use signature scheme ${name}: it was not loaded (loadSchemes)`);
  return scheme;
}

/**
 * The headers that carry a signature computed over the body, as the schemes send them (an `hmac`
 * path's configured header besides): a replay verifies them again, and they prove nothing beyond
 * their own body. The request ledger keeps them where it redacts every other credential header.
 */
export const BODY_SIGNATURE_HEADERS: ReadonlySet<string> = new Set([
  'x-hub-signature-256',
  'x-hub-signature',
  'stripe-signature',
  'webhook-signature',
  'svix-signature',
  'x-slack-signature',
  'x-shopify-hmac-sha256',
  'x-twilio-signature',
]);

/** The schemes whose signature carries a timestamp, checked against `toleranceSeconds`. */
export const TIMESTAMPED: readonly SchemeName[] = ['standard-webhooks', 'stripe', 'slack'];

/**
 * Verifies a request as its scheme's provider signs it, over the raw body bytes, in constant time.
 * `nowMs` is the wall clock (milliseconds since the epoch) that signed timestamps are held against.
 */
export function verifySignature(signature: Signature, request: SignedRequest, nowMs: number): Verdict {
  return _scheme(signature.scheme).verify(signature, request, Math.floor(nowMs / 1000));
}

/** The secret a request presents on a path whose scheme sends the secret itself (`gitlab`, `token`); `null` for any other scheme. */
export function presentedSecret(signature: Signature, request: Pick<SignedRequest, 'headers'>): string | null {
  return _scheme(signature.scheme).presented?.(request.headers) ?? null;
}

/**
 * The identity of a verified delivery, the same on each of its retries: the id its signature covers;
 * else, with `dedupeBodySeconds`, the body's hash for that long (the body is signed, the id header
 * is not); else the id the sender puts in a header; `null` when there is none.
 */
export function deliveryId(
  signature: Signature,
  request: SignedRequest,
  payload: Record<string, unknown>,
): DeliveryId | null {
  const given = _scheme(signature.scheme).delivery(request, payload);
  if (given?.signed === true || signature.dedupeBodySeconds === undefined) return given;
  return {
    id: `sha256:${createHash('sha256').update(request.body).digest('hex')}`,
    signed: true,
    windowSeconds: signature.dedupeBodySeconds,
  };
}

/** The headers a real sender of this scheme would add to `body`, signed with the first secret. */
export function signRequest(signature: Signature, body: Buffer, nowMs: number, id: string): Record<string, string> {
  return {
    'content-type': 'application/json',
    ..._scheme(signature.scheme).sign(signature, body, Math.floor(nowMs / 1000), id),
  };
}

/** A refusal as the client reads it: the header at fault and why, never the expected value. */
export function describeRefusal(verdict: Verdict & { ok: false }): string {
  return `invalid signature: ${verdict.header} ${verdict.reason}`;
}

/** The delivery id a sender gave a request as scheme `name` reads it (loading the scheme), or `null` for an unknown scheme or none given. */
export async function senderDelivery(
  name: string,
  request: SignedRequest,
  payload: Record<string, unknown>,
): Promise<DeliveryId | null> {
  if (!Object.hasOwn(IMPORTS, name)) return null;
  await loadSchemes([name as SchemeName]);
  return _scheme(name as SchemeName).delivery(request, payload);
}
