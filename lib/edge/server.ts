// The request listener: routing (steps 1–3 of the request-handling order in http-api.md), /healthz and
// /metrics, the answer sent, counted, recorded in the ledger with its trace and logged, reload.

import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Config } from '../config/types.ts';
import { ErrorCode, HttpError } from '../errors.ts';
import { type Client, requestClient } from '../guard/address.ts';
import { type Auth, createAuth } from '../guard/auth.ts';
import { FailureLimiter, type LimiterStats } from '../guard/rate-limit.ts';
import type { Fingerprints } from '../guard/fingerprint.ts';
import { extractToken, tokenDigest } from '../guard/token.ts';
import type { CallTransform } from '../hooks/mappings.ts';
import { nameLine } from '../untrusted/wrap.ts';
import type { LogFields, Logger } from '../log.ts';
import { idSequence } from '../random.ts';
import type { Ledger } from '../store/ledger/ledger.ts';
import type { LedgerEntry } from '../model/ledger-entry.ts';
import type { Store } from '../store/journal/store.ts';
import type { RunQueue } from './capacity.ts';
import { trimSlashes } from '../text.ts';
import { type Answer, answerError, endedConnection, errorAnswer, sendAnswer } from './answer.ts';
import { createCommit } from './commit.ts';
import type { Alerts } from '../model/alerts.ts';
import { expectsContinue, type Handler, type HooksPath, hooksPath, hooksRoute } from './hooks-route.ts';
import { type Behind, createIdempotency } from './idempotency.ts';
import { createRecorder, type Recorder } from './ledger-note.ts';
import { createPlanner } from './plan.ts';
import type { Trace } from './trace.ts';
import { createRequestLog, type RequestLog } from './request-log.ts';
import type { Preview, PreviewInput } from './preview.ts';
import type { ReplayOptions, ReplayOutcome } from './replay.ts';
import type { DeliveryTaken } from './taken.ts';
import { Router, splitTarget } from './router.ts';
import { type Completions, createWaiter } from './wait.ts';
import { signedPaths } from '../guard/signatures/paths.ts';
import type { Telemetry } from './telemetry.ts';
import { type HookLimitStats, WorkLimits } from './work-limits.ts';
import { hookLimits } from '../hooks/limits.ts';

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
  runs?: RunQueue;
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
  /** The request ledger: every request to the hooks path gets an entry (unless `hooks.ledger.enabled` is off). */
  ledger?: Ledger;
  /** The owner's alerts, told of refused signatures, bounds reached and journal writes that failed. */
  alerts?: Alerts;
  /** The state directory's credential fingerprints: an entry keeps the one of its token, a replay checks it. */
  fingerprints?: Fingerprints;
  /** The hooks' rate limits and budgets, kept across reloads; one over the store and `clock` by default. */
  limits?: WorkLimits;
}

/** A request target split once per request: the path routes and is logged, the query is checked. */
type Target = ReturnType<typeof splitTarget>;

const REQUEST_ID = /^[\w.:@/+=-]{1,128}$/;
// A hook name that is its own one-line form (most are): no need to make one.
const _PLAIN_NAME = /^[\w.:@/+=-]{0,200}$/;

// What only `try` and `requests replay` use (the operator's commands, the inspector's button),
// imported at their first use: a server nobody asks never loads it.
const _operatorParts = {
  preview: () => import('./preview.ts'),
  replay: () => import('./replay.ts'),
  taken: () => import('./taken.ts'),
};

// Without a transform runner a transform mapping fails.
const _NO_TRANSFORMS: CallTransform = async () => ({
  ok: false,
  reason: 'load-failed',
  detail: 'no transform runner is configured',
});

