// The inspector: a page over the request ledger, on a listener of its own. Everything it shows
// came from strangers (bodies, headers, paths), so the page renders text only and runs under a
// CSP that allows nothing but its own two files; every request must name this listener in `Host`
// (DNS rebinding) and carry the session cookie a one-time code set; every API call also carries
// the tab's key (see sessions.ts: the cookie reaches every port of the host, the key
// only this page), and, to change anything, comes from this origin.

import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ErrorCode, HttpError } from '../errors.ts';
import { parseJsonObject, readBody } from '../guard/body.ts';
import type { Logger } from '../log.ts';
import { errorAnswer } from '../edge/answer.ts';
import { type InspectorSession, InspectorSessions } from './sessions.ts';
import { splitTarget } from '../edge/router.ts';
import type { HookStatus } from '../model/hook-status.ts';

/** Where the inspector's paths live: the cookie is scoped to it, so no other listener of ours ever sees it. */
export const INSPECTOR_PREFIX = '/inspector';

/** The header every API call carries the tab's key in. */
export const KEY_HEADER = 'x-inspector-key';

const _NOT_FOUND = new HttpError(404, ErrorCode.NotFound, 'not an inspector path');
const _NO_SESSION = new HttpError(
  401,
  ErrorCode.NoSession,
  'no inspector session in this tab: run "hooks-ingress inspect" for a login link',
);

/** What the page reads and asks for; the server builds it over the ledger and the replay. */
export interface InspectorSource {
  /**
   * Ledger entries, newest first, that pass `filter`; with `filter.more`, also how many older ones
   * pass it too; with the `version` the list was read at. Given that version as `filter.since`
   * while nothing changed, no entries and `unchanged`.
   */
  list(filter: InspectorFilter): Promise<{ entries: unknown[]; more?: number; version?: string; unchanged?: true }>;
  /** One entry with what it became, or `null` when no entry has that id. */
  show(id: string): Promise<unknown>;
  /** Replays entries (or only says what each would become, with `dryRun`). */
  replay(ids: readonly string[], options: { dryRun: boolean; force: boolean | readonly string[] }): Promise<unknown>;
  /** Marks the roots of entries resolved by hand, without replaying them (`requests resolve`); absent where nothing can be resolved. */
  resolve?(ids: readonly string[]): Promise<unknown>;
  /** Runs failed runs again once (`runs retry`), or with `check` only judges each; absent where runs cannot be retried. */
  retry?(ids: readonly string[], options: { check: boolean }): Promise<unknown>;
  /** Sends runs' stored replies again (`runs redeliver`); absent where they cannot be. */
  redeliver?(ids: readonly string[]): Promise<unknown>;
  /** Each hook's work now (runs executing and waiting, its controls); absent where the server does not say. */
  hooks?(): readonly HookStatus[];
  /** Pauses a hook (`paused: true`) or resumes it (`hooks-ingress pause`, `resume`). */
  pause?(hook: string, paused: boolean): Promise<unknown>;
}

/** The list's filters, as the page sends them; each is optional. */
export interface InspectorFilter {
  hook?: string;
  /** `"2xx"`, `"4xx"`, `"5xx"`, `"failed"` (failures whose request is not resolved: `requests --failed`), or `"failed-all"` (every failure). */
  status?: string;
  code?: string;
  /** Text that must occur in the request's path. */
  text?: string;
  limit: number;
  /** Count the entries past `limit` that pass too (it reads the whole ledger: bulk replay asks, polling does not). */
  more?: boolean;
  /** The version of the last list the page has for these filters: when nothing changed since, the answer says so and holds no entries. */
  since?: string;
}

export interface InspectorOptions {
  source: InspectorSource;
  log: Logger;
  /** A session unused this long ends. */
  idleMs: number;
  /** A session this old ends, however busy. */
  maxAgeMs: number;
  /** Host names (besides 127.0.0.1, localhost and [::1]) that `Host` may name: another loopback bind address, or a deliberate non-loopback one. */
  extraHosts?: readonly string[];
  now?: () => number;
}

/** The inspector's request listener, and the way the control channel asks it for a login code. */
export interface Inspector {
  (req: IncomingMessage, res: ServerResponse): void;
  /** Call once the listener is bound: `Host` must name this port. */
  bound(port: number): void;
  /** A one-time login path (with its code) and when it expires. */
  login(): { path: string; expiresAt: number };
}

// The page allows its own scripts and style only: no inline code, no other origin, no frames.
const _SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
};

