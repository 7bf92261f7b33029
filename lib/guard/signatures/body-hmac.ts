// The body-HMAC schemes: an HMAC of the raw body in a header (GitHub, the generic layout the config
// describes, and the providers that sign the same way).

import type { Algorithm, Encoding } from './config.ts';
import { header, hmac, safeEqual } from './crypto.ts';
import { metaDelivery } from './meta-delivery.ts';
import { headerDelivery, NO_DELIVERY, PASS, refuse, type Scheme, type SignedRequest, type Verdict } from './scheme.ts';
import type { Signature } from './config.ts';

/** Where a body HMAC travels and how it is written. */
interface Layout {
  header: string;
  algorithm: Algorithm;
  encoding: Encoding;
  prefix: string;
  /** The header a provider puts its delivery id in (never signed), if any. */
  deliveryHeader?: string;
}

// The generic scheme takes its layout from the configuration.
function _layout(signature: Signature, fixed: Layout | undefined): Layout {
  return fixed ??
    {
      header: signature.header ?? '',
      algorithm: signature.algorithm ?? 'sha256',
      encoding: signature.encoding ?? 'hex',
      prefix: signature.prefix ?? '',
    };
}

function _digest(layout: Layout, secret: string, body: Buffer): string {
  return hmac(layout.algorithm, secret, [body]).toString(layout.encoding);
}

function _scheme(fixed?: Layout, delivery?: Scheme['delivery']): Scheme {
  const verify = (signature: Signature, request: SignedRequest): Verdict => {
    const layout = _layout(signature, fixed);
    const presented = header(request.headers, layout.header);
    if (presented === null) return refuse(layout.header, 'is missing');
    if (!presented.startsWith(layout.prefix)) return refuse(layout.header, `must start with "${layout.prefix}"`);
    const value = presented.slice(layout.prefix.length);
    // Hex digits are the same digest in either case; base64 is case-sensitive.
    const candidate = layout.encoding === 'hex' ? value.toLowerCase() : value;
    for (const secret of signature.secrets) {
      if (safeEqual(candidate, _digest(layout, secret, request.body))) return PASS;
    }
    return refuse(layout.header, 'does not match the body');
  };
  const sign = (signature: Signature, body: Buffer, _now: number, id: string): Record<string, string> => {
    const layout = _layout(signature, fixed);
    const headers: Record<string, string> = {
      [layout.header.toLowerCase()]: layout.prefix + _digest(layout, signature.secrets[0]!, body),
    };
    if (layout.deliveryHeader !== undefined) headers[layout.deliveryHeader] = id;
    return headers;
  };
  return {
    verify,
    sign,
    delivery: delivery ?? (fixed?.deliveryHeader === undefined ? NO_DELIVERY : headerDelivery(fixed.deliveryHeader)),
  };
}

/** GitHub: `X-Hub-Signature-256: sha256=<hex>` over the body; the delivery id in `X-GitHub-Delivery`. */
export const github = _scheme({
  header: 'X-Hub-Signature-256',
  algorithm: 'sha256',
  encoding: 'hex',
  prefix: 'sha256=',
  deliveryHeader: 'x-github-delivery',
});

/**
 * Meta (WhatsApp Cloud, Messenger, Instagram): the same header as GitHub, keyed by the app secret.
 * No delivery id and no timestamp: a delivery is known by what its signed payload reports.
 */
export const meta = _scheme(
  { header: 'X-Hub-Signature-256', algorithm: 'sha256', encoding: 'hex', prefix: 'sha256=' },
  metaDelivery,
);

/** Shopify: `X-Shopify-Hmac-Sha256: <base64>` over the body; the delivery id in `X-Shopify-Webhook-Id`. */
export const shopify = _scheme({
  header: 'X-Shopify-Hmac-Sha256',
  algorithm: 'sha256',
  encoding: 'base64',
  prefix: '',
  deliveryHeader: 'x-shopify-webhook-id',
});

/** Any sender that HMACs the body: header, algorithm, encoding and prefix come from the configuration. */
export const genericHmac = _scheme();
