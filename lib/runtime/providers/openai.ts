// The openai-completions provider.

import type { Thinking } from '../../model/actions.ts';
import { failure, type Received, retryAfterMs } from '../../delivery/http-call.ts';
import { asObject } from '../../object.ts';
import type { Attempt } from '../../retry.ts';
import type { Provider } from './provider.ts';
import { errorText, httpProvider } from './_http.ts';

/** Where an OpenAI-compatible server lives and how to reach it. */
export interface OpenAiProviderOptions {
  /** The API root, e.g. `https://api.openai.com/v1` or `http://127.0.0.1:11434/v1`. */
  baseUrl: string;
  apiKey?: string;
  /** Extra headers (e.g. OpenRouter's `X-Title`); they override the defaults. */
  headers?: Record<string, string>;
  fetch?: typeof globalThis.fetch;
  /** The clock an HTTP-date `Retry-After` is measured against. */
  now?: () => number;
}

/** A provider for `POST {baseUrl}/chat/completions` (OpenAI, OpenRouter, Ollama, vLLM, llama.cpp, LM Studio). */
export function createOpenAiProvider(options: OpenAiProviderOptions): Provider {
  const { baseUrl, apiKey, headers = {}, fetch = globalThis.fetch, now = Date.now } = options;
  return httpProvider({
    baseUrl,
    path: '/chat/completions',
    apiKey,
    defaults: { accept: 'application/json' },
    auth: (key) => ['authorization', `Bearer ${key}`],
    headers,
    fetch,
    now,
    body(request) {
      const effort = _effort(request.thinking);
      return {
        model: request.model,
        messages: [
          // An empty system message is noise to most servers and an error to a few.
          ...(request.system === '' ? [] : [{ role: 'system', content: request.system }]),
          ...request.history.map((m) => ({ role: m.role, content: m.content })),
          { role: 'user', content: request.prompt },
        ],
        ...(effort === undefined ? {} : { reasoning_effort: effort }),
      };
    },
    reply: _reply,
    failure: _httpFailure,
  });
}

/**
 * `off` sends no field, so servers without reasoning support never see one. `xhigh` is sent as it
 * is: the OpenAI schema lists it (for models after gpt-5.1-codex-max); older models answer 400.
 */
function _effort(thinking: Thinking | undefined): string | undefined {
  return thinking === undefined || thinking === 'off' ? undefined : thinking;
}

function _reply(reply: Received, tell: (message: string) => string): Attempt<string> {
  const choices = asObject(reply.json)?.['choices'];
  const message = asObject(asObject(Array.isArray(choices) ? choices[0] : undefined)?.['message']);
  const content = message?.['content'];
  if (typeof content === 'string') return { ok: true, value: content };
  if (Array.isArray(content)) {
    const parts = content.map((part) => (asObject(part)?.['type'] === 'text' ? asObject(part)?.['text'] : undefined));
    return { ok: true, value: parts.filter((p): p is string => typeof p === 'string').join('') };
  }
  const refusal = message?.['refusal'];
  if (typeof refusal === 'string') return failure(tell(`Refused: ${refusal}`), false);
  const said = errorText(reply.json) ?? (reply.json === undefined ? reply.text : 'no choices[0].message.content');
  return failure(tell(`Malformed response: ${said}`), false);
}

function _httpFailure(reply: Received, tell: (message: string) => string, now: number): Attempt<string> {
  const { status, headers } = reply;
  const error = asObject(asObject(reply.json)?.['error']);
  const code = error?.['code'];
  const type = error?.['type'];
  const label = typeof code === 'string' ? code : type;
  const said = errorText(reply.json) ?? (reply.text.trim() || reply.statusText);
  const message = tell(`HTTP ${status}${typeof label === 'string' ? ` ${label}` : ''}: ${said}`);
  // A 429 for an exhausted quota does not clear by waiting; `x-should-retry: false` is the server saying so.
  const retryable = (status === 429 || status >= 500) && code !== 'insufficient_quota' &&
    type !== 'insufficient_quota' && headers.get('x-should-retry') !== 'false';
  return retryable ? failure(message, true, retryAfterMs(headers, now)) : failure(message, false);
}
