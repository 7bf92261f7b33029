import { randomUUID } from 'node:crypto';
import { parseRetryAfter, type Attempt } from '../retry.ts';
import type { Adapter, Sent } from './adapter.ts';

export interface SignalOptions {
  /** The signal-cli daemon's HTTP base (`signal-cli daemon --http`), e.g. `http://127.0.0.1:8080`. */
  url: string;
  /** The sending account in E.164; a daemon serving several accounts picks by it, a single-account one ignores it. */
  account: string;
  fetch?: typeof fetch;
}

// A group recipient is `group:<base64 group id>`, the id as `signal-cli listGroups` prints it.
const _GROUP = 'group:';

const _E164 = /^\+[1-9]\d{6,14}$/;
const _BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
// signal-cli's own JSON-RPC code for "every recipient failed because of rate limiting".
const _RATE_LIMITED = -5;

/**
 * Signal through a signal-cli daemon's JSON-RPC `send`. `to` is a phone number in E.164
 * (`+15551234567`) or `group:<base64 id>` of a (v2, 32-byte) group. The message id is the
 * send timestamp signal-cli reports, which is also what Signal uses to quote or edit it.
 */
export function createSignalAdapter(options: SignalOptions): Adapter {
  const { url, account, fetch: fetchImpl = fetch } = options;
  if (!_isHttpUrl(url)) throw new TypeError(`Invalid option url: must be the http(s) URL of the signal-cli daemon, got ${_show(url)}`);
  if (typeof account !== 'string' || !_E164.test(account)) throw new TypeError(`Invalid option account: must be an E.164 number such as +15551234567, got ${_show(account)}`);
  if (typeof fetchImpl !== 'function') throw new TypeError('Invalid option fetch: must be a function');
  const endpoint = `${url.replace(/\/+$/, '')}/api/v1/rpc`;

  const checkRecipient = (to: string): string | null => {
    const group = typeof to === 'string' && to.startsWith(_GROUP) ? to.slice(_GROUP.length) : undefined;
    const valid = group === undefined ? typeof to === 'string' && _E164.test(to) : _BASE64.test(group) && Buffer.from(group, 'base64').length === 32;
    if (valid) return null;
    return `Invalid Signal recipient: expected a phone number in E.164 (+ and 7 to 15 digits) or group:<base64 id of 32 bytes> as signal-cli listGroups prints it, got ${_show(to)}`;
  };

  const send = async (to: string, text: string, signal?: AbortSignal): Promise<Attempt<Sent>> => {
    const problem = checkRecipient(to);
    if (problem !== null) return { ok: false, retryable: false, message: problem };
    const id = randomUUID();
    const params = to.startsWith(_GROUP)
      ? { account, groupId: to.slice(_GROUP.length), message: text }
      : { account, recipient: [to], message: text };
    let status: number;
    let retryAfter: string | null;
    let body: string;
    try {
      const response = await fetchImpl(endpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', method: 'send', params, id }),
        ...(signal === undefined ? {} : { signal }),
      });
      status = response.status;
      retryAfter = response.headers.get('retry-after');
      body = await response.text();
    } catch (error) {
      return { ok: false, retryable: true, message: `Cannot reach signal-cli: ${_reason(error)}` };
    }
    // signal-cli itself never answers 429; a proxy in front of it may.
    if (status === 429 || status >= 500) {
      const wait = parseRetryAfter(retryAfter);
      return { ok: false, retryable: true, message: `signal-cli answered HTTP ${status}${_detail(body)}`, ...(wait === undefined ? {} : { retryAfterMs: wait }) };
    }
    // 405/415/421 are misconfiguration (wrong path, proxy, Host pinning); 201 only follows an id-less request.
    if (status !== 200) return { ok: false, retryable: false, message: `signal-cli answered HTTP ${status}${_detail(body)}` };
    const reply = _object(_parse(body));
    if (reply === null) return { ok: false, retryable: false, message: `signal-cli answered with something other than JSON-RPC${_detail(body)}` };
    // JSON-RPC errors arrive at HTTP 200, so `error` is looked at before anything else.
    const error = _object(reply['error']);
    if (error !== null) return _failure(error);
    if (reply['id'] !== id) return { ok: false, retryable: false, message: 'signal-cli answered a different JSON-RPC request id' };
    const result = _object(reply['result']);
    if (result === null) return { ok: false, retryable: false, message: 'signal-cli answered without a result' };
    const timestamp = result['timestamp'];
    // The message went out; a missing id must not turn into a retry that sends it twice.
    return { ok: true, value: { messageIds: typeof timestamp === 'number' || typeof timestamp === 'string' ? [String(timestamp)] : [] } };
  };

  return { channel: 'signal', maxLength: 2000, checkRecipient, send };
}

function _failure(error: Record<string, unknown>): Attempt<Sent> {
  const code = error['code'];
  const text = typeof error['message'] === 'string' ? _clip(error['message']) : 'no message';
  const message = `signal-cli error ${typeof code === 'number' ? code : '?'}: ${text}`;
  if (code !== _RATE_LIMITED) return { ok: false, retryable: false, message };
  const wait = _retryAfterSeconds(error);
  return { ok: false, retryable: true, message, ...(wait === undefined ? {} : { retryAfterMs: wait * 1000 }) };
}

// When every send failed, signal-cli puts the per-recipient results under error.data.response;
// rate-limited ones say how long Signal wants us to wait.
function _retryAfterSeconds(error: Record<string, unknown>): number | undefined {
  const results = _object(_object(error['data'])?.['response'])?.['results'];
  if (!Array.isArray(results)) return undefined;
  let longest: number | undefined;
  for (const entry of results) {
    const seconds = _object(entry)?.['retryAfterSeconds'];
    if (typeof seconds === 'number' && Number.isFinite(seconds) && seconds >= 0) longest = Math.max(longest ?? 0, seconds);
  }
  return longest;
}

// A value as a message shows it: quoted, and short.
function _show(value: unknown): string {
  const text = typeof value === 'string' ? value : String(value);
  return JSON.stringify(text.length > 80 ? `${text.slice(0, 80)}…` : text);
}

function _isHttpUrl(value: unknown): value is string {
  if (typeof value !== 'string') return false;
  try {
    const { protocol } = new URL(value);
    return protocol === 'http:' || protocol === 'https:';
  } catch {
    return false;
  }
}

function _parse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function _object(value: unknown): Record<string, unknown> | null {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
}

function _detail(body: string): string {
  const text = body.trim();
  return text === '' ? '' : `: ${_clip(text)}`;
}

function _clip(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > 300 ? `${flat.slice(0, 300)}…` : flat;
}

function _reason(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  return error.cause instanceof Error ? `${error.message} (${error.cause.message})` : error.message;
}
