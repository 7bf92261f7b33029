import { parseRetryAfter, type Attempt } from '../retry.ts';
import type { Adapter, Sent } from './adapter.ts';

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
// Teams conversation ids: `a:…` (personal), `19:…@thread.…` (channels, group chats), possibly `;messageid=…`.
const _CONVERSATION = /^[0-9a-z]+:\S+$/i;

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
  const { appId, appPassword, tenantId, serviceUrl, fetch: fetchImpl = fetch, now = Date.now } = options;
  if (typeof appId !== 'string' || appId.trim() === '') throw new TypeError('Invalid option appId: must be a non-empty string');
  if (typeof appPassword !== 'string' || appPassword === '') throw new TypeError('Invalid option appPassword: must be a non-empty string');
  if (tenantId !== undefined && (typeof tenantId !== 'string' || !/^[\w.-]+$/.test(tenantId))) {
    throw new TypeError(`Invalid option tenantId: must be a tenant id or domain, got ${_show(tenantId)}`);
  }
  if (!_isHttpUrl(serviceUrl)) throw new TypeError(`Invalid option serviceUrl: must be an http(s) URL, got ${_show(serviceUrl)}`);
  if (typeof fetchImpl !== 'function') throw new TypeError('Invalid option fetch: must be a function');
  if (typeof now !== 'function') throw new TypeError('Invalid option now: must be a function');
  const tokenUrl = options.tokenUrl ?? `https://login.microsoftonline.com/${tenantId ?? 'botframework.com'}/oauth2/v2.0/token`;
  if (!_isHttpUrl(tokenUrl)) throw new TypeError(`Invalid option tokenUrl: must be an http(s) URL, got ${_show(tokenUrl)}`);
  const base = serviceUrl.replace(/\/+$/, '');

  let cached: _Token | undefined;
  // One token request in flight at a time: concurrent sends share it rather than stampede the endpoint.
  let pending: Promise<Attempt<_Token>> | undefined;
  // Scrubbed before clipped, so a cut can never leave half a secret behind.
  const tell = (text: string, bearer?: string) => _clip(_scrub(text, [appPassword, bearer]));

  const token = (signal: AbortSignal | undefined): Promise<Attempt<_Token>> => {
    if (cached !== undefined && now() < cached.refreshAt) return Promise.resolve({ ok: true, value: cached });
    pending ??= _fetchToken(fetchImpl, tokenUrl, appId, appPassword, now, signal).finally(() => {
      pending = undefined;
    });
    return pending.then((result) => {
      if (result.ok) cached = result.value;
      return result.ok ? result : { ...result, message: tell(result.message) };
    });
  };

  const post = async (to: string, text: string, bearer: string, signal: AbortSignal | undefined) => {
    const response = await fetchImpl(`${base}/v3/conversations/${encodeURIComponent(to)}/activities`, {
      method: 'POST',
      headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ type: 'message', text }),
      ...(signal === undefined ? {} : { signal }),
    });
    return { status: response.status, retryAfter: response.headers.get('retry-after'), body: await response.text() };
  };

  const checkRecipient = (to: string): string | null =>
    _CONVERSATION.test(to) ? null : `Invalid Teams recipient: expected a conversation id such as a:1pL6… or 19:…@thread.tacv2, got ${_show(to)}`;

  const send = async (to: string, text: string, signal?: AbortSignal): Promise<Attempt<Sent>> => {
    const problem = checkRecipient(to);
    if (problem !== null) return { ok: false, retryable: false, message: problem };
    let reply: { status: number; retryAfter: string | null; body: string } | undefined;
    let bearer = '';
    for (let round = 0; round < 2; round++) {
      const issued = await token(signal);
      if (!issued.ok) return issued;
      bearer = issued.value.value;
      try {
        reply = await post(to, text, bearer, signal);
      } catch (error) {
        return { ok: false, retryable: true, message: tell(`Cannot reach the Bot Connector: ${_reason(error)}`, bearer) };
      }
      if (reply.status !== 401) break;
      // A token can be revoked or rotated before its stated expiry: drop it (unless another send already did) and ask once more.
      if (cached === issued.value) cached = undefined;
    }
    const { status, retryAfter, body } = reply!;
    const parsed = _object(_parse(body));
    if (status >= 200 && status < 300) {
      const id = parsed?.['id'];
      // Posted; a reply without an id must not become a retry that posts the text twice.
      return { ok: true, value: { messageIds: typeof id === 'string' && id !== '' ? [id] : [] } };
    }
    const wait = parseRetryAfter(retryAfter, now());
    // Microsoft asks for retries on 412 (concurrent operations), 429 and the gateway errors.
    const retryable = status === 412 || status === 429 || status >= 500;
    const error = _object(parsed?.['error']);
    const code = typeof error?.['code'] === 'string' ? ` ${error['code']}` : '';
    const said = typeof error?.['message'] === 'string' ? `: ${error['message']}` : error === null ? _detail(body) : '';
    return { ok: false, retryable, message: tell(`Teams answered ${status}${code}${said}`, bearer), ...(wait === undefined ? {} : { retryAfterMs: wait }) };
  };

  return { channel: 'msteams', maxLength: 20_000, checkRecipient, send };
}

