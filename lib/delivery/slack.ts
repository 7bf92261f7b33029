import type { Adapter, Sent } from './adapter.ts';
import { parseRetryAfter } from '../retry.ts';
import type { Attempt } from '../retry.ts';

/** Options of {@link createSlackAdapter}. */
export interface SlackOptions {
  /** The bot token (`xoxb-…`) with the `chat:write` scope, sent as `Authorization: Bearer <token>`. */
  botToken: string;
  /** The Web API base; default `https://slack.com/api`. */
  apiBase?: string | undefined;
  fetch?: typeof fetch | undefined;
}

type _Failure = Extract<Attempt<Sent>, { ok: false }>;

interface _Reply {
  status: number;
  headers: Headers;
  text: string;
  body: Record<string, unknown> | null;
}

// Slack posts up to 40 000 characters but advises 4 000 for a readable message; past 40 000 it
// truncates silently, and escaping `&<>` grows a 4 000-character chunk to at most 20 000.
const _MAX_LENGTH = 4000;
// An encoded conversation id: C public channel, G private channel or group, D direct message;
// a U or W user id posts to the app's direct message with that user.
const _CHANNEL = /^[CGDUW][A-Z0-9]{8,}$/;
// `ok:false` codes that say "later", not "never".
const _RATE_LIMITED = new Set(['ratelimited', 'rate_limited']);

/**
 * A Slack adapter over the Web API's `chat.postMessage`. `&`, `<` and `>` are escaped, so the text
 * shows as written and cannot smuggle in `<!channel>` pings or disguised links.
 */
export function createSlackAdapter(options: SlackOptions): Adapter {
  const { botToken, apiBase = 'https://slack.com/api', fetch: doFetch = globalThis.fetch } = options;
  // A header value cannot hold line breaks, and a token with spaces is not a token.
  if (typeof botToken !== 'string' || !/^[\x21-\x7e]+$/.test(botToken)) {
    throw new TypeError('Invalid option botToken: must be a non-empty string of visible ASCII characters');
  }
  if (typeof doFetch !== 'function') throw new TypeError('Invalid option fetch: must be a function');
  const url = `${_base(apiBase)}/chat.postMessage`;
  const redact = (message: string): string => message.replaceAll(botToken, '<token>');

  const send = async (to: string, text: string, signal?: AbortSignal): Promise<Attempt<Sent>> => {
    _checkText(text);
    const problem = checkRecipient(to);
    if (problem !== null) return { ok: false, retryable: false, message: problem };
    const init: RequestInit = {
      method: 'POST',
      // Without the charset Slack still answers, but with a `missing_charset` warning.
      headers: { authorization: `Bearer ${botToken}`, 'content-type': 'application/json; charset=utf-8' },
      body: JSON.stringify({ channel: to, text: _escape(text) }),
      signal: signal ?? null,
    };
    const reply = await _exchange(doFetch, url, init, signal);
    return 'status' in reply ? _outcome(reply) : reply;
  };

  return {
    channel: 'slack',
    maxLength: _MAX_LENGTH,
    checkRecipient,
    send: async (to, text, signal) => {
      const attempt = await send(to, text, signal);
      // Scrubbed before clipped, so a cut can never leave part of a token behind.
      return attempt.ok ? attempt : { ...attempt, message: _clip(redact(attempt.message)) };
    },
  };
}

function checkRecipient(to: string): string | null {
  if (typeof to === 'string' && _CHANNEL.test(to)) return null;
  return `Invalid Slack recipient: expected a channel id (C…, G…, D…) or a user id (U…, W…), got ${_show(to)}`;
}

async function _exchange(doFetch: typeof fetch, url: string, init: RequestInit, signal: AbortSignal | undefined): Promise<_Reply | _Failure> {
  try {
    const response = await doFetch(url, init);
    const text = await response.text();
    return { status: response.status, headers: response.headers, text, body: _object(text) };
  } catch (error) {
    if (signal?.aborted === true) return { ok: false, retryable: false, message: 'Slack request aborted' };
    return { ok: false, retryable: true, message: `Slack request failed: ${_describe(error)}` };
  }
}

// Success is `ok:true` in the body, never the status alone: Slack answers most failures with 200.
function _outcome(reply: _Reply): Attempt<Sent> {
  const { status, body } = reply;
  if (status >= 200 && status < 300 && body?.['ok'] === true) {
    const ts = body['ts'];
    return { ok: true, value: { messageIds: typeof ts === 'string' ? [ts] : [] } };
  }
  const error = body?.['error'];
  const detail = typeof error === 'string' ? error : _plain(reply.text);
  const message = status === 200 ? `Slack: ${detail}` : `Slack ${status}: ${detail}`;
  const retryable = status === 429 || status >= 500 || (typeof error === 'string' && _RATE_LIMITED.has(error));
  if (!retryable) return { ok: false, retryable: false, message };
  const retryAfterMs = parseRetryAfter(reply.headers.get('retry-after'));
  return retryAfterMs === undefined ? { ok: false, retryable: true, message } : { ok: false, retryable: true, message, retryAfterMs };
}

function _escape(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}

function _checkText(text: string): void {
  if (typeof text !== 'string' || text.trim() === '') throw new RangeError('Cannot send text: it is empty');
  if (text.length > _MAX_LENGTH) {
    throw new RangeError(`Cannot send text: ${text.length} characters exceed the Slack limit of ${_MAX_LENGTH}`);
  }
}

function _base(apiBase: string): string {
  let url: URL | null = null;
  try {
    url = typeof apiBase === 'string' ? new URL(apiBase) : null;
  } catch {
    url = null;
  }
  if (url === null || (url.protocol !== 'https:' && url.protocol !== 'http:')) {
    throw new TypeError(`Invalid option apiBase: must be an http(s) URL, got ${_show(apiBase)}`);
  }
  return apiBase.replace(/\/+$/, '');
}

function _object(text: string): Record<string, unknown> | null {
  try {
    return _record(JSON.parse(text));
  } catch {
    return null;
  }
}

function _record(value: unknown): Record<string, unknown> | null {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
}

// A proxy's short plain-text answer is worth passing on; an HTML error page is not.
function _plain(text: string): string {
  const trimmed = text.trim();
  return trimmed === '' || trimmed.startsWith('<') ? 'no error description' : trimmed;
}

function _clip(text: string): string {
  if (text.length <= 400) return text;
  const code = text.charCodeAt(399);
  return `${text.slice(0, code >= 0xd800 && code <= 0xdbff ? 399 : 400)}…`;
}

function _describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  // Node's fetch says only "fetch failed"; the reason (ECONNREFUSED, a TLS error) is in the cause.
  return error.cause instanceof Error ? `${error.message}: ${error.cause.message}` : error.message;
}

function _show(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 64 ? `${text.slice(0, 64)}…` : text;
}