/** The request listener, which can swap in a new configuration between requests. */
export interface App {
  (req: IncomingMessage, res: ServerResponse): void;
  /** Serves new requests with `config`; requests in flight finish on the one they started with. */
  reload(config: Config): void;
  /** The auth-failure limiter's counters, for metrics. */
  limiterStats(): LimiterStats;
  /** Requests waiting behind the first copy of their idempotency key, for metrics. */
  held(): number;
  /** The hooks' limits: what each limited today and its budget's day, for status. */
  limitStats(): HookLimitStats[];
  /** Writes the counts of request lines folded or left out so far (at shutdown, once no request is answered). */
  flushLog(): void;
  /**
   * Runs a stored request again through the current configuration and records it as a new entry
   * marked as a replay; a request that cannot be replayed is an HttpError (409, ERR_NOT_REPLAYABLE).
   * `force`: also one whose delivery id is taken, or whose token cannot be checked (recorded without its fingerprint).
   */
  replay(entry: LedgerEntry, options?: ReplayOptions): Promise<ReplayOutcome>;
  /** A stored request's delivery id and the request that took it, or `null` when the request names none. */
  taken(entry: LedgerEntry): Promise<DeliveryTaken | null>;
  /** {@link App.taken} as a judge that answers at once (under the configuration current when it is called), for a list's filter; the same function until a reload. */
  takenJudge(): Promise<(entry: LedgerEntry) => DeliveryTaken | null>;
  /** What a request (or a stored one, replayed) would become under the current configuration, with nothing committed. */
  preview(input: PreviewInput | LedgerEntry, options?: ReplayOptions): Promise<Preview>;
}

// What outlives a reload: the idempotency work in flight, and the limiter while its settings hold.
interface Shared {
  inflight: Map<string, Promise<Answer>>;
  behind: Behind;
  /** Body bytes actually read per request (a refused body counts nothing), for metrics. */
  received: WeakMap<IncomingMessage, number>;
  limiter: FailureLimiter;
  limits: string;
  /** Which request lines are written: alike refusals folded, lines bounded per second. */
  requestLog: RequestLog;
  /** The hooks' rate windows and budgets' counts. */
  workLimits: WorkLimits;
}

/** Builds the request listener: routing, the hooks path (plan, commit), and the answer sent, recorded and logged. */
export function createApp(options: AppOptions): App {
  // Request ids label and correlate, nothing more (see idSequence): no random draw per request.
  const ids = options.newId ?? idSequence();
  const now = options.now ?? performance.now.bind(performance);
  const shared: Shared = {
    inflight: new Map(),
    behind: { count: 0 },
    received: new WeakMap(),
    limiter: options.limiter ?? _limiter(options.config),
    limits: JSON.stringify(options.config.hooks.authRateLimit),
    requestLog: createRequestLog({ log: options.log, settings: options.config.log, now }),
    workLimits: options.limits ??
      new WorkLimits({ store: options.store, log: options.log, ...(options.clock ? { now: options.clock } : {}) }),
  };
  // One for the app; a reload replaces `compiled`, which each request reads once as it starts.
  const serving: _Serving = { options, shared, compiled: _compile(options, options.config, shared), ids, now };
  const app = ((req: IncomingMessage, res: ServerResponse) => _request(serving, req, res)) as App;
  app.limiterStats = () => shared.limiter.stats();
  app.flushLog = () => shared.requestLog.flush();
  app.held = () => shared.behind.count;
  app.limitStats = () => shared.workLimits.stats(hookLimits(serving.compiled.config.hooks));
  app.preview = (input, asked) => _preview(options, serving.compiled.config, input, asked);
  app.replay = async (entry, replay) =>
    (await _operatorParts.replay()).replayEntry(
      { ...serving.compiled, log: options.log, newId: ids, now, fingerprints: options.fingerprints ?? null },
      entry,
      replay,
    );
  app.taken = async (entry) =>
    (await _operatorParts.taken()).deliveryTaken(entry, serving.compiled.config, options.store);
  // One judge per configuration: a caller can tell by its identity whether a reload came in between.
  const judges = new WeakMap<_Compiled, (entry: LedgerEntry) => DeliveryTaken | null>();
  app.takenJudge = async () => {
    const { deliveryTaken } = await _operatorParts.taken();
    const { compiled } = serving;
    const judge = judges.get(compiled) ??
      ((entry: LedgerEntry) => deliveryTaken(entry, compiled.config, options.store));
    judges.set(compiled, judge);
    return judge;
  };
  app.reload = (config) => {
    const limits = JSON.stringify(config.hooks.authRateLimit);
    if (limits !== shared.limits && options.limiter === undefined) {
      Object.assign(shared, { limiter: _limiter(config), limits });
    }
    shared.requestLog.configure(config.log);
    serving.compiled = _compile(options, config, shared);
  };
  return app;
}

