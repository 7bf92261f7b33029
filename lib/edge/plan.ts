// Everything that decides what a request to the hooks path comes to, and nothing that acts on it:
// the signature over the raw bytes, the body parsed, the idempotency key, then the hook's actions
// through the mappings (transforms called) and policy. No journal write, no run queued, no log line
// (lines to write are part of the plan), no count in the failure limiter (a refusal to count is).
// What sets a live request apart from a stored one or a dry run is an input (`Judged`), not a mode.

import type { IncomingHttpHeaders } from 'node:http';
import type { NoticeSpec, RunSpec, WakeAction } from '../model/actions.ts';
import type { Config } from '../config/types.ts';
import { ErrorCode, HttpError } from '../errors.ts';
import type { Client } from '../guard/address.ts';
import { parseForm, parseJsonObject } from '../guard/body.ts';
import type { Signature } from '../guard/signatures/config.ts';
import { formAsSigned, signedPaths, slackChallenge } from '../guard/signatures/paths.ts';
import { presentedSecret } from '../guard/signatures/verify.ts';
import type { Fingerprints } from '../guard/fingerprint.ts';
import { parseAgent } from '../hooks/agent.ts';
import { applyMappings, type CallTransform, type MapOutcome } from '../hooks/mappings.ts';
import { parseWake } from '../hooks/wake.ts';
import { withCoalesce } from '../hooks/coalesce.ts';
import type { LogFields } from '../log.ts';
import type { Route } from '../model/records.ts';
import { type Cause, isCause, makeCause } from '../model/cause.ts';
import { detectInjection, nameLine, requestName, wrapUntrusted } from '../untrusted/wrap.ts';
import { type Admission, admitAgent, admitNotice, admitWakeTarget, createAdmission } from './admission.ts';
import type { Answer } from './answer.ts';
import { callbackFor } from './callback-target.ts';
import { hookKey, type RequestKey } from './idempotency.ts';
import { signatureVerdict } from './ledger-note.ts';
import type { PlannedAction, Said, Trace, TransformCall } from './trace.ts';
import type { Gone } from './wait.ts';
import type { Effects } from '../store/journal/store.ts';
import { extend } from '../object.ts';

/** How a request is judged: a live one, a stored one sent again, a dry run differ only here. */
export interface Judged {
  /** A signed timestamp is held against the clock's tolerance (a request just received). */
  fresh: boolean;
  /** A shared-token signature (`gitlab`, `token`) passed when the request arrived: its verdict is on record, the token is not kept. */
  verified?: boolean;
  /** Idempotent by its key: a copy of a request whose key is taken is a duplicate (a dry run is never one). */
  keyed: boolean;
  /** A replay run with `--force`: it runs even when its key is taken, and takes it. */
  again?: boolean;
  /** A refused signature counts against the client in the failure limiter. */
  counted: boolean;
  /** Every step is planned: a failed signature does not end the plan, a handshake is taken as any request (a dry run). */
  whole?: boolean;
}

/** A request received now. */
export const LIVE: Judged = Object.freeze({ fresh: true, keyed: true, counted: true });

/** The bytes of one hook request and what came with them: what plan reads. */
export interface HookRequest {
  /** The request id. */
  id: string;
  name: string;
  headers: IncomingHttpHeaders;
  query: URLSearchParams;
  /** The query as received, which some schemes sign. */
  rawQuery: string;
  bytes: Buffer;
  client: Client;
  /** What was decided before the body (the hook, how it authenticated), or a replay's record. */
  trace: Trace;
  judged: Judged;
  /** The credential opens this hook's path alone (the gmail token): only mappings that name the path may take it. */
  pathOnly?: boolean;
  /** Tells a waiting request that its client left (a live request only). */
  gone?: Gone;
  /** A replay: what its journal commit also writes (its root's record), given the status it is answered with. */
  settle?: (status: number) => Effects;
}

