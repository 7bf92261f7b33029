import type { Adapter, Sent } from './adapter.ts';
import { parseRetryAfter } from '../retry.ts';
import type { Attempt } from '../retry.ts';

/** Options of {@link createMattermostAdapter}. */
export interface MattermostOptions {
  /** The site URL, e.g. `https://chat.example.com`; the adapter adds `/api/v4/…`. */
  serverUrl: string;
  /** A bot or personal access token, sent as `Authorization: Bearer <token>`. */
  token: string;
  /** The server's `MaxPostSize`; default 16383, the limit of current servers (older schemas allow 4000). */
  maxLength?: number | undefined;
  fetch?: typeof fetch | undefined;
}

type _Failure = Extract<Attempt<Sent>, { ok: false }>;

interface _Reply {
  status: number;
  headers: Headers;
  text: string;
  body: Record<string, unknown> | null;
}

// Ids are 26 lowercase letters and digits; a direct message is a channel with such an id too.
const _CHANNEL_ID = /^[a-z0-9]{26}$/;

/** A Mattermost adapter over REST v4 Create a post. */
export function createMattermostAdapter(options: MattermostOptions): Adapter {
  const { serverUrl, token, maxLength = 16383, fetch: doFetch = globalThis.fetch } = options;
  // A header value cannot hold line breaks, and a token with spaces is not a token.
  if (typeof token !== 'string' || !/^[\x21-\x7e]+$/.test(token)) {
    throw new TypeError('Invalid option token: must be a non-empty string of visible ASCII characters');
  }
  if (!Number.isInteger(maxLength) || maxLength < 2) {
    throw new RangeError(`Invalid option maxLength: must be an integer of at least 2, got ${String(maxLength)}`);
  }
  if (typeof doFetch !== 'function') throw new TypeError('Invalid option fetch: must be a function');
  const url = `${_base(serverUrl)}/api/v4/posts`;
  const redact = (message: string): string => message.replaceAll(token, '<token>');

  const send = async (to: string, text: string, signal?: AbortSignal): Promise<Attempt<Sent>> => {
    _checkText(text, maxLength);
    const problem = checkRecipient(to);
    if (problem !== null) return { ok: false, retryable: false, message: problem };
    const init: RequestInit = {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ channel_id: to, message: text }),
      signal: signal ?? null,
    };
    const reply = await _exchange(doFetch, url, init, signal);
    return 'status' in reply ? _outcome(reply) : reply;
  };

  return {
    channel: 'mattermost',
    maxLength,
    checkRecipient,
    send: async (to, text, signal) => {
      const attempt = await send(to, text, signal);
      // Scrubbed before clipped, so a cut can never leave part of a token behind.
      return attempt.ok ? attempt : { ...attempt, message: _clip(redact(attempt.message)) };
    },
  };
}

function checkRecipient(to: string): string | null {
  if (typeof to === 'string' && _CHANNEL_ID.test(to)) return null;
  return `Invalid Mattermost recipient: expected a channel id of 26 lowercase letters and digits, got ${_show(to)}`;
}

async function _exchange(doFetch: typeof fetch, url: string, init: RequestInit, signal: AbortSignal | undefined): Promise<_Reply | _Failure> {
  try {
    const response = await doFetch(url, init);
    const text = await response.text();
    return { status: response.status, headers: response.headers, text, body: _object(text) };
  } catch (error) {
    if (signal?.aborted === true) return { ok: false, retryable: false, message: 'Mattermost request aborted' };
    return { ok: false, retryable: true, message: `Mattermost request failed: ${_describe(error)}` };
  }
}

function _outcome(reply: _Reply): Attempt<Sent> {
  const { status, body } = reply;
  if (status >= 200 && status < 300) {
    const id = body?.['id'];
    return { ok: true, value: { messageIds: typeof id === 'string' ? [id] : [] } };
  }
  // An AppError: `{id, message, detailed_error, request_id, status_code}`. The rate limiter answers plain text.
  const text = body?.['message'];
  const id = body?.['id'];
  const detail = typeof text === 'string' ? (typeof id === 'string' && id !== '' ? `${text} (${id})` : text) : _plain(reply.text);
  const message = `Mattermost ${status}: ${detail}`;
  if (status !== 429 && status < 500) return { ok: false, retryable: false, message };
  const retryAfterMs = parseRetryAfter(reply.headers.get('retry-after'));
  return retryAfterMs === undefined ? { ok: false, retryable: true, message } : { ok: false, retryable: true, message, retryAfterMs };
}

function _checkText(text: string, maxLength: number): void {
  if (typeof text !== 'string' || text.trim() === '') throw new RangeError('Cannot send text: it is empty');
  if (text.length > maxLength) {
    throw new RangeError(`Cannot send text: ${text.length} characters exceed the Mattermost limit of ${maxLength}`);
  }
}

function _base(serverUrl: string): string {
  let url: URL | null = null;
  try {
    url = typeof serverUrl === 'string' ? new URL(serverUrl) : null;
  } catch {
    url = null;
  }
  if (url === null || (url.protocol !== 'https:' && url.protocol !== 'http:')) {
    throw new TypeError(`Invalid option serverUrl: must be an http(s) URL, got ${_show(serverUrl)}`);
  }
  return serverUrl.replace(/\/+$/, '');
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

// A short plain-text answer (the rate limiter's "limit exceeded") is worth passing on; an HTML error page is not.
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
