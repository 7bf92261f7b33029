// The skeleton the HTTP providers share: build the headers once, post the turn, read the answer.
// A provider's own file says only what differs: the path, its headers, the body shape, and what
// an answer and a failure status mean.

import {
  failure,
  httpBase,
  MESSAGE_MAX,
  postJson,
  type Received,
  SCRUB_PREFIX,
  teller,
  unanswered,
} from '../../delivery/http-call.ts';
import { asObject } from '../../object.ts';
import type { Attempt } from '../../retry.ts';
import type { Provider, TurnRequest } from './provider.ts';

/** What an HTTP model API is, beside the skeleton. */
export interface HttpApi {
  /** The API root the caller configured. */
  baseUrl: string;
  /** The path added to it (`/chat/completions`). */
  path: string;
  apiKey: string | undefined;
  /** The provider's own headers, under the caller's extra ones. */
  defaults: Record<string, string>;
  /** The header the API key goes in, and its value. */
  auth(apiKey: string): [name: string, value: string];
  /** The caller's extra headers; they override the defaults. */
  headers: Record<string, string>;
  fetch: typeof globalThis.fetch;
  now: () => number;
  body(request: TurnRequest): unknown;
  /** What a 2xx answer says. */
  reply(reply: Received, tell: (message: string) => string): Attempt<string>;
  /** What any other status means. */
  failure(reply: Received, tell: (message: string) => string, now: number): Attempt<string>;
}

/** The provider of an HTTP model API. */
export function httpProvider(api: HttpApi): Provider {
  const { apiKey, headers, fetch, now } = api;
  const base = httpBase(api.baseUrl);
  if (!base.ok) throw new TypeError(`Cannot use provider base URL: ${base.reason}`);
  const url = `${base.base}${api.path}`;
  // A message on one line, without any secret (a URL's user:password, the API key however short, and
  // header values long enough to be one: short ones such as `1` or `true` are not, and masking them
  // would shred messages), and bounded.
  const tell = teller(
    [apiKey, ...Object.values(headers).filter((s) => s.length >= SCRUB_PREFIX)],
    MESSAGE_MAX.provider,
  );
  return {
    async complete(request: TurnRequest): Promise<Attempt<string>> {
      if (request.signal.aborted) return failure('aborted', false);
      const sent = new Headers(api.defaults);
      if (apiKey !== undefined && apiKey !== '') sent.set(...api.auth(apiKey));
      for (const [name, value] of Object.entries(headers)) sent.set(name, value);
      const reply = await postJson(url, api.body(request), {
        fetch,
        headers: Object.fromEntries(sent),
        signal: request.signal,
      });
      if (!reply.ok) return unanswered(reply, _WORDS, tell);
      return reply.status >= 200 && reply.status < 300 ? api.reply(reply, tell) : api.failure(reply, tell, now());
    },
  };
}

// An abort is not retried, nor an answer past the cap (it would come again); a connection failure is.
const _WORDS = { refused: 'Answer refused', aborted: 'aborted', unreachable: 'Connection failed' };

/** The error text of a JSON body: `{error: {message}}`, `{error: "..."}` or `{message}` (what compatible servers and proxies say). */
export function errorText(json: unknown): string | undefined {
  const error = asObject(json)?.['error'];
  const candidates = [asObject(error)?.['message'], error, asObject(json)?.['message']];
  return candidates.find((said): said is string => typeof said === 'string' && said.trim() !== '');
}