// What a request is served with: the options, what outlives a reload, the configuration's parts, ids and the clock.
interface _Serving {
  options: AppOptions;
  shared: Shared;
  compiled: _Compiled;
  ids: () => string;
  now: () => number;
}

// One request as it is answered: the configuration it started with, the id, the client and the target it came with.
interface _Request {
  compiled: _Compiled;
  req: IncomingMessage;
  res: ServerResponse;
  id: string;
  client: Client;
  target: Target;
  started: number;
}

// A request: its id, client and target, the route's answer (a refusal in this turn, with no promise), then answered.
function _request(serving: _Serving, req: IncomingMessage, res: ServerResponse): void {
  // Pipelined behind an answer that ended the connection: never carried out, as it can never be answered.
  if (endedConnection(req.socket)) return void req.resume();
  const { compiled, options } = serving;
  const started = serving.now();
  const incoming = req.headers['x-request-id'];
  const id = typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : serving.ids();
  const client = requestClient(req.socket, req.headers['x-forwarded-for'], compiled.config.gateway.trustedProxies);
  const r: _Request = { compiled, req, res, id, client, target: splitTarget(req.url ?? '/'), started };
  let answer: Answer | Promise<Answer>;
  try {
    answer = compiled.route(req, r.target, client, id, _inviter(req, res));
  } catch (error) {
    answer = answerError(error, id, options.log);
  }
  // One settle step serves both outcomes of the rest.
  if (answer instanceof Promise) {
    answer.then(
      (a) => _answered(serving, r, a),
      (error: unknown) => _answered(serving, r, answerError(error, id, options.log)),
    );
  } else _answered(serving, r, answer);
}

// The answer sent and counted, then the request recorded in the ledger with its trace, then its log line.
function _answered(serving: _Serving, r: _Request, answer: Answer): void {
  const { options, shared } = serving;
  const { compiled, req, id, client } = r;
  sendAnswer(req, r.res, answer, id, compiled.config.hooks.maxBodyBytes);
  const path = r.target.pathname;
  const label = compiled.hookLabel(path);
  options.telemetry?.request(
    label,
    answer.status,
    shared.received.get(req) ?? 0,
    answer.headers?.['idempotent-replayed'] === 'true',
  );
  if (answer.body['ignored'] === true) options.telemetry?.ignored(label);
  if (answer.trace?.limits !== undefined) { for (const mark of answer.trace.limits) options.telemetry?.limited(mark); }
  const duration = Math.round((serving.now() - r.started) * 10) / 10;
  const { trace } = answer;
  const hook = trace?.hook ?? compiled.hookName(path);
  const entry = hook === null || compiled.record === null
    ? undefined
    : _record(compiled.record, r, answer, trace ?? { hook, auth: 'none' }, duration);
  // On one line, as the event source shows it: a name's own line breaks cannot add a log line.
  const shown = hook === null || _PLAIN_NAME.test(hook) ? hook : nameLine(hook);
  const code = answer.body['code'];
  // Counted always; written unless folded into a count, left out by the bound or not asked for.
  if (!shared.requestLog.admit(answer.status, code, shown, client, trace?.signature)) return;
  // Only the path: the query may hold what a careless client thought was a URL token. The
  // signature's refusal names the header and the rule, never a value.
  const fields: LogFields = { id, method: req.method, path, status: answer.status, duration, client: client.address };
  if (shown !== null) fields['hook'] = shown;
  if (typeof code === 'string') fields['code'] = code;
  if (trace?.signature?.ok === false) fields['reason'] = trace.signature.reason;
  if (entry !== undefined) fields['entry'] = entry;
  options.log.info('request', fields);
}

// A request to the hooks path in the ledger; one refused before its route (a token in the URL, a
// method) is traced by its hook alone. Returns the entry's id.
function _record(record: Recorder, r: _Request, answer: Answer, trace: Trace, durationMs: number): string {
  const { req } = r;
  const url = req.url ?? '';
  const rawQuery = url.includes('?') ? url.slice(url.indexOf('?') + 1) : '';
  return record({
    requestId: r.id,
    method: req.method ?? 'GET',
    path: r.target.pathname,
    query: r.target.query,
    rawQuery,
    headers: req.headers,
    client: r.client,
    answer,
    trace,
    durationMs,
  });
}

