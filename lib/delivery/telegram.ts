import type { Adapter, Sent } from './adapter.ts';
import { parseRetryAfter } from '../retry.ts';
import type { Attempt } from '../retry.ts';

/** Options of {@link createTelegramAdapter}. */
export interface TelegramOptions {
  /** The token from @BotFather. It travels in the URL path, so it is scrubbed from every failure message. */
  botToken: string;
  /** The Bot API server: a self-hosted one, or a local test double; default `https://api.telegram.org`. */
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

const _MAX_LENGTH = 4096;
// A chat id is an integer (negative for groups, -100… for supergroups and channels) with at most
// 52 significant bits, so a JS number holds it exactly; a public username is 4 to 32 letters,
// digits and underscores, starting with a letter.
const _CHAT_ID = /^-?[1-9][0-9]{0,15}$/;
const _USERNAME = /^@[A-Za-z][A-Za-z0-9_]{3,31}$/;

/**
 * A Telegram adapter over the Bot API's `sendMessage`. Text goes as plain text (no `parse_mode`),
 * so a model's Markdown can never be refused as unparsable entities.
 */
export function createTelegramAdapter(options: TelegramOptions): Adapter {
  const { botToken, apiBase = 'https://api.telegram.org', fetch: doFetch = globalThis.fetch } = options;
  // The token is a path segment: only characters a URL leaves as they are, so it can be scrubbed verbatim.
  if (typeof botToken !== 'string' || !/^[A-Za-z0-9:_-]+$/.test(botToken)) {
    throw new TypeError('Invalid option botToken: must be a non-empty string of letters, digits, ":", "_" and "-"');
  }
  if (typeof doFetch !== 'function') throw new TypeError('Invalid option fetch: must be a function');
  const url = `${_base(apiBase)}/bot${botToken}/sendMessage`;
  const redact = (message: string): string => message.replaceAll(botToken, '<token>');

  const post = (chatId: number | string, text: string, signal: AbortSignal | undefined): Promise<_Reply | _Failure> => {
    const init: RequestInit = {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ chat_id: chatId, text }),
      signal: signal ?? null,
    };
    return _exchange(doFetch, url, init, signal);
  };

  const send = async (to: string, text: string, signal?: AbortSignal): Promise<Attempt<Sent>> => {
    _checkText(text);
    const problem = checkRecipient(to);
    if (problem !== null) return { ok: false, retryable: false, message: problem };
    let reply = await post(to.startsWith('@') ? to : Number(to), text, signal);
    // A group upgraded to a supergroup lives on under a new id; the old one answers with where it went.
    const moved = 'status' in reply ? _record(reply.body?.['parameters'])?.['migrate_to_chat_id'] : undefined;
    if (typeof moved === 'number' && Number.isSafeInteger(moved)) reply = await post(moved, text, signal);
    return 'status' in reply ? _outcome(reply) : reply;
  };

  return {
    channel: 'telegram',
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
  if (typeof to === 'string' && _CHAT_ID.test(to) && Number.isSafeInteger(Number(to))) return null;
  if (typeof to === 'string' && _USERNAME.test(to)) return null;
  return `Invalid Telegram recipient: expected a numeric chat id or @channelusername, got ${_show(to)}`;
}

async function _exchange(doFetch: typeof fetch, url: string, init: RequestInit, signal: AbortSignal | undefined): Promise<_Reply | _Failure> {
  try {
    const response = await doFetch(url, init);
    const text = await response.text();
    return { status: response.status, headers: response.headers, text, body: _object(text) };
  } catch (error) {
    if (signal?.aborted === true) return { ok: false, retryable: false, message: 'Telegram request aborted' };
    return { ok: false, retryable: true, message: `Telegram request failed: ${_describe(error)}` };
  }
}

function _outcome(reply: _Reply): Attempt<Sent> {
  const { body } = reply;
  if (reply.status >= 200 && reply.status < 300 && body?.['ok'] === true) {
    const id = _record(body['result'])?.['message_id'];
    return { ok: true, value: { messageIds: typeof id === 'number' || typeof id === 'string' ? [String(id)] : [] } };
  }
  // The Bot API sets the HTTP status to error_code; trust the body only if something in between answered 200.
  const errorCode = body?.['error_code'];
  const status = reply.status === 200 && typeof errorCode === 'number' ? errorCode : reply.status;
  const description = body?.['description'];
  const detail = typeof description === 'string' ? description : _plain(reply.text);
  const message = `Telegram ${status}: ${detail}`;
  if (status !== 429 && status < 500) return { ok: false, retryable: false, message };
  const seconds = _record(body?.['parameters'])?.['retry_after'];
  const retryAfterMs = typeof seconds === 'number' && seconds >= 0 ? seconds * 1000 : parseRetryAfter(reply.headers.get('retry-after'));
  return retryAfterMs === undefined ? { ok: false, retryable: true, message } : { ok: false, retryable: true, message, retryAfterMs };
}

function _checkText(text: string): void {
  if (typeof text !== 'string' || text.trim() === '') throw new RangeError('Cannot send text: it is empty');
  if (text.length > _MAX_LENGTH) {
    throw new RangeError(`Cannot send text: ${text.length} characters exceed the Telegram limit of ${_MAX_LENGTH}`);
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
