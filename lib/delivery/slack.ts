import type { Adapter, Sent } from './adapter.ts';
import { checkUrl, failure, invalidOption, postJson, retryAfterMs, type Received } from '../http-call.ts';
import { asObject } from '../object.ts';
import { plainText } from '../text.ts';
import type { Attempt } from '../retry.ts';
import { RECIPIENT_RULES } from '../policy/recipients.ts';
import { checkText, teller, unanswered } from './_platform.ts';

/** Options of {@link createSlackAdapter}. */
export interface SlackOptions {
  /** The bot token (`xoxb-…`) with the `chat:write` scope, sent as `Authorization: Bearer <token>`. */
  botToken: string;
  /** The Web API base; default `https://slack.com/api`. */
  apiBase?: string | undefined;
  fetch?: typeof fetch | undefined;
}

// Slack posts up to 40 000 characters but advises 4 000 for a readable message; past 40 000 it
// truncates silently, and escaping `&<>` grows a 4 000-character chunk to at most 20 000.
const _MAX_LENGTH = 4000;
const checkRecipient = RECIPIENT_RULES.slack;
// `ok:false` codes that say "later", not "never".
const _RATE_LIMITED = new Set(['ratelimited', 'rate_limited']);

/**
 * A Slack adapter over the Web API's `chat.postMessage`. `&`, `<` and `>` are escaped, so the text
 * shows as written and cannot smuggle in `<!channel>` pings or disguised links.
 */
export function createSlackAdapter(options: SlackOptions): Adapter {
  const { botToken, apiBase = 'https://slack.com/api', fetch = globalThis.fetch } = options;
  // A header value cannot hold line breaks, and a token with spaces is not a token.
  if (typeof botToken !== 'string' || !/^[\x21-\x7e]+$/.test(botToken)) {
    throw invalidOption('botToken', 'must be a non-empty string of visible ASCII characters');
  }
  if (typeof fetch !== 'function') throw invalidOption('fetch', 'must be a function');
  const url = `${checkUrl('apiBase', apiBase)}/chat.postMessage`;
  // Without the charset Slack still answers, but with a `missing_charset` warning.
  const headers = { authorization: `Bearer ${botToken}`, 'content-type': 'application/json; charset=utf-8' };
  // Scrubbed before clipped, so a cut can never leave part of a token behind.
  const tell = teller([botToken], '<token>');

  const send = async (to: string, text: string, signal?: AbortSignal): Promise<Attempt<Sent>> => {
    checkText('Slack', text, _MAX_LENGTH);
    const problem = checkRecipient(to);
    if (problem !== null) return failure(tell(problem), false);
    const reply = await postJson(url, { channel: to, text: _escape(text) }, { fetch, headers, signal });
    if (!reply.ok) return unanswered('Slack', reply, 'Slack request failed', tell);
    return _outcome(reply, tell);
  };

  return { channel: 'slack', maxLength: _MAX_LENGTH, checkRecipient, send };
}


// Success is `ok:true` in the body, never the status alone: Slack answers most failures with 200.
function _outcome(reply: Received, tell: (message: string) => string): Attempt<Sent> {
  const { status } = reply;
  const body = asObject(reply.json);
  if (status >= 200 && status < 300 && body?.['ok'] === true) {
    const ts = body['ts'];
    return { ok: true, value: { messageIds: typeof ts === 'string' ? [ts] : [] } };
  }
  const error = body?.['error'];
  const detail = typeof error === 'string' ? error : plainText(reply.text);
  const message = tell(status === 200 ? `Slack: ${detail}` : `Slack ${status}: ${detail}`);
  const retryable = status === 429 || status >= 500 || (typeof error === 'string' && _RATE_LIMITED.has(error));
  return retryable ? failure(message, true, retryAfterMs(reply.headers, Date.now())) : failure(message, false);
}

function _escape(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}
