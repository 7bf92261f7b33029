// The outgoing HTTP call shared by adapters and providers: answers as values, read up to 8 MiB, redirects
// never followed, Retry-After, secret scrubbing, the failure teller, unanswered calls and their message size.

import { Buffer } from 'node:buffer';
import { type Attempt, parseRetryAfter } from '../retry.ts';
import { clipLine, hideUrlCredentials, show, trimTrailingSlashes } from '../text.ts';

/** What one call came to: the whole answer, or why there is none. */
export type CallResult =
  | { ok: true; status: number; statusText: string; headers: Headers; text: string; json: unknown }
  /**
   * `aborted` when the caller's signal fired, `too-large` for an answer longer than the cap (read no
   * further), `network` for anything else that left no answer; `message` says why.
   */
  | { ok: false; kind: 'network' | 'aborted' | 'too-large'; message: string };

/** What came back, whatever its status: `json` is the parsed body, `undefined` when the body is not JSON. */
export type Received = Extract<CallResult, { ok: true }>;

/** An attempt that failed. */
export type Failure = Extract<Attempt<never>, { ok: false }>;

/** How to make a call: the fetch to use, the headers to send, the signal that ends it. */
export interface CallOptions {
  fetch: typeof fetch;
  /** Header names in lowercase, so that a caller's value replaces a default rather than joining it. */
  headers?: Record<string, string>;
  signal?: AbortSignal | undefined;
  /** The most bytes of an answer's body read; {@link MAX_ANSWER_BYTES} unless a caller needs less. */
  maxAnswerBytes?: number;
}

/** The most bytes of an answer's body any outgoing call reads: past it the call fails and the connection goes. */
export const MAX_ANSWER_BYTES = 8 * 1024 * 1024;

/**
 * POSTs `body` and reads the answer, up to `maxAnswerBytes`; a call that gets none is a value,
 * never a throw. A redirect is never followed: a 3xx is the answer, and the caller's rule for a
 * status outside 2xx makes it a failure (a message or a credential must not go to another address).
 */
export async function post(url: string | URL, body: string | Uint8Array, options: CallOptions): Promise<CallResult> {
  const { fetch: doFetch, headers = {}, signal, maxAnswerBytes = MAX_ANSWER_BYTES } = options;
  try {
    const response = await doFetch(url, {
      method: 'POST',
      headers,
      body,
      redirect: 'manual',
      ...(signal === undefined ? {} : { signal }),
    });
    const text = await _readText(response, maxAnswerBytes);
    if (text === null) {
      return {
        ok: false,
        kind: 'too-large',
        message:
          `the answer (HTTP ${response.status}) is larger than ${maxAnswerBytes} bytes; it was not read past them`,
      };
    }
    return {
      ok: true,
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
      text,
      json: parseJson(text),
    };
  } catch (error) {
    return { ok: false, kind: signal?.aborted === true ? 'aborted' : 'network', message: _reason(error) };
  }
}

// The body as text, or null past `max` bytes: reading stops there and the stream is cancelled,
// which ends the connection, so a sender of an endless answer costs at most `max` bytes of memory.
async function _readText(response: Response, max: number): Promise<string | null> {
  const declared = Number(response.headers.get('content-length') ?? Number.NaN);
  const { body } = response;
  if (declared > max) {
    await body?.cancel().catch(() => undefined);
    return null;
  }
  if (body === null) return '';
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > max) {
      await reader.cancel().catch(() => undefined);
      return null;
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks, total).toString('utf8');
}

/** POSTs `payload` as JSON; see {@link post}. */
export function postJson(url: string | URL, payload: unknown, options: CallOptions): Promise<CallResult> {
  return post(url, JSON.stringify(payload), {
    ...options,
    headers: { 'content-type': 'application/json', ...options.headers },
  });
}

/** `text` parsed as JSON, or `undefined` when it is not JSON. */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * How long the other side asked us to wait, in ms: seconds named in the body win, then
 * `retry-after-ms` (OpenAI, Azure), then `Retry-After` (seconds, or an HTTP date read against `now`).
 */
export function retryAfterMs(headers: Headers, now: number, bodySeconds?: unknown): number | undefined {
  if (typeof bodySeconds === 'number' && Number.isFinite(bodySeconds) && bodySeconds >= 0) {
    return Math.ceil(bodySeconds * 1000);
  }
  const ms = headers.get('retry-after-ms');
  if (ms !== null && Number.isFinite(Number(ms)) && Number(ms) >= 0) return Number(ms);
  return parseRetryAfter(headers.get('retry-after'), now);
}

/** A failed attempt; `retryAfterMs` is left out when there is none. */
export function failure(message: string, retryable: boolean, retryAfterMs?: number): Failure {
  return retryAfterMs === undefined
    ? { ok: false, retryable, message }
    : { ok: false, retryable, message, retryAfterMs };
}

/**
 * How long a failure message quoted from a service may be where it is recorded: a model's failure
 * ends up in a run record and a main-session summary, a chat platform's in a delivery outcome.
 */
export const MESSAGE_MAX = { provider: 300, delivery: 401 } as const;