const _FILES: Readonly<Record<string, string>> = {
  '/': 'index.html',
  '/app.js': 'app.js',
  '/dom.js': 'dom.js',
  '/words.js': 'words.js',
  '/replay.js': 'replay.js',
  '/runs.js': 'runs.js',
  '/hooks.js': 'hooks.js',
  '/app.css': 'app.css',
};

// The page's icon holds nothing of the owner's: served without a session (a browser asks for it
// without the cookie too, at /favicon.ico), so its request never ends in a 404 or a 401.
const _ICON = 'icon.svg';
// What a browser gets for a login link that opens nothing, or a page without a session: a page
// that says what to do, where a program (which asks for no HTML) still gets the JSON error.
const _SIGN_IN = 'signin.html';
const _PAGE = [...Object.values(_FILES), _ICON, _SIGN_IN];

const _TYPES: Readonly<Record<string, string>> = {
  html: 'text/html; charset=utf-8',
  js: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
  svg: 'image/svg+xml',
};

/** Builds the inspector's listener over `source`. */
export function createInspector(options: InspectorOptions): Inspector {
  const { log } = options;
  const now = options.now ?? Date.now;
  const context: _Context = {
    source: options.source,
    sessions: new InspectorSessions({ idleMs: options.idleMs, maxAgeMs: options.maxAgeMs, now }),
    files: loadPage(),
    hosts: new Set<string>(),
    cookieName: 'hooks_inspector',
  };
  const listener = ((req: IncomingMessage, res: ServerResponse) => {
    for (const [name, value] of Object.entries(_SECURITY_HEADERS)) res.setHeader(name, value);
    _handle(req, res, context).catch((error: unknown) => _failed(req, res, error, log));
  }) as Inspector;
  listener.bound = (port) => {
    context.hosts = new Set(
      ['127.0.0.1', 'localhost', '[::1]', ...(options.extraHosts ?? []).map(_bracketed)].map((host) =>
        `${host.toLowerCase()}:${port}`
      ),
    );
    context.cookieName = `hooks_inspector_${port}`;
  };
  listener.login = () => {
    const { code, expiresAt } = context.sessions.issue();
    return { path: `${INSPECTOR_PREFIX}/login?code=${code}`, expiresAt };
  };
  return listener;
}

/** What the listener's requests are answered with. */
interface _Context {
  source: InspectorSource;
  sessions: InspectorSessions;
  files: Record<string, string>;
  /** The `Host` values that name this listener (none until it is bound). */
  hosts: Set<string>;
  /** Named after the port once bound, so inspectors of two servers on one host keep a cookie each. */
  cookieName: string;
}

async function _handle(req: IncomingMessage, res: ServerResponse, context: _Context): Promise<void> {
  const { pathname, query } = splitTarget(req.url ?? '/');
  if (!context.hosts.has((req.headers.host ?? '').toLowerCase())) {
    throw new HttpError(421, ErrorCode.Misdirected, 'Host does not name this inspector');
  }
  const icon = pathname === '/favicon.ico' || pathname === `${INSPECTOR_PREFIX}/${_ICON}`;
  if (icon && (req.method === 'GET' || req.method === 'HEAD')) {
    return _sendText(res, 200, context.files[_ICON]!, _TYPES['svg']!, req.method === 'HEAD');
  }
  if (pathname !== INSPECTOR_PREFIX && !pathname.startsWith(`${INSPECTOR_PREFIX}/`)) throw _NOT_FOUND;
  const path = pathname === INSPECTOR_PREFIX ? '/' : pathname.slice(INSPECTOR_PREFIX.length);
  const cookies = _cookies(req.headers.cookie, context.cookieName);
  if (path === '/login') return _login(req, res, context, query, cookies);
  const file = _FILES[path];
  if (file !== undefined) return _pageFile(req, res, context, { path, file }, cookies);

  const key = req.headers[KEY_HEADER];
  const session = typeof key === 'string' ? context.sessions.find(cookies, key) : null;
  if (session === null || typeof key !== 'string') throw _NO_SESSION;
  if (req.method === 'GET') return _read(res, context, { path, query }, session);
  if (req.method !== 'POST') {
    throw new HttpError(405, ErrorCode.MethodNotAllowed, 'use GET or POST', { headers: { allow: 'GET, POST' } });
  }
  // A state change: only from this page (same origin, not a form posted from elsewhere, which
  // could not send the key's header either).
  if (!_sameOrigin(req)) throw new HttpError(403, ErrorCode.NotAllowed, 'Origin must be this inspector');
  return _change(req, res, context, path, key);
}