/** What a request was accepted for: its actions in order, and how to say so. */
export interface Accepted {
  actions: readonly PlannedAction[];
  /** Where its wakes' events come from (`wake`, `hook:<name>`); a `now` one requests a heartbeat from there. */
  source: string;
  /** The mapping that made its actions; absent for /wake and /agent (model/work-hook.ts names their hook). */
  mapping?: string;
  /** Whether the request asked to be answered when its runs finished. */
  wait: boolean;
  /** Names a wake text that is too long. */
  field: (i: number) => string;
  /** The default agent where the actions go (forward mode: the upstream's): a wake that fell back to it names none upstream. */
  defaultAgentId: string;
  /** Lines said once the actions are recorded (placeholders that found nothing): a refused request left nothing to explain. */
  recorded?: readonly Said[];
}

/** A plan: refused (with the refusal to count, when it is counted), answered with nothing to record, or accepted with its actions. */
export type Plan =
  | { kind: 'refused'; trace: Trace; refusal: HttpError; count?: string }
  | { kind: 'answered'; trace: Trace; answer: Answer }
  | { kind: 'accepted'; trace: Trace; answer: Answer; accepted: Accepted };

/** A request read up to its decisions: the body parsed and the key it is idempotent by. */
export interface Parsed {
  kind: 'parsed';
  request: HookRequest;
  trace: Trace;
  body: Record<string, unknown>;
  key: RequestKey | null;
}

/** What planning reads: the config, the transform runner, the last route (the `last` channel) and ids for runs. */
export interface PlanOptions {
  config: Config;
  transforms: CallTransform;
  lastRoute: () => Route | null;
  newId: () => string;
  /** The wall clock in epoch milliseconds, that signed timestamps are held against. */
  clock: () => number;
  /** Fingerprints a shared token (`gitlab`, `token`) that passed, for the ledger; without it none is made. */
  fingerprints?: Fingerprints;
}

/** The two halves of planning: reading (up to the idempotency gate, synchronous) and deciding. */
export interface Planner {
  read(request: HookRequest): Parsed | Plan;
  decide(parsed: Parsed): Promise<Plan>;
}

/** Plans a request whole: read, then decide (a dry run and a replay, which pass no idempotency gate). */
export async function plan(planner: Planner, request: HookRequest): Promise<Plan> {
  const read = planner.read(request);
  return read.kind === 'parsed' ? planner.decide(read) : read;
}

// What deciding works with, built once per (re)load.
interface _Context extends PlanOptions {
  admission: Admission;
  /** `hooks.unknownPayloadFields` is `log`: /wake and /agent accept fields they do not know, and say so. */
  acceptUnknown: boolean;
  signatures: ReadonlyMap<string, Signature>;
}

/** Builds the planner of one (re)load: where runs may go is chosen once (this server's channels, or forward mode's upstream). */
export function createPlanner(options: PlanOptions): Planner {
  const { config } = options;
  const admission = createAdmission(config, options.lastRoute, options.newId);
  const ctx: _Context = {
    ...options,
    admission,
    acceptUnknown: config.hooks.unknownPayloadFields === 'log',
    signatures: signedPaths(config),
  };
  return { read: (request) => _read(ctx, request), decide: (parsed) => _decide(ctx, parsed) };
}

// The fingerprint of a shared token that passed (the secret itself, which the ledger never keeps).
function _credential(ctx: _Context, signature: Signature, headers: IncomingHttpHeaders): { credential?: string } {
  const presented = ctx.fingerprints === undefined ? null : presentedSecret(signature, { headers });
  return presented === null ? {} : { credential: ctx.fingerprints!.of(presented) };
}

