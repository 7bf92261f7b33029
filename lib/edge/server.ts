import { randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type OutgoingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { requestClient, type Client } from '../guard/address.ts';
import { parseForm, parseJsonObject, readBody } from '../guard/body.ts';
import type { Config } from '../config/types.ts';
import { ErrorCode, HttpError } from '../errors.ts';
import { createWaiter, type Completions } from './wait.ts';
import { idSequence } from '../random.ts';
import { createDispatch, type Answer, type IdempotencyKey } from './dispatch.ts';
import type { CallTransform } from '../hooks/mappings.ts';
import type { Logger } from '../log.ts';
import { FailureLimiter, type LimiterStats } from '../guard/rate-limit.ts';
import { Router, splitTarget } from './router.ts';
import type { Telemetry } from './telemetry.ts';
import type { RunRecord, Store } from '../store/store.ts';
import { extractToken, tokenDigest, tokenMatches } from '../guard/token.ts';
import { deliveryId } from '../guard/signature.ts';
import { metaHandshake, missingSignature, signatureRefusal, signedPaths, slackChallenge } from './signed.ts';

/** What the request handler needs; the CLI builds these from the config. */
export interface AppOptions {
  config: Config;
  store: Store;
  /** Asks the runtime for a heartbeat soon (a `now` wake). */
  heartbeat: { request(reason: string): void };
  log: Logger;
  /** Defaults to one built from `hooks.authRateLimit`. */
  limiter?: FailureLimiter;
  newId?: () => string;
  now?: () => number;
  /** The agent runtime's queue: accepted runs go there; a full queue answers 503. */
  runs?: { enqueue(run: RunRecord): void; readonly depth: number };
  /** Runs mapping transforms off the request thread; without it a transform mapping fails. */
  transforms?: CallTransform;
  /** Counts requests and renders `GET /metrics` (behind `gateway.auth.token`). */
  telemetry?: Telemetry;
  /** How long a body may take to arrive; 30 s unless a test needs less. */
  bodyTimeoutMs?: number;
  /** Waits for runs to finish, for `waitForCompletion`; without it those requests are answered at once. */
  completions?: Completions;
  /** Forward mode: called once new outbox entries are on disk. */
  forwarded?: () => void;
  /** The wall clock in epoch milliseconds, that signed timestamps are held against. */
  clock?: () => number;
}

interface Context {
  id: string;
  req: IncomingMessage;
  query: URLSearchParams;
  /** The hook name after `hooks.path`, decoded; `''` for the base path itself. */
  name: string;
  client: Client;
  /** Sends `100 Continue` to a client that asked for it (`Expect: 100-continue`), once. */
  invite: () => void;
}

type Handler = (ctx: Context) => Promise<Answer>;

/** A request target split once per request: the path routes and is logged, the query is checked. */
type Target = ReturnType<typeof splitTarget>;

const MAX_IDEMPOTENCY_KEY = 256;
const REQUEST_ID = /^[\w.:@/+=-]{1,128}$/;

/** The request listener, which can swap in a new configuration between requests. */
export interface App {
  (req: IncomingMessage, res: ServerResponse): void;
  /** Serves new requests with `config`; requests in flight finish on the one they started with. */
  reload(config: Config): void;
  /** The auth-failure limiter's counters, for metrics. */
  limiterStats(): LimiterStats;
}

// What outlives a reload: the idempotency work in flight, and the limiter while its settings hold.
interface Shared {
  inflight: Map<string, Promise<Answer>>;
  /** Body bytes actually read per request (a refused body counts nothing), for metrics. */
  received: WeakMap<IncomingMessage, number>;
  limiter: FailureLimiter;
  limits: string;
}

/** Builds the request listener: routing, auth, body, dispatch, and the one place errors become responses. */
export function createApp(options: AppOptions): App {
  const { log } = options;
  // Request ids label and correlate, nothing more (see idSequence): no random draw per request.
  const requestId = options.newId ?? idSequence();
  const now = options.now ?? performance.now.bind(performance);
  const shared: Shared = { inflight: new Map(), received: new WeakMap(), limiter: options.limiter ?? _limiter(options.config), limits: JSON.stringify(options.config.hooks.authRateLimit) };
  let current = _compile(options, options.config, shared);

  const app = ((req: IncomingMessage, res: ServerResponse) => {
    const { route, config, hookLabel } = current;
    const started = now();
    const incoming = req.headers['x-request-id'];
    const id = typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : requestId();
    const client = requestClient(req.socket, req.headers['x-forwarded-for'], config.gateway.trustedProxies);
    const target = splitTarget(req.url ?? '/');
    const answered = (answer: Answer & { close?: boolean }) => {
      _send(req, res, answer, id, config.hooks.maxBodyBytes);
      const path = target.pathname;
      const label = hookLabel(path);
      options.telemetry?.request(label, answer.status, shared.received.get(req) ?? 0, answer.headers?.['idempotent-replayed'] === 'true');
      if (answer.body['ignored'] === true) options.telemetry?.ignored(label);
      // Only the path: the query may hold what a careless client thought was a URL token.
      log.info('request', { id, method: req.method, path, status: answer.status, duration: Math.round((now() - started) * 10) / 10, client: client.address });
    };
    // One settle step for both outcomes (no catch-then chain): a promise and a microtask less per request.
    route(req, target, client, id, _inviter(req, res)).then(answered, (error: unknown) => answered(_answerError(error, id, log)));
  }) as App;
  app.limiterStats = () => shared.limiter.stats();
  app.reload = (config) => {
    const limits = JSON.stringify(config.hooks.authRateLimit);
    if (limits !== shared.limits && options.limiter === undefined) Object.assign(shared, { limiter: _limiter(config), limits });
    current = _compile(options, config, shared);
  };
  return app;
}

function _expectsContinue(req: IncomingMessage): boolean {
  return req.headers.expect !== undefined && /\b100-continue\b/i.test(req.headers.expect);
}

// node:http answers `Expect: 100-continue` itself unless the server listens for checkContinue,
// which `listen` does: the body is invited only once the request has earned it.
function _inviter(req: IncomingMessage, res: ServerResponse): () => void {
  let invited = !_expectsContinue(req);
  return () => {
    if (invited || res.headersSent) return;
    invited = true;
    res.writeContinue();
  };
}

function _limiter(config: Config): FailureLimiter {
  const { maxFailures, windowSeconds, lockoutSeconds } = config.hooks.authRateLimit;
  return new FailureLimiter({ maxFailures, windowMs: windowSeconds * 1000, lockoutMs: lockoutSeconds * 1000 });
}

// Everything that depends on the configuration, built once per (re)load.
function _compile(
  options: AppOptions,
  config: Config,
  shared: Shared,
): { config: Config; route: (req: IncomingMessage, target: Target, client: Client, id: string, invite: () => void) => Promise<Answer>; hookLabel: (path: string) => string } {
  const { store, heartbeat, log } = options;
  const newId = options.newId ?? randomUUID;
  const bodyTimeoutMs = options.bodyTimeoutMs ?? 30_000;
  const { limiter, inflight } = shared;
  const transforms: CallTransform =
    options.transforms ?? (async () => ({ ok: false, reason: 'load-failed', detail: 'no transform runner is configured' }));

  // One limit for the hook token and the gateway token alike: a correct token passes even while its
  // client is locked out (an attacker cannot lock the operator out); anything else is a failure,
  // answered 401, or 429 once the client is locked. A success clears nothing: whoever else sends
  // from the same address (a shared NAT) would get fresh guesses. Failures decay with the window.
  const refuse = (client: Client, refusal: string, status = 401): never => {
    const verdict = limiter.fail(client.key);
    if (verdict.locked) {
      throw new HttpError(429, ErrorCode.TooManyFailures, 'too many failed authentication attempts; retry later', {
        headers: { 'retry-after': String(verdict.retryAfterSeconds) },
      });
    }
    throw new HttpError(status, status === 403 ? ErrorCode.Forbidden : ErrorCode.Unauthorized, refusal);
  };
  const authenticate = (presented: string | null, expected: readonly (Buffer | null)[], client: Client, refusal: string) => {
    // Every candidate is compared, so the time taken does not say which one matched.
    const matches = expected.map((digest) => presented !== null && digest !== null && tokenMatches(presented, digest));
    if (!matches.includes(true)) refuse(client, refusal);
  };
  // A path whose mappings carry a signature is opened by that signature alone, never by the hook token.
  // A valid signature does not clear the client's failure count: a captured delivery of a scheme without
  // a timestamp verifies again and again, and must not reset the count of someone guessing the hook token.
  const signatures = signedPaths(config);
  const clock = options.clock ?? Date.now;

  const wait = options.completions === undefined ? undefined : createWaiter(config, store, options.completions);
  const dispatch = createDispatch({
    config,
    store,
    heartbeat,
    log,
    newId,
    transforms,
    ...(options.runs === undefined ? {} : { runs: options.runs }),
    ...(wait === undefined ? {} : { wait }),
    ...(options.forwarded === undefined ? {} : { forwarded: options.forwarded }),
  });

  // A retry with a key already answered gets that answer again; one arriving while the first is
  // still being handled waits for it, so two copies can never both take effect.
  const idempotent = async (name: string, key: string | null, work: (idem: IdempotencyKey | null) => Promise<Answer>) => {
    if (key === null) return work(null);
    const id = `${name}\n${key}`;
    // Wait while any copy is in flight; from the last check to the `set` below nothing awaits,
    // so exactly one copy goes ahead when the one before it failed.
    for (let running = inflight.get(id); running !== undefined; running = inflight.get(id)) await running.catch(() => undefined);
    const prior = store.replay(name, key);
    if (prior !== null) {
      // A first request that waited for its runs: the retry waits for the same ones (or has them at once).
      const { waitFor } = prior;
      const answer = waitFor !== undefined && wait !== undefined ? await wait({ ...prior, waitFor }) : prior;
      return { status: answer.status, body: answer.body, headers: { 'idempotent-replayed': 'true' } };
    }
    const pending = work({ scope: name, key });
    inflight.set(id, pending);
    try {
      return await pending;
    } finally {
      if (inflight.get(id) === pending) inflight.delete(id);
    }
  };

  // Digests of the configured tokens, made once per (re)load: a request hashes only what it presents.
  const hookTokens = [config.hooks.token === null ? null : tokenDigest(config.hooks.token)];
  const gmailTokens = config.hooks.gmail.hookToken === undefined ? hookTokens : [...hookTokens, tokenDigest(config.hooks.gmail.hookToken)];
  const hooks: Handler = async (ctx) => {
    const { req, name } = ctx;
    const signature = signatures.get(name);
    if (req.method === 'GET') {
      const handshake = metaHandshake(signature, ctx.query);
      return handshake.ok ? handshake.answer : refuse(ctx.client, handshake.refusal, 403);
    }
    if (signature === undefined) {
      const presented = extractToken(req.headers);
      // The gmail hook also opens to the credential gog posts with, which opens nothing else.
      authenticate(presented, name === 'gmail' ? gmailTokens : hookTokens, ctx.client, presented === null ? 'missing hook token' : 'invalid hook token');
    } else if (_expectsContinue(req)) {
      // Only what can be checked before the body: a request without the scheme's headers is refused now.
      const missing = missingSignature(signature, req, clock());
      if (missing !== null) refuse(ctx.client, missing);
    }
    if (name === '') throw new HttpError(404, ErrorCode.NotFound, 'hook name missing: POST to a path such as /wake or /agent');
    // `100 Continue` only now that the sender is authenticated: anyone else gets the final status
    // at once, and is never invited to upload.
    ctx.invite();
    const bytes = await readBody(req, { maxBytes: config.hooks.maxBodyBytes, timeoutMs: bodyTimeoutMs });
    shared.received.set(req, bytes.length);
    // Over the raw bytes, after the cap and before any parsing.
    const refusal = signature === undefined ? null : signatureRefusal(signature, req, bytes, clock());
    if (refusal !== null) refuse(ctx.client, refusal);
    // Form-posting senders (Slack commands, Twilio, ...) reach mapped hooks only; /wake and /agent take JSON.
    const form = name !== 'wake' && name !== 'agent' && /^application\/x-www-form-urlencoded\b/i.test(req.headers['content-type'] ?? '');
    // `curl -d` labels JSON as a form: a body that is a JSON object is read as JSON whatever the label says.
    const body = form && !/^\s*\{/.test(bytes.subarray(0, 64).toString('latin1')) ? parseForm(bytes) : parseJsonObject(bytes);
    const challenge = slackChallenge(signature, body);
    if (challenge !== null) return challenge;
    const call = { id: ctx.id, name, body, headers: req.headers, query: ctx.query };
    const delivery = signature === undefined ? null : deliveryId(signature, req.headers, body);
    return idempotent(name, idempotencyKey(req.headers, name === 'agent' ? body : {}, delivery), (idem) => dispatch(call, idem));
  };



  const router = new Router<Handler>().add(['GET', 'HEAD'], '/healthz', async () =>
    (await store.writable()) ? { status: 200, body: { ok: true } } : { status: 503, body: { ok: false, error: 'the journal is not writable' } },
  );
  const telemetry = options.telemetry;
  if (telemetry !== undefined && config.gateway.authToken !== null) {
    const token = tokenDigest(config.gateway.authToken);
    router.add(['GET'], '/metrics', async ({ req, client }) => {
      // Bearer only: the x-*-token headers carry hook tokens.
      const presented = extractToken({ authorization: req.headers.authorization });
      authenticate(presented, [token], client, 'metrics need the gateway token (Authorization: Bearer)');
      return { status: 200, body: {}, text: telemetry.render(), contentType: telemetry.contentType };
    });
  }
  const handshakes = [...signatures.values()].some((s) => s.scheme === 'meta');
  if (config.hooks.enabled) router.add(handshakes ? ['POST', 'GET'] : ['POST'], `${config.hooks.path}/*`, hooks);

  const route = async (req: IncomingMessage, target: Target, client: Client, id: string, invite: () => void): Promise<Answer> => {
    const { pathname, query } = target;
    const match = router.find(pathname);
    if (match === null) throw new HttpError(404, ErrorCode.NotFound, 'not found');
    // `size` first: most targets carry no query, and iterating even an empty one costs.
    if (query.size > 0) for (const k of query.keys()) {
      if (k.toLowerCase() !== 'token') continue;
      throw new HttpError(400, ErrorCode.TokenInUrl, 'token: may not be sent in the URL (it leaks into logs); use the Authorization header');
    }
    const method = req.method ?? 'GET';
    if (!match.route.methods.includes(method)) {
      throw new HttpError(405, ErrorCode.MethodNotAllowed, `method ${method} not allowed`, {
        headers: { allow: match.route.methods.join(', ') },
      });
    }
    return match.route.handler({ id, req, query, name: match.rest, client, invite });
  };

  return { config, route, hookLabel: _hookLabels(config) };
}

// A path's metrics label, remembered for the first paths seen (a bounded set: paths are the caller's).
function _hookLabels(config: Config): (path: string) => string {
  const labels = new Map<string, string>();
  return (path) => {
    let label = labels.get(path);
    if (label === undefined) {
      label = _hookLabel(config, path);
      if (labels.size < 256) labels.set(path, label);
    }
    return label;
  };
}

// A bounded label set: a caller cannot mint a new time series by inventing hook names.
function _hookLabel(config: Config, path: string): string {
  if (path === '/healthz' || path === '/metrics') return path.slice(1);
  const base = `${config.hooks.path}/`;
  if (!path.startsWith(base)) return 'other';
  const name = path.slice(base.length).replace(/^\/+|\/+$/g, '');
  if (name === 'wake' || name === 'agent') return name;
  return config.hooks.mappings.some((m) => m.match.path === name) ? name : 'mapped';
}

/**
 * The request's idempotency key: `Idempotency-Key`, else `X-OpenClaw-Idempotency-Key` (what OpenClaw's
 * own clients send), else the signed sender's delivery id, else `webhook-id`, else the body's `idempotencyKey`.
 */
export function idempotencyKey(headers: IncomingHttpHeaders, body: Record<string, unknown>, delivery: string | null = null): string | null {
  for (const candidate of [headers['idempotency-key'], headers['x-openclaw-idempotency-key'], delivery, headers['webhook-id'], body['idempotencyKey']]) {
    if (typeof candidate !== 'string') continue;
    const key = candidate.trim();
    // Over-long keys are ignored rather than refused: the request still works, just without dedupe.
    if (key !== '' && key.length <= MAX_IDEMPOTENCY_KEY) return key;
  }
  return null;
}


// The one place an error becomes an answer. Known errors say what went wrong; anything else
// is logged with the request id and answered with a bare 500 that tells the client nothing.
function _answerError(error: unknown, id: string, log: Logger): Answer & { close?: boolean } {
  if (error instanceof HttpError) {
    return { status: error.status, body: { ok: false, error: error.message, code: error.code }, headers: error.headers, close: error.close };
  }
  log.error('unexpected error', { id, error: error instanceof Error ? (error.stack ?? error.message) : String(error) });
  return { status: 500, body: { ok: false, error: 'internal error', code: ErrorCode.Internal } };
}

function _send(req: IncomingMessage, res: ServerResponse, answer: Answer & { close?: boolean }, id: string, maxBodyBytes: number): void {
  if (res.headersSent || res.destroyed) return;
  const text = answer.status === 204 ? '' : (answer.text ?? JSON.stringify(answer.body));
  // A small unread body (an early 401, 404, ...) is drained by node:http and the connection kept;
  // one that is large or of unknown length is not worth reading, so the connection goes.
  const declared = Number(req.headers['content-length']);
  const close = answer.close === true || (!req.complete && !(declared <= maxBodyBytes));
  // Built key by key (the answer's own headers first): no spread copies per response.
  const headers: OutgoingHttpHeaders = {};
  if (answer.headers !== undefined) for (const name of Object.keys(answer.headers)) headers[name] = answer.headers[name];
  if (answer.status !== 204) {
    headers['content-type'] = answer.contentType ?? 'application/json; charset=utf-8';
    headers['content-length'] = Buffer.byteLength(text);
  }
  headers['cache-control'] = 'no-store';
  headers['x-request-id'] = id;
  res.writeHead(answer.status, headers);
  res.end(req.method === 'HEAD' ? undefined : text);
  // The rest of an unread body is not ours to receive: end the connection once the answer is out.
  if (close) res.once('finish', () => _linger(req.socket));
}

/** How long a connection ended after a 413 or 408 may still deliver bytes we throw away. */
const LINGER_MS = 2_000;

// Half-close after the answer and discard (never buffer) what the client still sends, for a moment.
// Closing at once would reset the connection while the client is still sending, and a reset can
// wipe the answer from the client's receive buffer before it reads it.
function _linger(socket: Socket): void {
  socket.end();
  const timer = setTimeout(() => socket.destroy(), LINGER_MS);
  timer.unref?.();
  socket.once('close', () => clearTimeout(timer));
}

/** A started server and how to stop it. */
export interface Running {
  server: Server;
  url: string;
  /** Stops accepting, lets requests in flight finish (bounded by `graceMs`), then closes every connection. */
  close(graceMs?: number): Promise<void>;
}

/** Where to listen: an address (port 0 takes a free one), or a socket inherited from systemd. */
export type ListenTarget = { host: string; port: number } | { fd: number };

/** Listens with the given request listener. */
export async function listen(app: (req: IncomingMessage, res: ServerResponse) => void, target: ListenTarget): Promise<Running> {
  const server = createServer(app);
  // Handled by the app, which invites the body only once the request passed authentication.
  server.on('checkContinue', app);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    const ready = () => {
      server.off('error', reject);
      resolve();
    };
    if ('fd' in target) server.listen({ fd: target.fd }, ready);
    else server.listen(target.port, target.host, ready);
  });
  const address = server.address() as AddressInfo | string | null;
  let url: string;
  if (address === null || typeof address === 'string') url = `http://unix:${address ?? 'inherited socket'}`;
  else url = `http://${address.family === 'IPv6' || address.address.includes(':') ? `[${address.address}]` : address.address}:${address.port}`;
  return {
    server,
    url,
    close: (graceMs = 10_000) =>
      new Promise<void>((resolve) => {
        const force = setTimeout(() => server.closeAllConnections(), graceMs);
        server.close(() => {
          clearTimeout(force);
          resolve();
        });
        server.closeIdleConnections();
      }),
  };
}
