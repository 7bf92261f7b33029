import type { Thinking } from '../../actions.ts';
import { parseRetryAfter } from '../../retry.ts';
import type { Attempt } from '../../retry.ts';
import type { Provider, TurnRequest } from '../provider.ts';

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

const _MESSAGE_MAX = 300;

/** A provider for `POST {baseUrl}/v1/messages` (Anthropic's Messages API). */
export function createAnthropicProvider(options: AnthropicProviderOptions): Provider {
  const { apiKey, headers = {}, fetch = globalThis.fetch, version = '2023-06-01', maxTokens = 4096, now = Date.now } = options;
  if (!Number.isInteger(maxTokens) || maxTokens < 1) throw new RangeError(`Cannot use maxTokens: ${maxTokens} is not a positive integer`);
  const url = `${_base(options.baseUrl)}/v1/messages`;
  const secrets = _secrets(apiKey, headers);
  return {
    async complete(request: TurnRequest): Promise<Attempt<string>> {
      if (request.signal.aborted) return _aborted();
      const budget = request.thinking === undefined || request.thinking === 'off' ? undefined : THINKING_BUDGETS[request.thinking];
      const body = {
        model: request.model,
        max_tokens: maxTokens + (budget ?? 0),
        // The API rejects an empty system text, and omitting it means the same.
        ...(request.system === '' ? {} : { system: request.system }),
        messages: [...request.history.map((m) => ({ role: m.role, content: m.content })), { role: 'user', content: request.prompt }],
        ...(budget === undefined ? {} : { thinking: { type: 'enabled', budget_tokens: budget } }),
      };
      const sent = new Headers({ 'content-type': 'application/json', accept: 'application/json', 'anthropic-version': version });
      if (apiKey !== undefined && apiKey !== '') sent.set('x-api-key', apiKey);
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

// Thinking and redacted-thinking blocks come first; the answer is the text blocks, in order.
function _reply(json: unknown, text: string, secrets: readonly string[]): Attempt<string> {
  const content = _field(json, 'content');
  const texts = Array.isArray(content) ? content.filter((b) => _field(b, 'type') === 'text').map((b) => _field(b, 'text')) : [];
  if (texts.length > 0 && texts.every((t) => typeof t === 'string')) return { ok: true, value: texts.join('') };
  const stop = _field(json, 'stop_reason');
  const said = typeof stop === 'string' ? `no text block (stop_reason ${stop})` : (_errorText(json) ?? (json === undefined ? text : 'no text block'));
  return { ok: false, retryable: false, message: _clean(`Malformed response: ${said}`, secrets) };
}

function _httpFailure(response: Response, json: unknown, text: string, secrets: readonly string[], now: number): Attempt<string> {
  const type = _field(_field(json, 'error'), 'type');
  const said = _errorText(json) ?? (text.trim() || response.statusText);
  const message = _clean(`HTTP ${response.status}${typeof type === 'string' ? ` ${type}` : ''}: ${said}`, secrets);
  const retryAfterMs = _retryAfter(response.headers, now);
  // A 429 from the monthly spend cap comes without `retry-after` and does not clear by waiting;
  // 529 is `overloaded_error`, covered by >= 500.
  const retryable =
    (response.status >= 500 || (response.status === 429 && retryAfterMs !== undefined)) && response.headers.get('x-should-retry') !== 'false';
  return retryable && retryAfterMs !== undefined ? { ok: false, retryable, message, retryAfterMs } : { ok: false, retryable, message };
}

function _retryAfter(headers: Headers, now: number): number | undefined {
  const ms = Number(headers.get('retry-after-ms') ?? '');
  if (headers.get('retry-after-ms') !== null && Number.isFinite(ms) && ms >= 0) return ms;
  return parseRetryAfter(headers.get('retry-after'), now);
}

// `{type: "error", error: {type, message}}`; a proxy in front may say something else.
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