// The signature over the raw bytes (after the cap, before any parsing), the body, a handshake, the key.
function _read(ctx: _Context, request: HookRequest): Parsed | Plan {
  const { name, headers, bytes, judged } = request;
  let trace: Trace = extend(request.trace, { body: bytes });
  const signature = ctx.signatures.get(name);
  if (signature !== undefined && judged.verified === true) {
    trace = extend(trace, { signature: { scheme: signature.scheme, ok: true }, auth: 'signature' as const });
  } else if (signature !== undefined) {
    const signed = { headers, body: bytes, query: request.rawQuery };
    const verdict = signatureVerdict(
      judged.fresh ? signature : { ...signature, toleranceSeconds: Number.MAX_SAFE_INTEGER },
      signed,
      ctx.clock(),
    );
    trace = verdict.ok
      ? extend(trace, { signature: verdict, auth: 'signature' as const, ..._credential(ctx, signature, headers) })
      : extend(trace, { signature: verdict });
    if (!verdict.ok && judged.whole !== true) {
      const reason = verdict.reason ?? 'invalid signature';
      return {
        kind: 'refused',
        trace,
        refusal: new HttpError(401, ErrorCode.Unauthorized, reason),
        ...(judged.counted ? { count: reason } : {}),
      };
    }
  }
  if (name === '') {
    return {
      kind: 'refused',
      trace,
      refusal: new HttpError(404, ErrorCode.NotFound, 'hook name missing: POST to a path such as /wake or /agent'),
    };
  }
  let body: Record<string, unknown>;
  try {
    body = parseHookBody(name, headers, bytes, signature);
  } catch (error) {
    if (!(error instanceof HttpError)) throw error;
    return { kind: 'refused', trace, refusal: error };
  }
  const challenge = judged.whole === true ? null : slackChallenge(signature, body);
  if (challenge !== null) {
    return {
      kind: 'answered',
      trace: extend(trace, { became: { handshake: 'slack' as const } }),
      answer: { status: 200, body: { challenge } },
    };
  }
  if (!judged.keyed) return { kind: 'parsed', request, trace, body, key: null };
  const key = hookKey(request, body, signature);
  return {
    kind: 'parsed',
    request,
    trace,
    body,
    key: key !== null && judged.again === true ? extend(key, { again: true }) : key,
  };
}