// A dry run of a request, or of a stored one, under the current configuration.
async function _preview(
  options: AppOptions,
  config: Config,
  input: PreviewInput | LedgerEntry,
  asked: ReplayOptions = {},
): Promise<Preview> {
  const [{ previewHook }, { replayPreview, replayProblem }] = await Promise.all([
    _operatorParts.preview(),
    _operatorParts.replay(),
  ]);
  let request: PreviewInput;
  if ('id' in input) {
    const credentials = { fingerprints: options.fingerprints ?? null, ...asked };
    const problem = replayProblem(input, config, credentials);
    if (problem !== null) {
      throw new HttpError(409, ErrorCode.NotReplayable, `entry ${input.id} cannot be replayed: ${problem}`);
    }
    request = replayPreview(input, config, credentials);
  } else {
    request = input;
  }
  return previewHook({
    config,
    transforms: options.transforms ?? _NO_TRANSFORMS,
    lastRoute: () => options.store.lastRoute(),
    ...(options.clock === undefined ? {} : { clock: options.clock }),
  }, request);
}

function _limiter(config: Config): FailureLimiter {
  const { maxFailures, windowSeconds, lockoutSeconds } = config.hooks.authRateLimit;
  return new FailureLimiter({ maxFailures, windowMs: windowSeconds * 1000, lockoutMs: lockoutSeconds * 1000 });
}

// node:http answers `Expect: 100-continue` itself unless the server listens for checkContinue,
// which `listen` does: the body is invited only once the request has earned it.
function _inviter(req: IncomingMessage, res: ServerResponse): () => void {
  let invited = !expectsContinue(req);
  return () => {
    if (invited || res.headersSent) return;
    invited = true;
    res.writeContinue();
  };
}

// Everything that depends on the configuration, built once per (re)load.
interface _Compiled {
  config: Config;
  route: (
    req: IncomingMessage,
    target: Target,
    client: Client,
    id: string,
    invite: () => void,
  ) => Answer | Promise<Answer>;
  hookLabel: (path: string) => string;
  /** The hook a path names (`''` for the base path), or `null` outside the hooks path. */
  hookName: (path: string) => string | null;
  /** Makes a request's ledger entry; `null` when there is no ledger. */
  record: Recorder | null;
  /** The hooks path once a request's bytes are read (what a replay runs). */
  path: HooksPath;
}

function _compile(options: AppOptions, config: Config, shared: Shared): _Compiled {
  const { maxFailures, windowSeconds, lockoutSeconds } = config.hooks.authRateLimit;
  const auth = createAuth(
    shared.limiter,
    (client) =>
      options.log.warn('client locked out', {
        client: client.address,
        failures: maxFailures,
        windowSeconds,
        lockoutSeconds,
      }),
  );
  const clock = options.clock ?? Date.now;
  const path = _hooksPath(options, config, shared, auth, clock);
  const { fingerprints } = options;
  const hooks = hooksRoute({
    config,
    auth,
    path,
    bodyTimeoutMs: options.bodyTimeoutMs ?? 30_000,
    received: shared.received,
    clock,
    log: options.log,
    ...(fingerprints === undefined ? {} : { fingerprints }),
  });
  const router = _router(options, config, auth, hooks);
  const record = options.ledger === undefined || !config.hooks.ledger.enabled
    ? null
    : createRecorder(config, options.ledger, clock);
  return {
    config,
    route: (req, target, client, id, invite) => _route(router, req, target, client, id, invite),
    hookLabel: _hookLabels(config),
    hookName: _hookName(config),
    record,
    path,
  };
}

