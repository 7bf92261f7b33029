// Slack chat.postMessage.

import type { Adapter, Sent } from './adapter.ts';
import { checkUrl, failure, postJson, type Received, retryAfterMs } from './http-call.ts';
import { asObject } from '../object.ts';
import { plainText } from '../text.ts';
import type { Attempt } from '../retry.ts';
import { type BotOptions, checkFetch, checkHeaderToken, platformAdapter, sent, tellFor } from './_platform.ts';

/** Options of {@link createSlackAdapter}. */
export type SlackOptions = BotOptions;

// `ok:false` codes that say "later", not "never".
const _RATE_LIMITED = new Set(['ratelimited', 'rate_limited']);

/**
 * A Slack adapter over the Web API's `chat.postMessage` (`https://slack.com/api` by default), with
 * a bot token (`xoxb-…`, scope `chat:write`) sent as `Authorization: Bearer <token>`. `&`, `<` and
 * `>` are escaped, so the text shows as written and cannot smuggle in `<!channel>` pings or
 * disguised links.
 */
export function createSlackAdapter(options: SlackOptions): Adapter {
  const { botToken, apiBase = 'https://slack.com/api', fetch = globalThis.fetch } = options;
  checkHeaderToken('botToken', botToken);
  checkFetch(fetch);
  const url = `${checkUrl('apiBase', apiBase)}/chat.postMessage`;
  // Without the charset Slack still answers, but with a `missing_charset` warning.
  const headers = { authorization: `Bearer ${botToken}`, 'content-type': 'application/json; charset=utf-8' };
  const tell = tellFor([botToken], '<token>');
  return platformAdapter({
    channel: 'slack',
    name: 'Slack',
    // Slack posts up to 40 000 characters but advises 4 000 for a readable message; past 40 000 it
    // truncates silently, and escaping `&<>` grows a 4 000-character chunk to at most 20 000.
    maxLength: 4000,
    tell,
    post: (to, text, signal) => postJson(url, { channel: to, text: _escape(text) }, { fetch, headers, signal }),
    answer: (reply) => _outcome(reply, tell),
  });
}

// Success is `ok:true` in the body, never the status alone: Slack answers most failures with 200.
function _outcome(reply: Received, tell: (message: string) => string): Attempt<Sent> {
  const { status } = reply;
  const body = asObject(reply.json);
  if (status >= 200 && status < 300 && body?.['ok'] === true) return sent(body['ts']);
  const error = body?.['error'];
  const detail = typeof error === 'string' ? error : plainText(reply.text);
  const message = tell(status === 200 ? `Slack: ${detail}` : `Slack ${status}: ${detail}`);
  const retryable = status === 429 || status >= 500 || (typeof error === 'string' && _RATE_LIMITED.has(error));
  return retryable ? failure(message, true, retryAfterMs(reply.headers, Date.now())) : failure(message, false);
}

function _escape(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}
