// WhatsApp Business Cloud API text messages.

import { checkUrl, failure, invalidOption, postJson, type Received, retryAfterMs } from './http-call.ts';
import { asObject } from '../object.ts';
import { detail, show } from '../text.ts';
import type { Attempt } from '../retry.ts';
import type { Adapter, Sent } from './adapter.ts';
import { checkFetch, platformAdapter, retryableStatus, tellFor } from './_platform.ts';

export interface WhatsAppOptions {
  /** The business phone-number id from the WhatsApp Manager (not the phone number itself). */
  phoneNumberId: string;
  /** A system-user or business access token. */
  accessToken: string;
  /** Graph API base with its version. */
  apiBase?: string;
  fetch?: typeof fetch;
}

// Graph codes that mean "too fast, try later": app call limit, WABA limit, throughput, spam limit,
// pair rate limit; 1 and 2 are Graph's "unknown"/"service unavailable", which Meta says to retry.
const _RETRYABLE_CODES: ReadonlySet<number> = new Set([1, 2, 4, 80007, 130429, 131048, 131056]);

/**
 * WhatsApp through the Business Cloud API's text message. `to` is the recipient's phone number in
 * E.164, with or without `+`; digits only are sent, the form the API reports back as `wa_id`.
 */
export function createWhatsAppAdapter(options: WhatsAppOptions): Adapter {
  const { phoneNumberId, accessToken, apiBase = 'https://graph.facebook.com/v21.0', fetch = globalThis.fetch } =
    options;
  if (typeof phoneNumberId !== 'string' || !/^\d+$/.test(phoneNumberId)) {
    throw invalidOption(
      'phoneNumberId',
      `must be the digits of the business phone-number id, got ${show(phoneNumberId)}`,
    );
  }
  if (typeof accessToken !== 'string' || accessToken.trim() === '') {
    throw invalidOption('accessToken', 'must be a non-empty string');
  }
  const endpoint = `${checkUrl('apiBase', apiBase)}/${phoneNumberId}/messages`;
  checkFetch(fetch);
  const headers = { authorization: `Bearer ${accessToken}`, accept: 'application/json' };
  const tell = tellFor([accessToken]);
  return platformAdapter({
    channel: 'whatsapp',
    name: 'WhatsApp',
    // The Cloud API's limit for a text message body.
    maxLength: 4096,
    tell,
    unreachable: 'Cannot reach the WhatsApp Cloud API',
    post(to, text, signal) {
      const payload = {
        messaging_product: 'whatsapp',
        recipient_type: 'individual',
        to: to.replace(/^\+/, ''),
        type: 'text',
        text: { body: text, preview_url: false },
      };
      return postJson(endpoint, payload, { fetch, headers, signal });
    },
    answer: (reply) => _outcome(reply, tell),
  });
}

function _outcome(reply: Received, tell: (message: string) => string): Attempt<Sent> {
  const { status } = reply;
  const body = asObject(reply.json);
  if (status >= 200 && status < 300) {
    // 200 means accepted; a reply without ids must not become a retry that sends the text twice.
    const messages = body?.['messages'];
    const ids = Array.isArray(messages)
      ? messages.map((m) => asObject(m)?.['id']).filter((id): id is string => typeof id === 'string')
      : [];
    return { ok: true, value: { messageIds: ids } };
  }
  const wait = retryAfterMs(reply.headers, Date.now());
  const error = asObject(body?.['error']);
  if (error === null) {
    return failure(tell(`WhatsApp answered HTTP ${status}${detail(reply.text)}`), retryableStatus(status), wait);
  }
  const code = error['code'];
  const retryable = retryableStatus(status) || error['is_transient'] === true ||
    (typeof code === 'number' && _RETRYABLE_CODES.has(code));
  return failure(tell(_describe(status, error)), retryable, wait);
}

// Meta says to act on `code` and `error_data.details`; the title in `message` is for people.
function _describe(status: number, error: Record<string, unknown>): string {
  const code = typeof error['code'] === 'number' ? ` ${error['code']}` : '';
  const subcode = typeof error['error_subcode'] === 'number' ? `/${error['error_subcode']}` : '';
  const message = typeof error['message'] === 'string' ? error['message'] : 'no message';
  const details = asObject(error['error_data'])?.['details'];
  const extra = typeof details === 'string' && details !== '' && !message.includes(details) ? ` (${details})` : '';
  const trace = typeof error['fbtrace_id'] === 'string' ? ` [fbtrace_id ${error['fbtrace_id']}]` : '';
  return `WhatsApp error${code}${subcode} (HTTP ${status}): ${message}${extra}${trace}`;
}
