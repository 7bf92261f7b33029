// An outgoing Standard Webhooks POST (the completion callbacks): the body signed with each `whsec_` secret
// over `id.timestamp.body`, sent with no redirect followed, and only the answer's status and first bytes read.

import { Buffer } from 'node:buffer';
import { createHmac } from 'node:crypto';
import { retryAfterMs } from './http-call.ts';

/** The prefix of a Standard Webhooks secret; the rest is the key, in base64. */
export const WEBHOOK_SECRET_PREFIX = 'whsec_';

/** How much of a receiver's answer is read: enough to quote why it refused, never its whole body. */
export const WEBHOOK_ANSWER_BYTES = 4096;

/**
 * The `webhook-signature` value: `v1,<base64 HMAC-SHA256 of "id.timestamp.body">` for each secret,
 * space-separated, keyed by the bytes the base64 after `whsec_` stands for. A receiver holding any
 * one of the secrets verifies it, so secrets rotate without a gap.
 */
export function signWebhook(secrets: readonly string[], id: string, timestamp: number, body: string): string {
  return secrets.map((secret) => {
    const key = Buffer.from(
      secret.startsWith(WEBHOOK_SECRET_PREFIX) ? secret.slice(WEBHOOK_SECRET_PREFIX.length) : secret,
      'base64',
    );
    return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
  }).join(' ');
}

/** The three Standard Webhooks headers of one attempt, signed at `timestamp` (epoch seconds). */
export function webhookHeaders(
  secrets: readonly string[],
  id: string,
  timestamp: number,
  body: string,
): Record<string, string> {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signWebhook(secrets, id, timestamp, body),
  };
}

/** What one POST came to: the receiver's status (any, 3xx included), or why there was no answer. */
export type WebhookAnswer =
  | { ok: true; status: number; text: string; location: string | null; retryAfterMs?: number }
  | { ok: false; aborted: boolean; message: string };

/** How one POST is made: the fetch, the signal that ends it, the clock a Retry-After date is read against. */
export interface WebhookOptions {
  fetch: typeof fetch;
  signal: AbortSignal;
  now: number;
}

/**
 * POSTs a signed JSON body. A redirect is never followed (its status is the answer), and at most
 * {@link WEBHOOK_ANSWER_BYTES} of the answer are read before the connection is let go, so a
 * receiver that answers without end costs nothing. Never throws.
 */
export async function postWebhook(
  url: string,
  body: string,
  headers: Record<string, string>,
  options: WebhookOptions,
): Promise<WebhookAnswer> {
  try {
    const response = await options.fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'user-agent': 'hooks-ingress', ...headers },
      body,
      redirect: 'manual',
      signal: options.signal,
    });
    const text = await _head(response);
    const wait = retryAfterMs(response.headers, options.now);
    return {
      ok: true,
      status: response.status,
      text,
      location: response.headers.get('location'),
      ...(wait === undefined ? {} : { retryAfterMs: wait }),
    };
  } catch (error) {
    const cause = error instanceof Error && error.cause instanceof Error ? `: ${error.cause.message}` : '';
    return { ok: false, aborted: options.signal.aborted, message: `${String(error)}${cause}` };
  }
}

// The answer's first bytes as text; the rest is not read, and the stream is cancelled.
async function _head(response: Response): Promise<string> {
  if (response.body === null) return '';
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    while (total < WEBHOOK_ANSWER_BYTES) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      total += value.byteLength;
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  return Buffer.concat(chunks, total).subarray(0, WEBHOOK_ANSWER_BYTES).toString('utf8');
}
