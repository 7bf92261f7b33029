import type { Adapter, Sent } from './adapter.ts';
import { checkUrl, failure, invalidOption, postJson, retryAfterMs, type Received } from '../http-call.ts';
import { asObject } from '../object.ts';
import { plainText } from '../text.ts';
import type { Attempt } from '../retry.ts';
import { RECIPIENT_RULES } from '../policy/recipients.ts';
import { checkText, teller, unanswered } from './_platform.ts';

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

// Ids are 26 lowercase letters and digits; a direct message is a channel with such an id too.
const checkRecipient = RECIPIENT_RULES.mattermost;

/** A Mattermost adapter over REST v4 Create a post. */
export function createMattermostAdapter(options: MattermostOptions): Adapter {
  const { serverUrl, token, maxLength = 16383, fetch = globalThis.fetch } = options;
  // A header value cannot hold line breaks, and a token with spaces is not a token.
  if (typeof token !== 'string' || !/^[\x21-\x7e]+$/.test(token)) {
    throw invalidOption('token', 'must be a non-empty string of visible ASCII characters');
  }
  if (!Number.isInteger(maxLength) || maxLength < 2) {
    throw new RangeError(`Invalid option maxLength: must be an integer of at least 2, got ${String(maxLength)}`);
  }
  if (typeof fetch !== 'function') throw invalidOption('fetch', 'must be a function');
  const url = `${checkUrl('serverUrl', serverUrl)}/api/v4/posts`;
  const headers = { authorization: `Bearer ${token}` };
  // Scrubbed before clipped, so a cut can never leave part of a token behind.
  const tell = teller([token], '<token>');

  const send = async (to: string, text: string, signal?: AbortSignal): Promise<Attempt<Sent>> => {
    checkText('Mattermost', text, maxLength);
    const problem = checkRecipient(to);
    if (problem !== null) return failure(tell(problem), false);
    const reply = await postJson(url, { channel_id: to, message: text }, { fetch, headers, signal });
    if (!reply.ok) return unanswered('Mattermost', reply, 'Mattermost request failed', tell);
    return _outcome(reply, tell);
  };

  return { channel: 'mattermost', maxLength, checkRecipient, send };
}


function _outcome(reply: Received, tell: (message: string) => string): Attempt<Sent> {
  const { status } = reply;
  const body = asObject(reply.json);
  if (status >= 200 && status < 300) {
    const id = body?.['id'];
    return { ok: true, value: { messageIds: typeof id === 'string' ? [id] : [] } };
  }
  // An AppError: `{id, message, detailed_error, request_id, status_code}`. The rate limiter answers plain text.
  const text = body?.['message'];
  const id = body?.['id'];
  const detail = typeof text === 'string' ? (typeof id === 'string' && id !== '' ? `${text} (${id})` : text) : plainText(reply.text);
  const message = tell(`Mattermost ${status}: ${detail}`);
  if (status !== 429 && status < 500) return failure(message, false);
  return failure(message, true, retryAfterMs(reply.headers, Date.now()));
}
