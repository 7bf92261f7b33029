// signal-cli daemon JSON-RPC send.

import { randomUUID } from 'node:crypto';
import { checkUrl, failure, invalidOption, postJson, type Received, retryAfterMs, unanswered } from './http-call.ts';
import { asObject } from '../object.ts';
import { clipLine, detail, show } from '../text.ts';
import type { Attempt } from '../retry.ts';
import type { Adapter, Sent } from './adapter.ts';
import { E164, SIGNAL_GROUP } from '../policy/recipients.ts';
import { checkFetch, platformAdapter, retryableStatus, sent, tellFor, wordsFor } from './_platform.ts';

export interface SignalOptions {
  /** The signal-cli daemon's HTTP base (`signal-cli daemon --http`), e.g. `http://127.0.0.1:8080`. */
  url: string;
  /** The sending account in E.164; a daemon serving several accounts picks by it, a single-account one ignores it. */
  account: string;
  fetch?: typeof fetch;
}

// A group recipient is `group:<base64 group id>`, the id as `signal-cli listGroups` prints it.

// signal-cli's own JSON-RPC code for "every recipient failed because of rate limiting".
const _RATE_LIMITED = -5;
// signal-cli's limit for one message's text, as this adapter uses it.
const _MAX_LENGTH = 2000;

/**
 * Signal through a signal-cli daemon's JSON-RPC `send`. `to` is a phone number in E.164
 * (`+15551234567`) or `group:<base64 id>` of a (v2, 32-byte) group. The message id is the
 * send timestamp signal-cli reports, which is also what Signal uses to quote or edit it.
 */
export function createSignalAdapter(options: SignalOptions): Adapter {
  const { url, account, fetch = globalThis.fetch } = options;
  const endpoint = `${checkUrl('url', url, 'must be the http(s) URL of the signal-cli daemon')}/api/v1/rpc`;
  if (typeof account !== 'string' || !E164.test(account)) {
    throw invalidOption('account', `must be an E.164 number such as +15551234567, got ${show(account)}`);
  }
  checkFetch(fetch);
  // No secret rides in a Signal message: a message is only put on one line and clipped.
  const tell = tellFor([]);
  return platformAdapter({
    channel: 'signal',
    name: 'Signal',
    maxLength: _MAX_LENGTH,
    tell,
    // The answer names the request's id, so the call and its answer are read together.
    async deliver(to, text, signal) {
      const id = randomUUID();
      const params = to.startsWith(SIGNAL_GROUP)
        ? { account, groupId: to.slice(SIGNAL_GROUP.length), message: text }
        : { account, recipient: [to], message: text };
      const reply = await postJson(endpoint, { jsonrpc: '2.0', method: 'send', params, id }, {
        fetch,
        headers: { accept: 'application/json' },
        signal,
      });
      if (!reply.ok) return unanswered(reply, wordsFor('Signal', 'Cannot reach signal-cli'), tell);
      return _outcome(reply, id);
    },
  });
}

function _outcome(reply: Received, id: string): Attempt<Sent> {
  const { status, text: body } = reply;
  // signal-cli itself never answers 429; a proxy in front of it may.
  if (retryableStatus(status)) {
    return failure(`signal-cli answered HTTP ${status}${_detail(body)}`, true, retryAfterMs(reply.headers, Date.now()));
  }
  // 405/415/421 are misconfiguration (wrong path, proxy, Host pinning); 201 only follows an id-less request.
  if (status !== 200) return failure(`signal-cli answered HTTP ${status}${_detail(body)}`, false);
  const rpc = asObject(reply.json);
  if (rpc === null) return failure(`signal-cli answered with something other than JSON-RPC${_detail(body)}`, false);
  // JSON-RPC errors arrive at HTTP 200, so `error` is looked at before anything else.
  const error = asObject(rpc['error']);
  if (error !== null) return _rpcFailure(error);
  if (rpc['id'] !== id) return failure('signal-cli answered a different JSON-RPC request id', false);
  const result = asObject(rpc['result']);
  if (result === null) return failure('signal-cli answered without a result', false);
  const timestamp = result['timestamp'];
  // The message went out; a missing id must not turn into a retry that sends it twice.
  return sent(typeof timestamp === 'number' ? String(timestamp) : timestamp);
}

function _rpcFailure(error: Record<string, unknown>): Attempt<Sent> {
  const code = error['code'];
  const text = typeof error['message'] === 'string' ? _clip(error['message']) : 'no message';
  const message = `signal-cli error ${typeof code === 'number' ? code : '?'}: ${text}`;
  if (code !== _RATE_LIMITED) return failure(message, false);
  const wait = _retryAfterSeconds(error);
  return failure(message, true, wait === undefined ? undefined : wait * 1000);
}

// When every send failed, signal-cli puts the per-recipient results under error.data.response;
// rate-limited ones say how long Signal wants us to wait.
function _retryAfterSeconds(error: Record<string, unknown>): number | undefined {
  const results = asObject(asObject(error['data'])?.['response'])?.['results'];
  if (!Array.isArray(results)) return undefined;
  let longest: number | undefined;
  for (const entry of results) {
    const seconds = asObject(entry)?.['retryAfterSeconds'];
    if (typeof seconds === 'number' && Number.isFinite(seconds) && seconds >= 0) {
      longest = Math.max(longest ?? 0, seconds);
    }
  }
  return longest;
}

// Each part quoted from signal-cli is clipped.
function _clip(text: string): string {
  return clipLine(text, 301);
}

function _detail(body: string): string {
  return detail(_clip(body));
}
