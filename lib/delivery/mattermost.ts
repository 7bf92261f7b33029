// Mattermost REST v4 posts.

import type { Adapter, Sent } from './adapter.ts';
import { checkUrl, failure, postJson, type Received, retryAfterMs } from './http-call.ts';
import { asObject } from '../object.ts';
import { plainText } from '../text.ts';
import type { Attempt } from '../retry.ts';
import { checkFetch, checkHeaderToken, platformAdapter, sent, tellFor } from './_platform.ts';

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

/** A Mattermost adapter over REST v4 Create a post. A recipient is a channel id (a direct message is a channel too). */
export function createMattermostAdapter(options: MattermostOptions): Adapter {
  const { serverUrl, token, maxLength = 16383, fetch = globalThis.fetch } = options;
  checkHeaderToken('token', token);
  if (!Number.isInteger(maxLength) || maxLength < 2) {
    throw new RangeError(`Invalid option maxLength: must be an integer of at least 2, got ${String(maxLength)}`);
  }
  checkFetch(fetch);
  const url = `${checkUrl('serverUrl', serverUrl)}/api/v4/posts`;
  const headers = { authorization: `Bearer ${token}` };
  const tell = tellFor([token], '<token>');
  return platformAdapter({
    channel: 'mattermost',
    name: 'Mattermost',
    maxLength,
    tell,
    post: (to, text, signal) => postJson(url, { channel_id: to, message: text }, { fetch, headers, signal }),
    answer: (reply) => _outcome(reply, tell),
  });
}

function _outcome(reply: Received, tell: (message: string) => string): Attempt<Sent> {
  const { status } = reply;
  const body = asObject(reply.json);
  if (status >= 200 && status < 300) return sent(body?.['id']);
  // An AppError: `{id, message, detailed_error, request_id, status_code}`. The rate limiter answers plain text.
  const text = body?.['message'];
  const id = body?.['id'];
  const detail = typeof text === 'string'
    ? (typeof id === 'string' && id !== '' ? `${text} (${id})` : text)
    : plainText(reply.text);
  const message = tell(`Mattermost ${status}: ${detail}`);
  if (status !== 429 && status < 500) return failure(message, false);
  return failure(message, true, retryAfterMs(reply.headers, Date.now()));
}