async function _fetchToken(
  fetchImpl: typeof fetch,
  url: string,
  appId: string,
  appPassword: string,
  now: () => number,
  signal: AbortSignal | undefined,
): Promise<Attempt<_Token>> {
  const form = new URLSearchParams({ grant_type: 'client_credentials', client_id: appId, client_secret: appPassword, scope: _SCOPE });
  let status: number;
  let retryAfter: string | null;
  let body: string;
  try {
    const response = await fetchImpl(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: form.toString(),
      ...(signal === undefined ? {} : { signal }),
    });
    status = response.status;
    retryAfter = response.headers.get('retry-after');
    body = await response.text();
  } catch (error) {
    return { ok: false, retryable: true, message: `Cannot reach the Bot Framework token endpoint: ${_reason(error)}` };
  }
  const reply = _object(_parse(body));
  const token = reply?.['access_token'];
  if (status === 200 && typeof token === 'string' && token !== '') {
    const lifetimeMs = Number(reply?.['expires_in']) * 1000;
    // A short-lived (or unstated) lifetime still gets half of itself before a refresh.
    const refreshAt = Number.isFinite(lifetimeMs) && lifetimeMs > 0 ? now() + lifetimeMs - Math.min(_MARGIN_MS, lifetimeMs / 2) : now();
    return { ok: true, value: { value: token, refreshAt } };
  }
  const wait = parseRetryAfter(retryAfter, now());
  // AADSTS descriptions continue with trace and correlation ids on later lines; the first says what is wrong.
  const description = typeof reply?.['error_description'] === 'string' ? reply['error_description'].split(/\r?\n/)[0] : undefined;
  const error = typeof reply?.['error'] === 'string' ? reply['error'] : undefined;
  const said = [error, description].filter((part) => part !== undefined && part !== '').join(': ');
  return {
    ok: false,
    retryable: status === 429 || status >= 500,
    message: `Bot Framework token request failed with HTTP ${status}${said === '' ? (status === 200 ? ': no access_token' : _detail(body)) : `: ${said}`}`,
    ...(wait === undefined ? {} : { retryAfterMs: wait }),
  };
}

function _scrub(text: string, secrets: readonly (string | undefined)[]): string {
  let out = text;
  for (const secret of secrets) {
    if (secret === undefined || secret === '') continue;
    for (const form of new Set([secret, encodeURIComponent(secret), new URLSearchParams({ s: secret }).toString().slice(2)])) out = out.split(form).join('[redacted]');
  }
  return out;
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
  return text === '' ? '' : `: ${text}`;
}

function _clip(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > 400 ? `${flat.slice(0, 400)}…` : flat;
}

function _reason(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  return error.cause instanceof Error ? `${error.message} (${error.cause.message})` : error.message;
}
