// Twilio's scheme: X-Twilio-Signature over the URL it called and the form parameters in its order.

import { createHash } from 'node:crypto';
import { header, hmac, safeEqual } from './crypto.ts';
import { headerDelivery, PASS, refuse, type Scheme, type SignedRequest, type Verdict } from './scheme.ts';
import type { Signature } from './config.ts';

const HEADER = 'X-Twilio-Signature';

/** The URL Twilio signed: the configured public URL, with the query string it called when that names none. */
export function signedUrl(url: string, query: string): string {
  return url.includes('?') || query === '' ? url : `${url}?${query}`;
}

// Twilio signs the URL as it called it, with or without an explicit port; a proxy may have changed which.
function _portVariants(url: string): string[] {
  const match = /^(https?):\/\/([^/?#:]+)(:\d+)?(.*)$/i.exec(url);
  if (match === null) return [url];
  const [, scheme, host, port, rest] = match;
  const standard = scheme!.toLowerCase() === 'https' ? ':443' : ':80';
  return port === undefined ? [url, `${scheme}://${host}${standard}${rest}`] : [url, `${scheme}://${host}${rest}`];
}

// The parameters in Twilio's order: names sorted, each name followed by its value; a repeated
// name contributes each distinct value, sorted.
function _parameters(form: URLSearchParams): string {
  const byName = new Map<string, Set<string>>();
  for (const [name, value] of form) byName.set(name, (byName.get(name) ?? new Set()).add(value));
  let out = '';
  for (const name of [...byName.keys()].sort()) for (const value of [...byName.get(name)!].sort()) out += name + value;
  return out;
}

function _signature(secret: string, url: string, parameters: string): string {
  return hmac('sha1', secret, [Buffer.from(url + parameters, 'utf8')]).toString('base64');
}

// A JSON body is not signed as parameters: Twilio adds `bodySHA256` (hex) to the URL instead. Any
// other body is covered by neither, so the signature (over the URL alone) would vouch for whatever
// it holds: `null`.
function _content(url: string, request: SignedRequest): { parameters: string } | { bodyHash: string } | null {
  const query = url.includes('?') ? new URLSearchParams(url.slice(url.indexOf('?') + 1)) : null;
  const bodyHash = query?.get('bodySHA256');
  if (bodyHash != null) return { bodyHash };
  const form = /^application\/x-www-form-urlencoded\b/i.test(header(request.headers, 'content-type') ?? '');
  return form ? { parameters: _parameters(new URLSearchParams(request.body.toString('utf8'))) } : null;
}

function verify(signature: Signature, request: SignedRequest): Verdict {
  const presented = header(request.headers, HEADER);
  if (presented === null) return refuse(HEADER, 'is missing');
  const url = signedUrl(signature.url ?? '', request.query);
  const content = _content(url, request);
  if (content === null) {
    return refuse(HEADER, 'does not cover this body: a body that is not form-encoded needs bodySHA256 in the URL');
  }
  if (
    'bodyHash' in content &&
    !safeEqual(content.bodyHash.toLowerCase(), createHash('sha256').update(request.body).digest('hex'))
  ) {
    return refuse(HEADER, 'does not match the body (bodySHA256)');
  }
  const parameters = 'parameters' in content ? content.parameters : '';
  for (const secret of signature.secrets) {
    for (const candidate of _portVariants(url)) {
      if (safeEqual(presented, _signature(secret, candidate, parameters))) return PASS;
    }
  }
  return refuse(HEADER, `does not match the body and URL (signature.url is ${JSON.stringify(signature.url ?? '')})`);
}

function sign(signature: Signature, body: Buffer, _now: number, id: string): Record<string, string> {
  const parameters = _parameters(new URLSearchParams(body.toString('utf8')));
  return {
    'content-type': 'application/x-www-form-urlencoded',
    'x-twilio-signature': _signature(signature.secrets[0]!, signature.url ?? '', parameters),
    'i-twilio-idempotency-token': id,
  };
}

/** Twilio: base64 HMAC-SHA1 over the public URL then the sorted form parameters, keyed by the auth token. */
export const twilio: Scheme = { verify, sign, delivery: headerDelivery('i-twilio-idempotency-token') };
