// Microsoft Teams through the Bot Framework (token cache, send to conversation).

import {
  checkUrl,
  failure,
  invalidOption,
  post,
  postJson,
  type Received,
  retryAfterMs,
  unanswered,
} from './http-call.ts';
import { asObject } from '../object.ts';
import { detail, show } from '../text.ts';
import type { Attempt } from '../retry.ts';
import type { Adapter, Sent } from './adapter.ts';
import { checkFetch, platformAdapter, retryableStatus, tellFor, wordsFor } from './_platform.ts';

export interface TeamsOptions {
  /** The bot's Microsoft App ID. */
  appId: string;
  /** The bot's client secret. */
  appPassword: string;
  /** For a single-tenant bot: its tenant, whose token endpoint then replaces the multi-tenant one. */
  tenantId?: string;
  /** The Bot Connector base the conversation lives on, from its incoming activities, e.g. `https://smba.trafficmanager.net/teams/`. */
  serviceUrl: string;
  /** The token endpoint; wins over the one `tenantId` implies. */
  tokenUrl?: string;
  fetch?: typeof fetch;
  now?: () => number;
}

const _SCOPE = 'https://api.botframework.com/.default';
// Refresh this long before the token's stated expiry, so no request leaves with a token that dies on the way.
const _MARGIN_MS = 5 * 60_000;

interface _Token {
  value: string;
  refreshAt: number;
}

/**
 * Microsoft Teams through the Bot Framework connector: a client-credentials token, cached until
 * shortly before it expires, then "send to conversation". `to` is a conversation id; a 401 from
 * the connector refreshes the token and tries once more. The message id is the new activity's id.
 */
export function createTeamsAdapter(options: TeamsOptions): Adapter {
  const { appId, appPassword, tenantId, serviceUrl, fetch = globalThis.fetch, now = Date.now } = options;
  if (typeof appId !== 'string' || appId.trim() === '') throw invalidOption('appId', 'must be a non-empty string');
  if (typeof appPassword !== 'string' || appPassword === '') {
    throw invalidOption('appPassword', 'must be a non-empty string');
  }
  if (tenantId !== undefined && (typeof tenantId !== 'string' || !/^[\w.-]+$/.test(tenantId))) {
    throw invalidOption('tenantId', `must be a tenant id or domain, got ${show(tenantId)}`);
  }
  const base = checkUrl('serviceUrl', serviceUrl);
  checkFetch(fetch);
  if (typeof now !== 'function') throw invalidOption('now', 'must be a function');
  const tokenUrl = options.tokenUrl ??
    `https://login.microsoftonline.com/${tenantId ?? 'botframework.com'}/oauth2/v2.0/token`;
  // Checked, then used exactly as given: a token endpoint is a full URL, not a base to extend.
  checkUrl('tokenUrl', tokenUrl);

  const tellWith = (bearer?: string) => tellFor([appPassword, bearer]);
  const tokens = _tokens((signal) => _fetchToken(fetch, tokenUrl, appId, appPassword, now, signal), now, tellWith());
  return platformAdapter({
    channel: 'msteams',
    name: 'Teams',
    // The Bot Framework's limit for a message's text, as this adapter uses it.
    maxLength: 20_000,
    tell: tellWith(),
    // A token first, and once more after a 401: a token can be revoked or rotated before its stated expiry.
    async deliver(to, text, signal) {
      const url = `${base}/v3/conversations/${encodeURIComponent(to)}/activities`;
      let reply: Received | undefined;
      let bearer = '';
      for (let round = 0; round < 2; round++) {
        const issued = await tokens.get(signal);
        if (!issued.ok) return issued;
        bearer = issued.value.value;
        const answer = await postJson(url, { type: 'message', text }, {
          fetch,
          headers: { authorization: `Bearer ${bearer}`, accept: 'application/json' },
          signal,
        });
        if (!answer.ok) {
          return unanswered(answer, wordsFor('Teams', 'Cannot reach the Bot Connector'), tellWith(bearer));
        }
        reply = answer;
        if (reply.status !== 401) break;
        // Dropped unless another send already did, and asked for once more.
        tokens.drop(issued.value);
      }
      return _outcome(reply!, tellWith(bearer), now);
    },
  });
}

