import { parseRetryAfter, type Attempt } from '../retry.ts';
import type { Adapter, Sent } from './adapter.ts';

export interface WhatsAppOptions {
  /** The business phone-number id from the WhatsApp Manager (not the phone number itself). */
  phoneNumberId: string;
  /** A system-user or business access token. */
  accessToken: string;
  /** Graph API base with its version. */
  apiBase?: string;
  fetch?: typeof fetch;
}

const _PHONE = /^\+?[1-9]\d{6,14}$/;
// Graph codes that mean "too fast, try later": app call limit, WABA limit, throughput, spam limit,
// pair rate limit; 1 and 2 are Graph's "unknown"/"service unavailable", which Meta says to retry.
const _RETRYABLE_CODES: ReadonlySet<number> = new Set([1, 2, 4, 80007, 130429, 131048, 131056]);

/**
 * WhatsApp through the Business Cloud API's text message. `to` is the recipient's phone number in
 * E.164, with or without `+`; digits only are sent, the form the API reports back as `wa_id`.
 */
export function createWhatsAppAdapter(options: WhatsAppOptions): Adapter {
  const { phoneNumberId, accessToken, apiBase = 'https://graph.facebook.com/v21.0', fetch: fetchImpl = fetch } = options;
  if (typeof phoneNumberId !== 'string' || !/^\d+$/.test(phoneNumberId)) {
    throw new TypeError(`Invalid option phoneNumberId: must be the digits of the business phone-number id, got ${_show(phoneNumberId)}`);
  }
  if (typeof accessToken !== 'string' || accessToken.trim() === '') throw new TypeError('Invalid option accessToken: must be a non-empty string');
  if (!_isHttpUrl(apiBase)) throw new TypeError(`Invalid option apiBase: must be an http(s) URL, got ${_show(apiBase)}`);
  if (typeof fetchImpl !== 'function') throw new TypeError('Invalid option fetch: must be a function');
  const endpoint = `${apiBase.replace(/\/+$/, '')}/${phoneNumberId}/messages`;
  // Scrubbed before clipped, so a cut can never leave half a token behind.
  const tell = (text: string) => _clip(_scrub(text, accessToken));

  const checkRecipient = (to: string): string | null =>
    _PHONE.test(to) ? null : `Invalid WhatsApp recipient: expected a phone number in E.164 (7 to 15 digits, with or without +), got ${_show(to)}`;

  const send = async (to: string, text: string, signal?: AbortSignal): Promise<Attempt<Sent>> => {
    const problem = checkRecipient(to);
    if (problem !== null) return { ok: false, retryable: false, message: problem };
    const payload = {
      messaging_product: 'whatsapp',
      recipient_type: 'individual',
      to: to.replace(/^\+/, ''),
      type: 'text',
      text: { body: text, preview_url: false },
    };
    let status: number;
    let retryAfter: string | null;
    let body: string;
    try {
      const response = await fetchImpl(endpoint, {
        method: 'POST',
        headers: { authorization: `Bearer ${accessToken}`, 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify(payload),
        ...(signal === undefined ? {} : { signal }),
      });
      status = response.status;
      retryAfter = response.headers.get('retry-after');
      body = await response.text();
    } catch (error) {
      return { ok: false, retryable: true, message: tell(`Cannot reach the WhatsApp Cloud API: ${_reason(error)}`) };
    }
    const reply = _object(_parse(body));
    if (status >= 200 && status < 300) {
      // 200 means accepted; a reply without ids must not become a retry that sends the text twice.
      const messages = reply?.['messages'];
      const ids = Array.isArray(messages) ? messages.map((m) => _object(m)?.['id']).filter((id): id is string => typeof id === 'string') : [];
      return { ok: true, value: { messageIds: ids } };
    }
    const wait = parseRetryAfter(retryAfter);
    const after = wait === undefined ? {} : { retryAfterMs: wait };
    const error = _object(reply?.['error']);
    if (error === null) {
      return { ok: false, retryable: status === 429 || status >= 500, message: tell(`WhatsApp answered HTTP ${status}${_detail(body)}`), ...after };
    }
    const code = error['code'];
    const retryable = status === 429 || status >= 500 || error['is_transient'] === true || (typeof code === 'number' && _RETRYABLE_CODES.has(code));
    return { ok: false, retryable, message: tell(_describe(status, error)), ...after };
  };

  return { channel: 'whatsapp', maxLength: 4096, checkRecipient, send };
}

// Meta says to act on `code` and `error_data.details`; the title in `message` is for people.
function _describe(status: number, error: Record<string, unknown>): string {
  const code = typeof error['code'] === 'number' ? ` ${error['code']}` : '';
  const subcode = typeof error['error_subcode'] === 'number' ? `/${error['error_subcode']}` : '';
  const message = typeof error['message'] === 'string' ? error['message'] : 'no message';
  const details = _object(error['error_data'])?.['details'];
  const extra = typeof details === 'string' && details !== '' && !message.includes(details) ? ` (${details})` : '';
  const trace = typeof error['fbtrace_id'] === 'string' ? ` [fbtrace_id ${error['fbtrace_id']}]` : '';
  return `WhatsApp error${code}${subcode} (HTTP ${status}): ${message}${extra}${trace}`;
}

function _scrub(text: string, secret: string): string {
  return text.split(secret).join('[redacted]').split(encodeURIComponent(secret)).join('[redacted]');
}

// A value as a message shows it: quoted, and short.
function _show(value: unknown): string {
  const text = typeof value === 'string' ? value : String(value);
  return JSON.stringify(text.length > 80 ? `${text.slice(0, 80)}…` : text);
}

function _isHttpUrl(value: unknown): value is string {
  if (typeof value !== 'string') return false;
  try {
    const { protocol } = new URL(value);
    return protocol === 'http:' || protocol === 'https:';
  } catch {
    return false;
  }
}

function _parse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function _object(value: unknown): Record<string, unknown> | null {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
}

function _detail(body: string): string {
  const text = body.trim();
  return text === '' ? '' : `: ${text}`;
}

function _clip(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > 400 ? `${flat.slice(0, 400)}…` : flat;
}

function _reason(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  return error.cause instanceof Error ? `${error.message} (${error.cause.message})` : error.message;
}