// The page that says to run `hooks-ingress inspect` again, for a browser with no session.
function _signIn(req: IncomingMessage, res: ServerResponse, context: _Context): void {
  _sendText(res, 401, context.files[_SIGN_IN]!, _TYPES['html']!, req.method === 'HEAD');
}

function _login(
  req: IncomingMessage,
  res: ServerResponse,
  context: _Context,
  query: URLSearchParams,
  cookies: string[],
): void {
  if (req.method !== 'GET') {
    throw new HttpError(405, ErrorCode.MethodNotAllowed, 'use GET', { headers: { allow: 'GET' } });
  }
  const opened = context.sessions.redeem(query.get('code') ?? '', cookies);
  if (opened === null && _wantsHtml(req)) return _signIn(req, res, context);
  if (opened === null) {
    throw new HttpError(
      401,
      ErrorCode.NoSession,
      'this login link is unknown, used or expired: run "hooks-ingress inspect" for a new one',
    );
  }
  // The code leaves the address bar at once; the tab's key rides in the fragment, which the
  // browser keeps to itself and the page moves into the tab's storage before anything else.
  return _send(res, 303, null, {
    location: `${INSPECTOR_PREFIX}/#login=${opened.key}`,
    'set-cookie': `${context.cookieName}=${opened.cookie}; Path=${INSPECTOR_PREFIX}/; HttpOnly; SameSite=Strict`,
  });
}

// The page's own files hold no data: the cookie alone fetches them.
function _pageFile(
  req: IncomingMessage,
  res: ServerResponse,
  context: _Context,
  { path, file }: { path: string; file: string },
  cookies: string[],
): void {
  if (!context.sessions.known(cookies)) {
    if (path === '/' && _wantsHtml(req)) return _signIn(req, res, context);
    throw _NO_SESSION;
  }
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    throw new HttpError(405, ErrorCode.MethodNotAllowed, 'use GET', { headers: { allow: 'GET, HEAD' } });
  }
  const ext = file.slice(file.lastIndexOf('.') + 1);
  return _sendText(res, 200, context.files[file]!, _TYPES[ext]!, req.method === 'HEAD');
}

async function _read(
  res: ServerResponse,
  { source }: _Context,
  { path, query }: { path: string; query: URLSearchParams },
  session: InspectorSession,
): Promise<void> {
  if (path === '/api/session') return _send(res, 200, { endsAt: new Date(session.endsAt).toISOString() });
  if (path === '/api/requests') return _send(res, 200, await source.list(_filter(query)));
  if (path === '/api/hooks') return _send(res, 200, { hooks: source.hooks?.() ?? [] });
  if (path.startsWith('/api/requests/')) {
    const entry = await source.show(_decode(path.slice('/api/requests/'.length)));
    if (entry === null) throw new HttpError(404, ErrorCode.NotFound, 'no ledger entry has that id');
    return _send(res, 200, entry);
  }
  throw _NOT_FOUND;
}

async function _change(
  req: IncomingMessage,
  res: ServerResponse,
  { sessions, source }: _Context,
  path: string,
  key: string,
): Promise<void> {
  if (path === '/api/logout') {
    sessions.end(key);
    return _send(res, 200, { ok: true });
  }
  if (path === '/api/pause' && source.pause !== undefined) return _pause(req, res, source.pause);
  if (path === '/api/replay' || path === '/api/resolve') {
    // The page posts small JSON documents: capped and timed like any body, refused as any bad one.
    const body = parseJsonObject(await readBody(req, { maxBytes: 64 * 1024, timeoutMs: 10_000 }));
    const ids = _ids(body['ids'], 'ids');
    if (path === '/api/resolve') {
      if (source.resolve === undefined) throw _NOT_FOUND;
      return _send(res, 200, await source.resolve(ids));
    }
    // `force` is true (every id) or the ids to force: the ones the page offered forcing for.
    const force = body['force'] === true ||
      (Array.isArray(body['force']) && body['force'].length > 0 && _ids(body['force'], 'force'));
    return _send(res, 200, await source.replay(ids, { dryRun: body['dryRun'] === true, force }));
  }
  if (path === '/api/retry' || path === '/api/redeliver') return _runs(req, res, source, path);
  throw _NOT_FOUND;
}

// A hook's Pause or Resume button, as `hooks-ingress pause` and `resume` do.
async function _pause(req: IncomingMessage, res: ServerResponse, pause: NonNullable<InspectorSource['pause']>) {
  const body = parseJsonObject(await readBody(req, { maxBytes: 4 * 1024, timeoutMs: 10_000 }));
  const { hook, paused } = body;
  if (typeof hook !== 'string' || hook === '' || hook.length > 256 || typeof paused !== 'boolean') {
    throw new HttpError(
      400,
      ErrorCode.InvalidPayload,
      'the body must be {"hook": a hook name, "paused": true or false}',
    );
  }
  return _send(res, 200, await pause(hook, paused));
}

