import type { Adapter, Sent } from './adapter.ts';
import { checkUrl, failure, invalidOption, postJson, retryAfterMs, type Received } from '../http-call.ts';
import { asObject } from '../object.ts';
import { plainText } from '../text.ts';
import { parseRetryAfter, type Attempt } from '../retry.ts';
import { RECIPIENT_RULES } from '../policy/recipients.ts';
import { checkText, retryableStatus, teller, unanswered } from './_platform.ts';

/** Options of {@link createDiscordAdapter}. */
export interface DiscordOptions {
  /** The bot's token, sent as `Authorization: Bot <token>`. */
  botToken: string;
  /** The versioned REST base; default `https://discord.com/api/v10`. */
  apiBase?: string | undefined;
  fetch?: typeof fetch | undefined;
}

const _MAX_LENGTH = 2000;
const checkRecipient = RECIPIENT_RULES.discord;
// Discord asks every bot to name itself this way; without it Cloudflare may refuse the request.
const _USER_AGENT = 'DiscordBot (hooks-ingress, 0.1.0)';

/**
 * A Discord adapter over REST Create Message. Mentions in the text are shown but never ping
 * (`allowed_mentions` is empty), so a reply that quotes `@everyone` cannot alert a whole server.
 */
export function createDiscordAdapter(options: DiscordOptions): Adapter {
  const { botToken, apiBase = 'https://discord.com/api/v10', fetch = globalThis.fetch } = options;
  // A header value cannot hold line breaks, and a token with spaces is not a token.
  if (typeof botToken !== 'string' || !/^[\x21-\x7e]+$/.test(botToken)) {
    throw invalidOption('botToken', 'must be a non-empty string of visible ASCII characters');
  }
  if (typeof fetch !== 'function') throw invalidOption('fetch', 'must be a function');
  const base = checkUrl('apiBase', apiBase);
  const headers = { authorization: `Bot ${botToken}`, 'user-agent': _USER_AGENT };
  // Scrubbed before clipped, so a cut can never leave part of a token behind.
  const tell = teller([botToken], '<token>');

  const send = async (to: string, text: string, signal?: AbortSignal): Promise<Attempt<Sent>> => {
    checkText('Discord', text, _MAX_LENGTH);
    const problem = checkRecipient(to);
    if (problem !== null) return failure(tell(problem), false);
    const payload = { content: text, allowed_mentions: { parse: [] } };
    const reply = await postJson(`${base}/channels/${to}/messages`, payload, { fetch, headers, signal });
    if (!reply.ok) return unanswered('Discord', reply, 'Discord request failed', tell);
    return _outcome(reply, tell);
  };

  return { channel: 'discord', maxLength: _MAX_LENGTH, checkRecipient, send };
}


function _outcome(reply: Received, tell: (message: string) => string): Attempt<Sent> {
  const { status } = reply;
  const body = asObject(reply.json);
  if (status >= 200 && status < 300) {
    const id = body?.['id'];
    return { ok: true, value: { messageIds: typeof id === 'string' ? [id] : [] } };
  }
  const message = tell(`Discord ${status}: ${_detail(body, reply.text)}`);
  if (!retryableStatus(status)) return failure(message, false);
  // The body's retry_after is a float in seconds; the Retry-After header only whole seconds.
  const wait = retryAfterMs(reply.headers, Date.now(), body?.['retry_after']) ?? parseRetryAfter(reply.headers.get('x-ratelimit-reset-after'));
  return failure(message, true, wait);
}

// `{message, code}`, with per-field reasons nested under `errors` for an invalid form body.
function _detail(body: Record<string, unknown> | null, text: string): string {
  const message = body?.['message'];
  if (typeof message !== 'string') return plainText(text);
  const code = body?.['code'];
  const fields: string[] = [];
  _fieldErrors(body?.['errors'], '', fields);
  const parts = [message, ...(typeof code === 'number' && code !== 0 ? [`(code ${code})`] : []), ...(fields.length > 0 ? [`- ${fields.join('; ')}`] : [])];
  return parts.join(' ');
}

function _fieldErrors(node: unknown, path: string, out: string[]): void {
  const fields = asObject(node);
  if (fields === null || out.length >= 3) return;
  for (const [key, value] of Object.entries(fields)) {
    if (key === '_errors' && Array.isArray(value)) {
      for (const error of value) {
        const text = asObject(error)?.['message'];
        if (typeof text === 'string' && out.length < 3) out.push(`${path === '' ? 'body' : path}: ${text}`);
      }
    } else {
      _fieldErrors(value, path === '' ? key : `${path}.${key}`, out);
    }
  }
}
