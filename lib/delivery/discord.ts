// Discord REST Create Message.

import type { Adapter, Sent } from './adapter.ts';
import { checkUrl, failure, postJson, type Received, retryAfterMs } from './http-call.ts';
import { asObject } from '../object.ts';
import { plainText } from '../text.ts';
import { type Attempt, parseRetryAfter } from '../retry.ts';
import {
  type BotOptions,
  checkFetch,
  checkHeaderToken,
  platformAdapter,
  retryableStatus,
  sent,
  tellFor,
} from './_platform.ts';

/** Options of {@link createDiscordAdapter}. */
export type DiscordOptions = BotOptions;

// Discord asks every bot to name itself this way; without it Cloudflare may refuse the request.
const _USER_AGENT = 'DiscordBot (hooks-ingress, 0.1.0)';

/**
 * A Discord adapter over REST Create Message: the bot's token goes as `Authorization: Bot <token>`
 * to the versioned REST base (`https://discord.com/api/v10` by default). Mentions in the text are
 * shown but never ping (`allowed_mentions` is empty), so a reply that quotes `@everyone` cannot
 * alert a whole server.
 */
export function createDiscordAdapter(options: DiscordOptions): Adapter {
  const { botToken, apiBase = 'https://discord.com/api/v10', fetch = globalThis.fetch } = options;
  checkHeaderToken('botToken', botToken);
  checkFetch(fetch);
  const base = checkUrl('apiBase', apiBase);
  const headers = { authorization: `Bot ${botToken}`, 'user-agent': _USER_AGENT };
  const tell = tellFor([botToken], '<token>');
  return platformAdapter({
    channel: 'discord',
    name: 'Discord',
    maxLength: 2000,
    tell,
    post: (to, text, signal) =>
      postJson(`${base}/channels/${to}/messages`, { content: text, allowed_mentions: { parse: [] } }, {
        fetch,
        headers,
        signal,
      }),
    answer: (reply) => _outcome(reply, tell),
  });
}

function _outcome(reply: Received, tell: (message: string) => string): Attempt<Sent> {
  const { status } = reply;
  const body = asObject(reply.json);
  if (status >= 200 && status < 300) return sent(body?.['id']);
  const message = tell(`Discord ${status}: ${_detail(body, reply.text)}`);
  if (!retryableStatus(status)) return failure(message, false);
  // The body's retry_after is a float in seconds; the Retry-After header only whole seconds.
  const wait = retryAfterMs(reply.headers, Date.now(), body?.['retry_after']) ??
    parseRetryAfter(reply.headers.get('x-ratelimit-reset-after'));
  return failure(message, true, wait);
}

// `{message, code}`, with per-field reasons nested under `errors` for an invalid form body.
function _detail(body: Record<string, unknown> | null, text: string): string {
  const message = body?.['message'];
  if (typeof message !== 'string') return plainText(text);
  const code = body?.['code'];
  const fields: string[] = [];
  _fieldErrors(body?.['errors'], '', fields);
  const parts = [
    message,
    ...(typeof code === 'number' && code !== 0 ? [`(code ${code})`] : []),
    ...(fields.length > 0 ? [`- ${fields.join('; ')}`] : []),
  ];
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
