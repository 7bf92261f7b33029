import type { Thinking } from '../../actions.ts';
import { parseRetryAfter } from '../../retry.ts';
import type { Attempt } from '../../retry.ts';
import type { Provider, TurnRequest } from '../provider.ts';

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

const _MESSAGE_MAX = 300;

/** A provider for `POST {baseUrl}/chat/completions` (OpenAI, OpenRouter, Ollama, vLLM, llama.cpp, LM Studio). */
export function createOpenAiProvider(options: OpenAiProviderOptions): Provider {
  const { apiKey, headers = {}, fetch = globalThis.fetch, now = Date.now } = options;
  const url = `${_base(options.baseUrl)}/chat/completions`;
  const secrets = _secrets(apiKey, headers);
  return {
    async complete(request: TurnRequest): Promise<Attempt<string>> {
      if (request.signal.aborted) return _aborted();
      const effort = _effort(request.thinking);
      const body = {
        model: request.model,
        messages: [
          // An empty system message is noise to most servers and an error to a few.
          ...(request.system === '' ? [] : [{ role: 'system', content: request.system }]),
          ...request.history.map((m) => ({ role: m.role, content: m.content })),
          { role: 'user', content: request.prompt },
        ],
        ...(effort === undefined ? {} : { reasoning_effort: effort }),
      };
      const sent = new Headers({ 'content-type': 'application/json', accept: 'application/json' });
      if (apiKey !== undefined && apiKey !== '') sent.set('authorization', `Bearer ${apiKey}`);
      for (const [name, value] of Object.entries(headers)) sent.set(name, value);
      let response: Response;
      let text: string;
      try {
        response = await fetch(url, { method: 'POST', headers: sent, body: JSON.stringify(body), signal: request.signal });
        text = await response.text();
      } catch (error) {
        return request.signal.aborted ? _aborted() : { ok: false, retryable: true, message: _clean(`Connection failed: ${_cause(error)}`, secrets) };
      }
      const json = _json(text);
      if (!response.ok) return _httpFailure(response, json, text, secrets, now());
      return _reply(json, text, secrets);
    },
  };
}

/**
 * `off` sends no field, so servers without reasoning support never see one. `xhigh` is sent as it
 * is: the OpenAI schema lists it (for models after gpt-5.1-codex-max); older models answer 400.
 */
function _effort(thinking: Thinking | undefined): string | undefined {
  return thinking === undefined || thinking === 'off' ? undefined : thinking;
}

function _reply(json: unknown, text: string, secrets: readonly string[]): Attempt<string> {
  const choice = _field(_field(json, 'choices'), 0);
  const message = _field(choice, 'message');
  const content = _field(message, 'content');
  if (typeof content === 'string') return { ok: true, value: content };
  if (Array.isArray(content)) {
    const parts = content.map((part) => (_field(part, 'type') === 'text' ? _field(part, 'text') : undefined));
    return { ok: true, value: parts.filter((p): p is string => typeof p === 'string').join('') };
  }
  const refusal = _field(message, 'refusal');
  if (typeof refusal === 'string') return { ok: false, retryable: false, message: _clean(`Refused: ${refusal}`, secrets) };
  const said = _errorText(json) ?? (json === undefined ? text : 'no choices[0].message.content');
  return { ok: false, retryable: false, message: _clean(`Malformed response: ${said}`, secrets) };
}

function _httpFailure(response: Response, json: unknown, text: string, secrets: readonly string[], now: number): Attempt<string> {
  const error = _field(json, 'error');
  const code = _field(error, 'code');
  const type = _field(error, 'type');
  const label = typeof code === 'string' ? code : type;
  const said = _errorText(json) ?? (text.trim() || response.statusText);
  const message = _clean(`HTTP ${response.status}${typeof label === 'string' ? ` ${label}` : ''}: ${said}`, secrets);
  // A 429 for an exhausted quota does not clear by waiting; `x-should-retry: false` is the server saying so.
  const retryable =
    (response.status === 429 || response.status >= 500) && code !== 'insufficient_quota' && type !== 'insufficient_quota' && response.headers.get('x-should-retry') !== 'false';
  const retryAfterMs = _retryAfter(response.headers, now);
  return retryable && retryAfterMs !== undefined ? { ok: false, retryable, message, retryAfterMs } : { ok: false, retryable, message };
}

// `retry-after-ms` is OpenAI's finer header; `Retry-After` the standard one.
function _retryAfter(headers: Headers, now: number): number | undefined {
  const ms = Number(headers.get('retry-after-ms') ?? '');
  if (headers.get('retry-after-ms') !== null && Number.isFinite(ms) && ms >= 0) return ms;
  return parseRetryAfter(headers.get('retry-after'), now);
}

// `{error: {message}}` from OpenAI, `{error: "..."}` or `{message}` from some compatible servers.
function _errorText(json: unknown): string | undefined {
  const error = _field(json, 'error');
  for (const candidate of [_field(error, 'message'), error, _field(json, 'message')]) {
    if (typeof candidate === 'string' && candidate.trim() !== '') return candidate;
  }
  return undefined;
}

function _base(baseUrl: string): string {
  let parsed: URL;
  try {
    parsed = new URL(baseUrl);
  } catch {
    throw new TypeError(`Cannot use provider base URL: ${JSON.stringify(baseUrl)} is not a URL`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new TypeError(`Cannot use provider base URL: ${parsed.protocol} is not http: or https:`);
  return baseUrl.replace(/\/+$/, '');
}

function _secrets(apiKey: string | undefined, headers: Record<string, string>): string[] {
  // Short header values (`1`, `true`) are not secrets, and redacting them would shred messages.
  return [apiKey ?? '', ...Object.values(headers)].filter((s) => s.length >= 8);
}

// One line, no secret, bounded: it ends up in a run record and a main-session summary.
function _clean(message: string, secrets: readonly string[]): string {
  let text = message;
  for (const secret of secrets) text = text.split(secret).join('[redacted]');
  text = text.replace(/\s+/g, ' ').trim();
  return text.length > _MESSAGE_MAX ? `${text.slice(0, _MESSAGE_MAX - 1)}…` : text;
}

function _cause(error: unknown): string {
  const cause = _field(error, 'cause');
  for (const candidate of [_field(cause, 'code'), _field(cause, 'message'), _field(error, 'message')]) {
    if (typeof candidate === 'string' && candidate !== '') return candidate;
  }
  return String(error);
}

function _aborted(): Attempt<string> {
  return { ok: false, retryable: false, message: 'aborted' };
}

function _json(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function _field(value: unknown, key: string | number): unknown {
  return typeof value === 'object' && value !== null ? (value as Record<string | number, unknown>)[key] : undefined;
}