// A run's buttons: one run retried (or, with `check`, judged) or its reply sent again, as the
// commands do; capped and timed like the other bodies.
async function _runs(req: IncomingMessage, res: ServerResponse, source: InspectorSource, path: string): Promise<void> {
  const body = parseJsonObject(await readBody(req, { maxBytes: 64 * 1024, timeoutMs: 10_000 }));
  const ids = _ids(body['ids'], 'ids');
  if (path === '/api/retry') {
    if (source.retry === undefined) throw _NOT_FOUND;
    return _send(res, 200, await source.retry(ids, { check: body['check'] === true }));
  }
  if (source.redeliver === undefined) throw _NOT_FOUND;
  return _send(res, 200, await source.redeliver(ids));
}

// A list of 1 to 1000 entry ids from a posted body, or the body's problem.
function _ids(value: unknown, name: string): string[] {
  if (
    !Array.isArray(value) || value.length === 0 || value.length > 1000 ||
    !value.every((x) => typeof x === 'string' && x.length <= 200)
  ) {
    throw new HttpError(400, ErrorCode.InvalidPayload, `${name} must be a list of 1 to 1000 entry ids`);
  }
  return value as string[];
}

// An error becomes its answer; anything unexpected a bare 500, logged without the URL (a login
// code may be in it). An answer already on its way is cut off.
function _failed(req: IncomingMessage, res: ServerResponse, error: unknown, log: Logger): void {
  if (res.headersSent) return void res.destroy();
  if (error instanceof HttpError) {
    const answer = errorAnswer(error);
    return _send(res, answer.status, answer.body, answer.headers);
  }
  log.error('inspector request failed', {
    method: req.method ?? '',
    error: error instanceof Error ? error.message : String(error),
  });
  _send(res, 500, { ok: false, error: 'internal error', code: ErrorCode.Internal });
}

/** The page's files, read once: from lib/ next to this module, or from lib/ beside dist/ after the build. */
export function loadPage(): Record<string, string> {
  const candidates = [new URL('./page/', import.meta.url), new URL('../../lib/inspector/page/', import.meta.url)];
  for (const dir of candidates) {
    try {
      return Object.fromEntries(_PAGE.map((name) => [name, readFileSync(new URL(name, dir), 'utf8')]));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
  }
  throw new Error('Cannot find the inspector page: lib/inspector/page/ is missing from the installation');
}

function _filter(query: URLSearchParams): InspectorFilter {
  const filter: InspectorFilter = { limit: Math.min(Math.max(Number(query.get('limit')) || 200, 1), 1000) };
  for (const key of ['hook', 'status', 'code', 'text', 'since'] as const) {
    const value = query.get(key);
    if (value !== null && value !== '') filter[key] = value.slice(0, 200);
  }
  if (query.get('more') === 'count') filter.more = true;
  return filter;
}

// A browser navigating asks for HTML; fetch(), curl and the CLI do not.
function _wantsHtml(req: IncomingMessage): boolean {
  return (req.headers.accept ?? '').includes('text/html');
}

// `Origin` must name the very host the request was sent to (already checked against this
// listener's names); a browser always sends it on a POST from a script.
function _sameOrigin(req: IncomingMessage): boolean {
  const origin = req.headers.origin;
  return origin !== undefined && origin.toLowerCase() === `http://${(req.headers.host ?? '').toLowerCase()}`;
}

// An id from the path; one whose escapes do not decode names no entry.
function _decode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    throw new HttpError(404, ErrorCode.NotFound, 'no ledger entry has that id');
  }
}

// Every value the cookie has: another program on this host can add one of the same name (a
// longer path puts it first), and one planted value must not hide the owner's.
function _cookies(header: string | undefined, name: string): string[] {
  const values: string[] = [];
  for (const part of (header ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq !== -1 && part.slice(0, eq).trim() === name) values.push(part.slice(eq + 1).trim());
  }
  return values;
}

// An IPv6 address as `Host` writes it.
function _bracketed(host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}

function _send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = body === null ? '' : JSON.stringify(body);
  res.writeHead(status, {
    ...headers,
    ...(body === null ? {} : { 'content-type': 'application/json; charset=utf-8' }),
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

function _sendText(res: ServerResponse, status: number, text: string, type: string, head: boolean): void {
  res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(text) });
  res.end(head ? undefined : text);
}