// The token, cached until shortly before it expires; one request in flight at a time, so
// concurrent sends share it rather than stampede the endpoint.
function _tokens(
  fetchToken: (signal: AbortSignal | undefined) => Promise<Attempt<_Token>>,
  now: () => number,
  tell: (message: string) => string,
): { get(signal: AbortSignal | undefined): Promise<Attempt<_Token>>; drop(token: _Token): void } {
  let cached: _Token | undefined;
  let pending: Promise<Attempt<_Token>> | undefined;
  return {
    get(signal) {
      if (cached !== undefined && now() < cached.refreshAt) return Promise.resolve({ ok: true, value: cached });
      pending ??= fetchToken(signal).finally(() => {
        pending = undefined;
      });
      return pending.then((result) => {
        if (result.ok) cached = result.value;
        return result.ok ? result : { ...result, message: tell(result.message) };
      });
    },
    drop(token) {
      if (cached === token) cached = undefined;
    },
  };
}

function _outcome(reply: Received, tell: (message: string) => string, now: () => number): Attempt<Sent> {
  const { status, text: body, json, headers } = reply;
  const parsed = asObject(json);
  if (status >= 200 && status < 300) {
    const id = parsed?.['id'];
    // Posted; a reply without an id must not become a retry that posts the text twice.
    return { ok: true, value: { messageIds: typeof id === 'string' && id !== '' ? [id] : [] } };
  }
  // Microsoft asks for retries on 412 (concurrent operations), 429 and the gateway errors.
  const retryable = status === 412 || retryableStatus(status);
  const error = asObject(parsed?.['error']);
  const code = typeof error?.['code'] === 'string' ? ` ${error['code']}` : '';
  const said = typeof error?.['message'] === 'string' ? `: ${error['message']}` : error === null ? detail(body) : '';
  return failure(tell(`Teams answered ${status}${code}${said}`), retryable, retryAfterMs(headers, now()));
}

async function _fetchToken(
  fetch: typeof globalThis.fetch,
  url: string,
  appId: string,
  appPassword: string,
  now: () => number,
  signal: AbortSignal | undefined,
): Promise<Attempt<_Token>> {
  const form = new URLSearchParams({
    grant_type: 'client_credentials',
    client_id: appId,
    client_secret: appPassword,
    scope: _SCOPE,
  });
  const headers = { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' };
  const reply = await post(url, form.toString(), { fetch, headers, signal });
  if (!reply.ok) return unanswered(reply, wordsFor('Teams', 'Cannot reach the Bot Framework token endpoint'), (m) => m);
  const { status } = reply;
  const body = asObject(reply.json);
  const token = body?.['access_token'];
  if (status === 200 && typeof token === 'string' && token !== '') {
    const lifetimeMs = Number(body?.['expires_in']) * 1000;
    // A short-lived (or unstated) lifetime still gets half of itself before a refresh.
    const refreshAt = Number.isFinite(lifetimeMs) && lifetimeMs > 0
      ? now() + lifetimeMs - Math.min(_MARGIN_MS, lifetimeMs / 2)
      : now();
    return { ok: true, value: { value: token, refreshAt } };
  }
  // AADSTS descriptions continue with trace and correlation ids on later lines; the first says what is wrong.
  const description = typeof body?.['error_description'] === 'string'
    ? body['error_description'].split(/\r?\n/)[0]
    : undefined;
  const error = typeof body?.['error'] === 'string' ? body['error'] : undefined;
  const said = [error, description].filter((part) => part !== undefined && part !== '').join(': ');
  const message = `Bot Framework token request failed with HTTP ${status}${
    said === '' ? (status === 200 ? ': no access_token' : detail(reply.text)) : `: ${said}`
  }`;
  return failure(message, retryableStatus(status), retryAfterMs(reply.headers, now()));
}