// The hooks path for a configuration, once a request's bytes are read: the planner, the commit
// (with the wait for runs), and the idempotency gate between them.
function _hooksPath(options: AppOptions, config: Config, shared: Shared, auth: Auth, clock: () => number): HooksPath {
  const { store } = options;
  const wait = options.completions === undefined ? undefined : createWaiter(config, store, options.completions);
  const newId = options.newId ?? randomUUID;
  const { fingerprints } = options;
  const planner = createPlanner({
    config,
    transforms: options.transforms ?? _NO_TRANSFORMS,
    lastRoute: () => store.lastRoute(),
    newId,
    clock,
    ...(fingerprints === undefined ? {} : { fingerprints }),
  });
  const commit = createCommit({
    config,
    store,
    heartbeat: options.heartbeat,
    log: options.log,
    newId,
    auth,
    ...(options.runs === undefined ? {} : { runs: options.runs }),
    ...(wait === undefined ? {} : { wait }),
    ...(options.forwarded === undefined ? {} : { forwarded: options.forwarded }),
    ...(options.alerts === undefined ? {} : { alerts: options.alerts }),
    limits: shared.workLimits,
  });
  // A delivery id stays taken as long as the ledger keeps the entries that could be replayed.
  const keepMs = Math.max(config.hooks.ledger.maxAgeSeconds, config.hooks.idempotencyTtlSeconds) * 1000;
  return hooksPath(
    planner,
    commit,
    createIdempotency(store, shared.inflight, wait, shared.behind, keepMs),
    options.log,
  );
}

// The routes: /healthz, /metrics when there is a gateway token, and the hooks path when hooks are on
// (GET too when a Meta path needs its handshake).
function _router(options: AppOptions, config: Config, auth: Auth, hooks: Handler): Router<Handler> {
  const { store } = options;
  const router = new Router<Handler>().add(
    ['GET', 'HEAD'],
    '/healthz',
    async () =>
      (await store.writable())
        ? { status: 200, body: { ok: true } }
        : { status: 503, body: { ok: false, error: 'the journal is not writable' } },
  );
  const telemetry = options.telemetry;
  if (telemetry !== undefined && config.gateway.authToken !== null) {
    router.add(['GET'], '/metrics', _metrics(telemetry, tokenDigest(config.gateway.authToken), auth));
  }
  const handshakes = [...signedPaths(config).values()].some((s) => s.scheme === 'meta');
  if (config.hooks.enabled) router.add(handshakes ? ['POST', 'GET'] : ['POST'], `${config.hooks.path}/*`, hooks);
  return router;
}

// The hook a path names (`''` for the base path), or `null` outside the hooks path.
function _hookName(config: Config): (path: string) => string | null {
  const base = config.hooks.path;
  return (
    path,
  ) => (!config.hooks.enabled
    ? null
    : path === base
    ? ''
    : path.startsWith(`${base}/`)
    ? trimSlashes(path.slice(base.length + 1))
    : null);
}

// `GET /metrics`, behind the gateway token (Bearer only: the x-*-token headers carry hook tokens).
function _metrics(telemetry: Telemetry, token: Buffer, auth: Auth): Handler {
  return ({ req, client }) => {
    const presented = extractToken({ authorization: req.headers.authorization });
    const refused = auth.authenticate(
      presented,
      [token],
      client,
      'metrics need the gateway token (Authorization: Bearer)',
    );
    if (refused !== null) return errorAnswer(refused);
    return { status: 200, body: {}, text: telemetry.render(), contentType: telemetry.contentType };
  };
}

// Finds the route, refuses a token in the URL and a method the route does not take, and runs it.
// Synchronous up to the handler: what it throws on the way is caught by the caller in the same turn.
function _route(
  router: Router<Handler>,
  req: IncomingMessage,
  target: Target,
  client: Client,
  id: string,
  invite: () => void,
): Answer | Promise<Answer> {
  const { pathname, query } = target;
  const match = router.find(pathname);
  if (match === null) throw new HttpError(404, ErrorCode.NotFound, 'not found');
  // `size` first: most targets carry no query, and iterating even an empty one costs.
  if (query.size > 0) {
    for (const k of query.keys()) {
      if (k.toLowerCase() !== 'token') continue;
      throw new HttpError(
        400,
        ErrorCode.TokenInUrl,
        'token: may not be sent in the URL (it leaks into logs); use the Authorization header',
      );
    }
  }
  const method = req.method ?? 'GET';
  if (!match.route.methods.includes(method)) {
    throw new HttpError(405, ErrorCode.MethodNotAllowed, `method ${method} not allowed`, {
      headers: { allow: match.route.methods.join(', ') },
    });
  }
  return match.route.handler({ id, req, query, name: match.rest, client, invite });
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
  const name = trimSlashes(path.slice(base.length));
  if (name === 'wake' || name === 'agent') return name;
  return config.hooks.mappings.some((m) => m.match.path === name) ? name : 'mapped';
}
