// Slack's scheme: X-Slack-Signature over the version, timestamp and body.

import { epochSeconds, header, hmac, safeEqual } from './crypto.ts';
import { fresh, PASS, refuse, type Scheme, type SignedRequest, type Verdict } from './scheme.ts';
import type { Signature } from './config.ts';

const SIGNATURE = 'X-Slack-Signature';
const TIMESTAMP = 'X-Slack-Request-Timestamp';

function _signature(secret: string, timestamp: string, body: Buffer): string {
  return `v0=${hmac('sha256', secret, [`v0:${timestamp}:`, body]).toString('hex')}`;
}

function verify(signature: Signature, request: SignedRequest, nowSeconds: number): Verdict {
  const timestamp = header(request.headers, TIMESTAMP);
  const presented = header(request.headers, SIGNATURE);
  if (timestamp === null) return refuse(TIMESTAMP, 'is missing');
  if (presented === null) return refuse(SIGNATURE, 'is missing');
  const seconds = epochSeconds(timestamp);
  if (seconds === null) return refuse(TIMESTAMP, 'must be whole seconds since the epoch');
  if (!fresh(seconds, nowSeconds, signature.toleranceSeconds)) {
    return refuse(
      TIMESTAMP,
      `is more than ${signature.toleranceSeconds} s from the server's clock`,
      nowSeconds - seconds,
    );
  }
  const candidate = presented.toLowerCase();
  for (const secret of signature.secrets) {
    if (safeEqual(candidate, _signature(secret, timestamp, request.body))) return PASS;
  }
  return refuse(SIGNATURE, 'does not match the body');
}

function sign(signature: Signature, body: Buffer, nowSeconds: number): Record<string, string> {
  const timestamp = String(nowSeconds);
  return {
    'x-slack-request-timestamp': timestamp,
    'x-slack-signature': _signature(signature.secrets[0]!, timestamp, body),
  };
}

/**
 * Slack: `v0=<hex>` HMAC-SHA256 over `v0:timestamp:body`, keyed by the app's signing secret. An
 * Events API `event_callback` carries its `event_id` in the signed body, the same on each retry
 * (which Slack signs afresh, with `X-Slack-Retry-Num`); slash commands and interactivity carry none.
 */
export const slack: Scheme = {
  verify,
  sign,
  delivery: (_request, payload) =>
    payload['type'] === 'event_callback' && typeof payload['event_id'] === 'string' && payload['event_id'] !== ''
      ? { id: payload['event_id'], signed: true }
      : null,
};
