// Telegram Bot API sendMessage.

import type { Adapter, Sent } from './adapter.ts';
import { checkUrl, failure, invalidOption, postJson, type Received, retryAfterMs } from './http-call.ts';
import { asObject } from '../object.ts';
import { plainText } from '../text.ts';
import type { Attempt } from '../retry.ts';
import { type BotOptions, checkFetch, platformAdapter, retryableStatus, tellFor } from './_platform.ts';

/** Options of {@link createTelegramAdapter}. */
export type TelegramOptions = BotOptions;

/**
 * A Telegram adapter over the Bot API's `sendMessage`, on `https://api.telegram.org` or the
 * `apiBase` of a self-hosted Bot API server. The token from @BotFather travels in the URL path, so
 * it is scrubbed from every failure message. Text goes as plain text (no `parse_mode`), so a
 * model's Markdown can never be refused as unparsable entities.
 */
export function createTelegramAdapter(options: TelegramOptions): Adapter {
  const { botToken, apiBase = 'https://api.telegram.org', fetch = globalThis.fetch } = options;
  // The token is a path segment: only characters a URL leaves as they are, so it can be scrubbed verbatim.
  if (typeof botToken !== 'string' || !/^[A-Za-z0-9:_-]+$/.test(botToken)) {
    throw invalidOption('botToken', 'must be a non-empty string of letters, digits, ":", "_" and "-"');
  }
  checkFetch(fetch);
  const url = `${checkUrl('apiBase', apiBase)}/bot${botToken}/sendMessage`;
  const call = (chatId: number | string, text: string, signal: AbortSignal | undefined) =>
    postJson(url, { chat_id: chatId, text }, { fetch, signal });
  const tell = tellFor([botToken], '<token>');
  return platformAdapter({
    channel: 'telegram',
    name: 'Telegram',
    maxLength: 4096,
    tell,
    async post(to, text, signal) {
      const reply = await call(to.startsWith('@') ? to : Number(to), text, signal);
      // A group upgraded to a supergroup lives on under a new id; the old one answers with where it went.
      const moved = reply.ok ? asObject(asObject(reply.json)?.['parameters'])?.['migrate_to_chat_id'] : undefined;
      return typeof moved === 'number' && Number.isSafeInteger(moved) ? call(moved, text, signal) : reply;
    },
    answer: (reply) => _outcome(reply, tell),
  });
}

function _outcome(reply: Received, tell: (message: string) => string): Attempt<Sent> {
  const body = asObject(reply.json);
  if (reply.status >= 200 && reply.status < 300 && body?.['ok'] === true) {
    const id = asObject(body['result'])?.['message_id'];
    return { ok: true, value: { messageIds: typeof id === 'number' || typeof id === 'string' ? [String(id)] : [] } };
  }
  // The Bot API sets the HTTP status to error_code; trust the body only if something in between answered 200.
  const errorCode = body?.['error_code'];
  const status = reply.status === 200 && typeof errorCode === 'number' ? errorCode : reply.status;
  const description = body?.['description'];
  const message = tell(`Telegram ${status}: ${typeof description === 'string' ? description : plainText(reply.text)}`);
  if (!retryableStatus(status)) return failure(message, false);
  return failure(
    message,
    true,
    retryAfterMs(reply.headers, Date.now(), asObject(body?.['parameters'])?.['retry_after']),
  );
}
