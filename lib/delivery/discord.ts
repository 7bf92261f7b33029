import type { Adapter, Sent } from './adapter.ts';
import { parseRetryAfter } from '../retry.ts';
import type { Attempt } from '../retry.ts';

/** Options of {@link createDiscordAdapter}. */
export interface DiscordOptions {
  /** The bot's token, sent as `Authorization: Bot <token>`. */
  botToken: string;
  /** The versioned REST base; default `https://discord.com/api/v10`. */
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

const _MAX_LENGTH = 2000;
// Snowflakes are unsigned 64-bit integers; every id since Discord's launch has 17 to 20 digits.
const _SNOWFLAKE = /^[1-9][0-9]{16,19}$/;
const _MAX_SNOWFLAKE = 2n ** 64n - 1n;
// Discord asks every bot to name itself this way; without it Cloudflare may refuse the request.
const _USER_AGENT = 'DiscordBot (hooks-ingress, 0.1.0)';

/**
 * A Discord adapter over REST Create Message. Mentions in the text are shown but never ping
 * (`allowed_mentions` is empty), so a reply that quotes `@everyone` cannot alert a whole server.
 */
export function createDiscordAdapter(options: DiscordOptions): Adapter {
  const { botToken, apiBase = 'https://discord.com/api/v10', fetch: doFetch = globalThis.fetch } = options;
  // A header value cannot hold line breaks, and a token with spaces is not a token.
  if (typeof botToken !== 'string' || !/^[\x21-\x7e]+$/.test(botToken)) {
    throw new TypeError('Invalid option botToken: must be a non-empty string of visible ASCII characters');
  }
  if (typeof doFetch !== 'function') throw new TypeError('Invalid option fetch: must be a function');
  const base = _base(apiBase);
  const redact = (message: string): string => message.replaceAll(botToken, '<token>');

  const send = async (to: string, text: string, signal?: AbortSignal): Promise<Attempt<Sent>> => {
    _checkText(text);
    const problem = checkRecipient(to);
    if (problem !== null) return { ok: false, retryable: false, message: problem };
    const init: RequestInit = {
      method: 'POST',
      headers: { authorization: `Bot ${botToken}`, 'content-type': 'application/json', 'user-agent': _USER_AGENT },
      body: JSON.stringify({ content: text, allowed_mentions: { parse: [] } }),
      signal: signal ?? null,
    };
    const reply = await _exchange(doFetch, `${base}/channels/${to}/messages`, init, signal);
    return 'status' in reply ? _outcome(reply) : reply;
  };

  return {
    channel: 'discord',
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
  if (typeof to === 'string' && _SNOWFLAKE.test(to) && BigInt(to) <= _MAX_SNOWFLAKE) return null;
  return `Invalid Discord recipient: expected a numeric channel id (a snowflake of 17 to 20 digits), got ${_show(to)}`;
}

async function _exchange(doFetch: typeof fetch, url: string, init: RequestInit, signal: AbortSignal | undefined): Promise<_Reply | _Failure> {
  try {
    const response = await doFetch(url, init);
    const text = await response.text();
    return { status: response.status, headers: response.headers, text, body: _object(text) };
  } catch (error) {
    if (signal?.aborted === true) return { ok: false, retryable: false, message: 'Discord request aborted' };
    return { ok: false, retryable: true, message: `Discord request failed: ${_describe(error)}` };
  }
}

function _outcome(reply: _Reply): Attempt<Sent> {
  const { status, body } = reply;
  if (status >= 200 && status < 300) {
    const id = body?.['id'];
    return { ok: true, value: { messageIds: typeof id === 'string' ? [id] : [] } };
  }
  const message = `Discord ${status}: ${_detail(reply)}`;
  if (status !== 429 && status < 500) return { ok: false, retryable: false, message };
  // The body's retry_after is a float in seconds; the Retry-After header only whole seconds.
  const seconds = body?.['retry_after'];
  const retryAfterMs =
    typeof seconds === 'number' && seconds >= 0
      ? Math.ceil(seconds * 1000)
      : (parseRetryAfter(reply.headers.get('retry-after')) ?? parseRetryAfter(reply.headers.get('x-ratelimit-reset-after')));
  return retryAfterMs === undefined ? { ok: false, retryable: true, message } : { ok: false, retryable: true, message, retryAfterMs };
}

// `{message, code}`, with per-field reasons nested under `errors` for an invalid form body.
function _detail(reply: _Reply): string {
  const { body } = reply;
  const message = body?.['message'];
  if (typeof message !== 'string') return _plain(reply.text);
  const code = body?.['code'];
  const fields: string[] = [];
  _fieldErrors(body?.['errors'], '', fields);
  const parts = [message, ...(typeof code === 'number' && code !== 0 ? [`(code ${code})`] : []), ...(fields.length > 0 ? [`- ${fields.join('; ')}`] : [])];
  return parts.join(' ');
}

function _fieldErrors(node: unknown, path: string, out: string[]): void {
  const record = _record(node);
  if (record === null || out.length >= 3) return;
  for (const [key, value] of Object.entries(record)) {
    if (key === '_errors' && Array.isArray(value)) {
      for (const error of value) {
        const text = _record(error)?.['message'];
        if (typeof text === 'string' && out.length < 3) out.push(`${path === '' ? 'body' : path}: ${text}`);
      }
    } else {
      _fieldErrors(value, path === '' ? key : `${path}.${key}`, out);
    }
  }
}

function _checkText(text: string): void {
  if (typeof text !== 'string' || text.trim() === '') throw new RangeError('Cannot send text: it is empty');
  if (text.length > _MAX_LENGTH) {
    throw new RangeError(`Cannot send text: ${text.length} characters exceed the Discord limit of ${_MAX_LENGTH}`);
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