/** Makes a message safe to record: every secret (and a URL's user:password) masked first, then on one line and clipped to `max`, so a cut never leaves half a secret. */
export function teller(
  secrets: readonly (string | undefined)[],
  max: number,
  mask?: string,
): (message: string) => string {
  return (message) => clipLine(hideUrlCredentials(scrub(message, secrets, mask)), max);
}

/** How a caller words the three ways a call can get no answer. */
export interface Unanswered {
  /** Starts the message for an answer past the cap (`Discord answer refused`). */
  refused: string;
  /** The whole message for the caller's own abort (`Discord request aborted`). */
  aborted: string;
  /** Starts the message for a call that reached nothing (`Cannot reach the WhatsApp Cloud API`). */
  unreachable: string;
}

/**
 * A call that got no answer. An abort is the caller's own stop and is never retried, nor an answer
 * past the cap (it would come again); a network failure is.
 */
export function unanswered(
  reply: Extract<CallResult, { ok: false }>,
  words: Unanswered,
  tell: (message: string) => string,
): Failure {
  if (reply.kind === 'too-large') return failure(tell(`${words.refused}: ${reply.message}`), false);
  return reply.kind === 'aborted'
    ? failure(words.aborted, false)
    : failure(tell(`${words.unreachable}: ${reply.message}`), true);
}

/**
 * `text` with every secret replaced by `mask`, in each form an error text may quote it: as it
 * is, URL- or form-encoded, base64 or base64url (at any byte offset, as inside a Basic credential),
 * and hex in either case; and any leading part of such a form at least SCRUB_PREFIX characters
 * long (a provider that echoes `sk-abc123…`). A secret shorter than that is masked wherever it
 * appears whole, in any of those forms.
 */
export function scrub(text: string, secrets: readonly (string | undefined)[], mask = '[redacted]'): string {
  const spans: [number, number][] = [];
  for (const secret of secrets) {
    if (secret === undefined || secret === '') continue;
    for (const form of _forms(secret)) _find(text, form, spans);
  }
  if (spans.length === 0) return text;
  // Overlapping finds (the raw token and its URL-encoded prefix) become one mask.
  spans.sort((a, b) => a[0] - b[0]);
  let out = '';
  let from = 0;
  for (const [start, end] of spans) {
    if (end <= from) continue;
    out += start >= from ? `${text.slice(from, start)}${mask}` : '';
    from = end;
  }
  return out + text.slice(from);
}

/** How long a leading part of a secret must be to be masked on its own. */
export const SCRUB_PREFIX = 8;

function _forms(secret: string): Set<string> {
  const bytes = Buffer.from(secret, 'utf8');
  const hex = bytes.toString('hex');
  const forms = new Set([
    secret,
    encodeURIComponent(secret),
    new URLSearchParams({ s: secret }).toString().slice(2),
    hex,
    hex.toUpperCase(),
  ]);
  if (secret.length < SCRUB_PREFIX) return forms.add(bytes.toString('base64'));
  // Base64 of the secret behind 0, 1 or 2 other bytes: the characters made of its bits alone.
  for (let skip = 0; skip < 3; skip++) {
    const encoded = Buffer.concat([Buffer.alloc(skip), bytes]).toString('base64');
    const core = encoded.slice(Math.ceil((8 * skip) / 6), Math.floor((8 * (skip + bytes.length)) / 6));
    if (core.length >= SCRUB_PREFIX) forms.add(core).add(core.replaceAll('+', '-').replaceAll('/', '_'));
  }
  return forms;
}

// Adds where `form`, or a leading part of it at least SCRUB_PREFIX long, appears in `text`.
function _find(text: string, form: string, spans: [number, number][]): void {
  const head = form.slice(0, Math.min(SCRUB_PREFIX, form.length));
  for (let at = text.indexOf(head); at !== -1;) {
    let end = at + head.length;
    while (end - at < form.length && text[end] === form[end - at]) end++;
    spans.push([at, end]);
    at = text.indexOf(head, end);
  }
}

/** `value` as an API base: an http(s) URL without trailing slashes, or why it cannot be one. */
export function httpBase(value: unknown): { ok: true; base: string } | { ok: false; reason: string } {
  if (typeof value !== 'string' || !URL.canParse(value)) {
    return { ok: false, reason: `${JSON.stringify(value)} is not a URL` };
  }
  const { protocol } = new URL(value);
  if (protocol !== 'http:' && protocol !== 'https:') return { ok: false, reason: `${protocol} is not http: or https:` };
  return { ok: true, base: trimTrailingSlashes(value) };
}

/** Option `name` as an API base (see {@link httpBase}); anything else is the option's TypeError. */
export function checkUrl(name: string, value: unknown, rule = 'must be an http(s) URL'): string {
  const base = httpBase(value);
  if (!base.ok) throw invalidOption(name, `${rule}, got ${show(value)}`);
  return base.base;
}

/** The TypeError for an option that breaks its rule. */
export function invalidOption(name: string, rule: string): TypeError {
  return new TypeError(`Invalid option ${name}: ${rule}`);
}

function _reason(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const said = error.message === '' ? String(error) : error.message;
  // Node's fetch says only "fetch failed"; the reason (ECONNREFUSED, a TLS error) is in the cause.
  // A URL it quotes ("cannot be constructed from a URL that includes credentials") loses its user:password.
  return hideUrlCredentials(error.cause instanceof Error ? `${said}: ${error.cause.message}` : said);
}