/** The body as a hook reads it: a form from a form-posting sender on a mapped hook, else a JSON object (an HttpError when it is neither). */
export function parseHookBody(
  name: string,
  headers: IncomingHttpHeaders,
  bytes: Buffer,
  signature: Signature | undefined,
): Record<string, unknown> {
  // Form-posting senders (Slack commands, Twilio, ...) reach mapped hooks only; /wake and /agent take JSON.
  const form = name !== 'wake' && name !== 'agent' &&
    /^application\/x-www-form-urlencoded\b/i.test(_one(headers['content-type']));
  // `curl -d` labels JSON as a form: a body that is a JSON object is read as JSON whatever the label
  // says, unless the signature covers it as a form.
  return form && (formAsSigned(signature) || !/^\s*\{/.test(bytes.subarray(0, 64).toString('latin1')))
    ? parseForm(bytes)
    : parseJsonObject(bytes);
}

function _one(value: string | string[] | undefined): string {
  return Array.isArray(value) ? (value[0] ?? '') : (value ?? '');
}

// What deciding saw so far, kept by one decision and made into the trace once it ends.
interface _Seen {
  said: Said[] | null;
  mapping?: string;
  filter?: 'matched' | 'ignored' | 'unmatched';
  transforms?: TransformCall[];
  cause?: Cause;
}

// A decision: the answer, and what the request was accepted for (none when nothing is recorded).
interface _Decision {
  answer: Answer;
  accepted?: Accepted;
  became?: Trace['became'];
}

// `/wake` and `/agent` by their schemas, any other name through the mappings, every run through policy.
async function _decide(ctx: _Context, parsed: Parsed): Promise<Plan> {
  const { request } = parsed;
  const seen: _Seen = { said: null };
  try {
    const decided = request.name === 'wake'
      ? _wake(ctx, parsed, seen)
      : request.name === 'agent'
      ? _agent(ctx, parsed, seen)
      : await _mapped(ctx, parsed, seen);
    const trace = _traced(parsed.trace, seen, decided);
    return decided.accepted === undefined
      ? { kind: 'answered', trace, answer: decided.answer }
      : { kind: 'accepted', trace, answer: decided.answer, accepted: decided.accepted };
  } catch (error) {
    if (!(error instanceof HttpError)) throw error;
    // A policy's refusal carries the rule that refused it.
    if (isCause(error.cause)) seen.cause = error.cause;
    return { kind: 'refused', trace: _traced(parsed.trace, seen, null), refusal: error };
  }
}

// The trace with what deciding saw: a copy the keys are then added to (object.ts says why not a spread).
function _traced(trace: Trace, seen: _Seen, decided: _Decision | null): Trace {
  const out: { -readonly [K in keyof Trace]: Trace[K] } = Object.assign({}, trace);
  if (seen.mapping !== undefined) out.mapping = seen.mapping;
  if (seen.filter !== undefined) out.filter = seen.filter;
  if (seen.transforms !== undefined) out.transforms = seen.transforms;
  if (seen.said !== null) out.said = seen.said;
  if (seen.cause !== undefined) out.cause = seen.cause;
  if (decided?.accepted !== undefined) out.actions = decided.accepted.actions;
  if (decided?.became !== undefined) out.became = decided.became;
  return out;
}

function _wake(ctx: _Context, { request, body }: Parsed, seen: _Seen): _Decision {
  const parsed = parseWake(body, ctx.acceptUnknown);
  if (!parsed.ok) throw new HttpError(400, ErrorCode.InvalidPayload, parsed.error);
  _sayUnknown(request, seen, parsed.ignored);
  const target = admitWakeTarget(ctx.admission, request.name, parsed.action, '');
  const action: PlannedAction = { kind: 'wake', action: parsed.action, target, unresolved: [] };
  const accepted: Accepted = {
    actions: [action],
    source: 'wake',
    wait: false,
    field: () => 'text',
    defaultAgentId: ctx.admission.agents.agents.defaultAgentId,
  };
  return { answer: { status: 200, body: { ok: true, mode: parsed.action.mode } }, accepted };
}

function _agent(ctx: _Context, { request, body }: Parsed, seen: _Seen): _Decision {
  const parsed = parseAgent(body, ctx.acceptUnknown);
  if (!parsed.ok) throw new HttpError(400, ErrorCode.InvalidPayload, parsed.error);
  _sayUnknown(request, seen, parsed.ignored);
  const { message, name, untrustedName } = parsed.action;
  // A name the request gave is request text as much as the message is.
  _sayInjection(
    request,
    seen,
    request.name,
    untrustedName === true ? _union(detectInjection(message), detectInjection(name)) : detectInjection(message),
  );
  parsed.action.message = wrapUntrusted(message, { source: 'Webhook' });
  parsed.action.name = (untrustedName === true ? requestName(name) : nameLine(name)) || 'Hook';
  const callback = callbackFor(ctx.config, null, parsed.action.callbackUrl);
  const run = admitAgent(ctx.admission, request.name, request.id, parsed.action, '', undefined, callback);
  const answer: Answer = {
    status: 202,
    body: { ok: true, runId: run.runId, sessionKey: run.sessionKey, agentId: run.agentId, channel: run.channel },
  };
  const actions: PlannedAction[] = [{ kind: 'agent', action: parsed.action, run, unresolved: [] }];
  return {
    answer,
    accepted: {
      actions,
      source: 'agent',
      wait: parsed.action.waitForCompletion === true,
      field: () => 'message',
      defaultAgentId: ctx.admission.agents.agents.defaultAgentId,
    },
  };
}

async function _mapped(ctx: _Context, { request, body }: Parsed, seen: _Seen): Promise<_Decision> {
  const { name } = request;
  const hookRequest = {
    name,
    payload: body,
    headers: request.headers,
    query: Object.fromEntries(request.query),
    now: new Date(),
    pathOnly: request.pathOnly === true,
  };
  const outcome = await applyMappings(ctx.config.hooks.mappings, hookRequest, _watched(ctx.transforms, seen));
  if ('mappingId' in outcome) seen.mapping = outcome.mappingId;
  seen.filter = outcome.kind === 'unmatched' || outcome.kind === 'ignored' ? outcome.kind : 'matched';
  if (outcome.kind !== 'actions') return _noActions(request, seen, outcome);
  const hook = nameLine(name);
  const { actions, runs, notices, recorded, wakes } = _admitMapped(ctx, request, seen, outcome);
  const hollow = [...new Set(actions.flatMap((a) => a.unresolved))];
  if (hollow.length > 0) seen.cause = makeCause('placeholders', hollow.join(', '));
  const firstWake = actions.find((a) => a.kind === 'wake');
  const answer = _withNotices(
    _mappedAnswer(outcome.forEach, runs, wakes, firstWake?.action.mode),
    outcome.forEach,
    notices,
  );
  const field = (i: number) => `mapping ${outcome.mappingId}: wake text${wakes > 1 ? ` [${i}]` : ''}`;
  const accepted: Accepted = {
    actions,
    source: `hook:${hook}`,
    mapping: outcome.mappingId,
    wait: outcome.waitForCompletion,
    field,
    defaultAgentId: ctx.admission.agents.agents.defaultAgentId,
    ...(recorded.length > 0 ? { recorded } : {}),
  };
  return { answer, accepted };
}

// A mapping outcome with no action: answered (ignored by a filter, skipped) or refused.
function _noActions(request: HookRequest, seen: _Seen, outcome: Exclude<MapOutcome, { kind: 'actions' }>): _Decision {
  switch (outcome.kind) {
    case 'unmatched':
      throw new HttpError(404, ErrorCode.NotFound, 'no hook with this name');
    case 'ignored':
      // Senders post every event type; one the operator filtered out is acknowledged, not failed (the ledger notes it, and which filter).
      seen.cause = makeCause('filter', outcome.why, outcome.filteredBy);
      return { answer: { status: 200, body: { ok: true, ignored: true } }, became: { ignored: true } };
    case 'skip':
      return { answer: { status: 204, body: {} }, became: { skipped: true } };
    case 'invalid':
      throw new HttpError(400, ErrorCode.InvalidPayload, outcome.error);
    case 'failed':
      _say(seen, 'error', 'hook mapping failed', {
        id: request.id,
        mapping: outcome.mappingId,
        detail: outcome.detail,
      });
      seen.cause = makeCause('transform', outcome.detail, outcome.at);
      throw new HttpError(500, ErrorCode.MappingFailed, 'hook mapping failed', { cause: outcome.detail });
  }
}

// Each action a mapping built, admitted through policy: a wake to its target, an agent action as a
// run, a notify action as a delivery; the lines to write with them (injections said now,
// placeholders that found nothing recorded).
function _admitMapped(
  ctx: _Context,
  request: HookRequest,
  seen: _Seen,
  outcome: Extract<MapOutcome, { kind: 'actions' }>,
): { actions: PlannedAction[]; runs: RunSpec[]; notices: NoticeSpec[]; recorded: Said[]; wakes: number } {
  const hook = nameLine(request.name);
  const actions: PlannedAction[] = [];
  const runs: RunSpec[] = [];
  const notices: NoticeSpec[] = [];
  const recorded: Said[] = [];
  let wakes = 0;
  for (const { action, injections, unresolved } of outcome.actions) {
    _sayInjection(request, seen, hook, injections);
    const fields: LogFields = { id: request.id, hook, mapping: outcome.mappingId };
    if (action.kind === 'wake') {
      actions.push({
        kind: 'wake',
        action,
        target: admitWakeTarget(ctx.admission, request.name, action, `mapping ${outcome.mappingId}: `),
        unresolved,
      });
      wakes++;
      if (unresolved.length > 0) recorded.push(_hollow({ ...fields, placeholders: unresolved.join(',') }));
      continue;
    }
    if (action.kind === 'notify') {
      const notice = admitNotice(ctx.admission, request.name, request.id, action, `mapping ${outcome.mappingId}: `);
      notices.push(notice);
      actions.push({ kind: 'notify', action, notice, unresolved });
      if (unresolved.length > 0) {
        recorded.push(_hollow({ ...fields, deliveryId: notice.deliveryId, placeholders: unresolved.join(',') }));
      }
      continue;
    }
    const label = `mapping ${outcome.mappingId}: `;
    const run = withCoalesce(
      admitAgent(
        ctx.admission,
        request.name,
        request.id,
        action,
        label,
        outcome.mappingId,
        callbackFor(ctx.config, outcome.mappingId),
      ),
      action,
      outcome.mappingId,
      ctx.config.hooks.maxBodyBytes,
    );
    runs.push(run);
    actions.push({ kind: 'agent', action, run, unresolved });
    if (unresolved.length > 0) {
      recorded.push(_hollow({ ...fields, runId: run.runId, placeholders: unresolved.join(',') }));
    }
  }
  return { actions, runs, notices, recorded, wakes };
}

function _hollow(fields: LogFields): Said {
  return { level: 'warn', message: 'template placeholders resolved to nothing', fields };
}

// What a mapped request answers: its run (or runs, for forEach), else the wake's mode.
function _mappedAnswer(
  forEach: boolean,
  runs: readonly RunSpec[],
  wakes: number,
  mode: WakeAction['mode'] | undefined,
): Answer {
  const first = runs[0];
  if (forEach) {
    return runs.length > 0
      ? { status: 202, body: { ok: true, runIds: runs.map((r) => r.runId), ...(wakes > 0 ? { events: wakes } : {}) } }
      : { status: 200, body: { ok: true, mode, events: wakes } };
  }
  return first !== undefined
    ? {
      status: 202,
      body: {
        ok: true,
        runId: first.runId,
        sessionKey: first.sessionKey,
        agentId: first.agentId,
        channel: first.channel,
      },
    }
    : { status: 200, body: { ok: true, mode } };
}

// A notify delivery is answered 202 with its id (a forEach batch: `deliveryIds`, beside its runs and wakes).
function _withNotices(answer: Answer, forEach: boolean, notices: readonly NoticeSpec[]): Answer {
  if (notices.length === 0) return answer;
  if (!forEach) return { status: 202, body: { ok: true, deliveryId: notices[0]!.deliveryId } };
  const { mode: _mode, events, ...rest } = answer.body;
  return {
    status: 202,
    body: {
      ...rest,
      ...(typeof events === 'number' && events > 0 ? { events } : {}),
      deliveryIds: notices.map((n) => n.deliveryId),
    },
  };
}

// A transform caller that also keeps what each call returned, for the trace.
function _watched(call: CallTransform, seen: _Seen): CallTransform {
  return async (ref, input) => {
    const result = await call(ref, input);
    (seen.transforms ??= []).push(
      result.ok ? { ok: true, value: result.value } : {
        ok: false,
        error: `${result.reason}: ${result.detail}`,
        ...(result.at === undefined ? {} : { at: result.at }),
      },
    );
    return result;
  };
}

function _union(a: readonly string[], b: readonly string[]): string[] {
  return [...new Set([...a, ...b])];
}

function _say(seen: _Seen, level: Said['level'], message: string, fields: LogFields): void {
  (seen.said ??= []).push({ level, message, fields });
}

function _sayInjection(request: HookRequest, seen: _Seen, hook: string, kinds: readonly string[]): void {
  if (kinds.length > 0) {
    _say(seen, 'warn', 'possible prompt injection (content wrapped)', { id: request.id, hook, kinds: kinds.join(',') });
  }
}

// Field names are the caller's text: a few of them, each made one short line.
const _SHOWN_FIELDS = 10;

function _sayUnknown(request: HookRequest, seen: _Seen, ignored: readonly string[]): void {
  if (ignored.length === 0) return;
  const shown = ignored.slice(0, _SHOWN_FIELDS).map((field) => nameLine(field, 64));
  const fields = ignored.length > _SHOWN_FIELDS ? `${shown.join(',')},… (${ignored.length} in all)` : shown.join(',');
  _say(seen, 'info', 'unknown payload fields ignored', { id: request.id, hook: request.name, fields });
}
