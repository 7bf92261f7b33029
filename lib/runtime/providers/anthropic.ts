// The anthropic-messages provider.

import type { Thinking } from '../../model/actions.ts';
import { failure, type Received, retryAfterMs } from '../../delivery/http-call.ts';
import { asObject } from '../../object.ts';
import type { Attempt } from '../../retry.ts';
import type { Provider } from './provider.ts';
import { errorText, httpProvider } from './_http.ts';

/** Where an Anthropic Messages API lives and how to reach it. */
export interface AnthropicProviderOptions {
  /** The API root without `/v1`, e.g. `https://api.anthropic.com`. */
  baseUrl: string;
  apiKey?: string;
  /** Extra headers (e.g. `anthropic-beta`); they override the defaults. */
  headers?: Record<string, string>;
  fetch?: typeof globalThis.fetch;
  /** The `anthropic-version` header. */
  version?: string;
  /** Room for the visible answer: `max_tokens` is this plus the thinking budget. */
  maxTokens?: number;
  /** The clock an HTTP-date `retry-after` is measured against. */
  now?: () => number;
}

/**
 * Extended-thinking budgets per level. The API wants at least 1024 and less than `max_tokens`;
 * `xhigh` stays at 24576 so that budget plus the default answer room fits every current model's
 * 32000-token output limit.
 */
export const THINKING_BUDGETS: Readonly<Record<Exclude<Thinking, 'off'>, number>> = {
  minimal: 1024,
  low: 2048,
  medium: 8192,
  high: 16384,
  xhigh: 24576,
};

/** A provider for `POST {baseUrl}/v1/messages` (Anthropic's Messages API). */
export function createAnthropicProvider(options: AnthropicProviderOptions): Provider {
  const {
    baseUrl,
    apiKey,
    headers = {},
    fetch = globalThis.fetch,
    version = '2023-06-01',
    maxTokens = 4096,
    now = Date.now,
  } = options;
  if (!Number.isInteger(maxTokens) || maxTokens < 1) {
    throw new RangeError(`Cannot use maxTokens: ${maxTokens} is not a positive integer`);
  }
  return httpProvider({
    baseUrl,
    path: '/v1/messages',
    apiKey,
    defaults: { accept: 'application/json', 'anthropic-version': version },
    auth: (key) => ['x-api-key', key],
    headers,
    fetch,
    now,
    body(request) {
      const budget = request.thinking === undefined || request.thinking === 'off'
        ? undefined
        : THINKING_BUDGETS[request.thinking];
      return {
        model: request.model,
        max_tokens: maxTokens + (budget ?? 0),
        // The API rejects an empty system text, and omitting it means the same.
        ...(request.system === '' ? {} : { system: request.system }),
        messages: [...request.history.map((m) => ({ role: m.role, content: m.content })), {
          role: 'user',
          content: request.prompt,
        }],
        ...(budget === undefined ? {} : { thinking: { type: 'enabled', budget_tokens: budget } }),
      };
    },
    reply: _reply,
    failure: _httpFailure,
  });
}

// Thinking and redacted-thinking blocks come first; the answer is the text blocks, in order.
function _reply(reply: Received, tell: (message: string) => string): Attempt<string> {
  const json = asObject(reply.json);
  const content = json?.['content'];
  const texts = Array.isArray(content)
    ? content.filter((b) => asObject(b)?.['type'] === 'text').map((b) => asObject(b)?.['text'])
    : [];
  if (texts.length > 0 && texts.every((t) => typeof t === 'string')) return { ok: true, value: texts.join('') };
  const stop = json?.['stop_reason'];
  const said = typeof stop === 'string'
    ? `no text block (stop_reason ${stop})`
    : (errorText(reply.json) ?? (reply.json === undefined ? reply.text : 'no text block'));
  return failure(tell(`Malformed response: ${said}`), false);
}

function _httpFailure(reply: Received, tell: (message: string) => string, now: number): Attempt<string> {
  const { status, headers } = reply;
  const type = asObject(asObject(reply.json)?.['error'])?.['type'];
  const said = errorText(reply.json) ?? (reply.text.trim() || reply.statusText);
  const message = tell(`HTTP ${status}${typeof type === 'string' ? ` ${type}` : ''}: ${said}`);
  const wait = retryAfterMs(headers, now);
  // A 429 from the monthly spend cap comes without `retry-after` and does not clear by waiting;
  // 529 is `overloaded_error`, covered by >= 500.
  const retryable = (status >= 500 || (status === 429 && wait !== undefined)) &&
    headers.get('x-should-retry') !== 'false';
  return retryable ? failure(message, true, wait) : failure(message, false);
}
