import type { Adapter, Sent } from './adapter.ts';
import { checkUrl, failure, invalidOption, postJson, retryAfterMs, type Received } from '../http-call.ts';
import { asObject } from '../object.ts';
import { plainText } from '../text.ts';
import type { Attempt } from '../retry.ts';
import { RECIPIENT_RULES } from '../policy/recipients.ts';
import { checkText, retryableStatus, teller, unanswered } from './_platform.ts';

/** Options of {@link createTelegramAdapter}. */
export interface TelegramOptions {
  /** The token from @BotFather. It travels in the URL path, so it is scrubbed from every failure message. */
  botToken: string;
  /** The Bot API server: a self-hosted one, or a local test double; default `https://api.telegram.org`. */
  apiBase?: string | undefined;
  fetch?: typeof fetch | undefined;
}

const _MAX_LENGTH = 4096;
const checkRecipient = RECIPIENT_RULES.telegram;

/**
 * A Telegram adapter over the Bot API's `sendMessage`. Text goes as plain text (no `parse_mode`),
 * so a model's Markdown can never be refused as unparsable entities.
 */
export function createTelegramAdapter(options: TelegramOptions): Adapter {
  const { botToken, apiBase = 'https://api.telegram.org', fetch = globalThis.fetch } = options;
  // The token is a path segment: only characters a URL leaves as they are, so it can be scrubbed verbatim.
  if (typeof botToken !== 'string' || !/^[A-Za-z0-9:_-]+$/.test(botToken)) {
    throw invalidOption('botToken', 'must be a non-empty string of letters, digits, ":", "_" and "-"');
  }
  if (typeof fetch !== 'function') throw invalidOption('fetch', 'must be a function');
  const url = `${checkUrl('apiBase', apiBase)}/bot${botToken}/sendMessage`;
  const post = (chatId: number | string, text: string, signal: AbortSignal | undefined) => postJson(url, { chat_id: chatId, text }, { fetch, signal });
  // Scrubbed before clipped, so a cut can never leave part of a token behind.
  const tell = teller([botToken], '<token>');

  const send = async (to: string, text: string, signal?: AbortSignal): Promise<Attempt<Sent>> => {
    checkText('Telegram', text, _MAX_LENGTH);
    const problem = checkRecipient(to);
    if (problem !== null) return failure(tell(problem), false);
    let reply = await post(to.startsWith('@') ? to : Number(to), text, signal);
    // A group upgraded to a supergroup lives on under a new id; the old one answers with where it went.
    const moved = reply.ok ? asObject(asObject(reply.json)?.['parameters'])?.['migrate_to_chat_id'] : undefined;
    if (typeof moved === 'number' && Number.isSafeInteger(moved)) reply = await post(moved, text, signal);
    if (!reply.ok) return unanswered('Telegram', reply, 'Telegram request failed', tell);
    return _outcome(reply, tell);
  };

  return { channel: 'telegram', maxLength: _MAX_LENGTH, checkRecipient, send };
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
  return failure(message, true, retryAfterMs(reply.headers, Date.now(), asObject(body?.['parameters'])?.['retry_after']));
}
