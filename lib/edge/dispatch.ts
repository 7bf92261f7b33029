import type { IncomingHttpHeaders } from 'node:http';
import type { AgentAction, RunSpec, WakeAction, WakeMode } from '../actions.ts';
import type { Config } from '../config/types.ts';
import { ErrorCode, HttpError } from '../errors.ts';
import { parseAgent } from '../hooks/agent.ts';
import { applyMappings, type CallTransform } from '../hooks/mappings.ts';
import { detectInjection, nameLine, requestName, wrapUntrusted } from '../untrusted/wrap.ts';
import { parseWake } from '../hooks/wake.ts';
import type { LogFields, Logger } from '../log.ts';
import { admitRun, admitWake, type AgentRules, type UnknownAgent, type WakeTarget } from '../policy/admit.ts';
import { checkRoute, routesOf, type Routes } from '../policy/route.ts';
import { forwardDestination, upstreamAgent, upstreamWake } from '../runtime/forward-body.ts';
import type { Became } from '../store/ledger-entry.ts';
import type { OutboxSpec } from '../store/outbox.ts';
import type { Effects, Store } from '../store/store.ts';
import type { EventOutcome } from '../store/session-events.ts';
import type { IdempotencyWrite, StoredAnswer } from '../store/records.ts';
import { admitEvents, reserveRuns, unavailable, type RunQueue } from './capacity.ts';
import type { Gone, Waiter } from './wait.ts';
import type { Answer } from './answer.ts';

// One concern at some 360 lines: /wake, /agent and mapped hooks share one admission, one choice of
// destination and one dry run, each written once here; split by request kind, the parts would
// import each other.

/** An authenticated hook request with its parsed body. */
export interface HookCall {
  /** The request id, for logs and for the runs it creates. */
  id: string;
  /** The hook name after `hooks.path`. */
  name: string;
  body: Record<string, unknown>;
  headers: IncomingHttpHeaders;
  query: URLSearchParams;
  /** The credential opens this hook's path alone: only mappings that name the path may take the request. */
  pathOnly?: boolean;
  /** Told the mapping and what the request became, for the request ledger. */
  note?: { mapping?: string; became?: Became };
  /** The client's departure, which ends a `waitForCompletion` wait at once. */
  gone?: Gone;
  /** A dry run (`try`, `requests replay --dry-run`): the plan goes here, and nothing is committed, queued or logged. */
  preview?: PreviewSink;
}

/** What a dry run saw: the mapping and its filter, each transform call, each action, what would have been logged. */
export interface PreviewSink {
  mapping?: string;
  /** Whether a mapping's `match` and `filter` took the request (`ignored`: filtered out; `unmatched`: no mapping). */
  filter?: 'matched' | 'ignored' | 'unmatched';
  transforms: ({ ok: true; value: unknown } | { ok: false; error: string })[];
  actions: PreviewAction[];
  warnings: string[];
}

/** One action a dry run would take: the text as the agent would read it, the placeholders that found nothing, and the run's policy decisions. */
export interface PreviewAction {
  kind: 'wake' | 'agent';
  text: string;
  unresolved: string[];
  mode?: WakeMode;
  /** A wake's agent and session, when not the default agent's main session. */
  target?: WakeTarget;
  run?: Pick<RunSpec, 'name' | 'agentId' | 'sessionKey' | 'sessionMode' | 'model' | 'thinking' | 'channel' | 'to' | 'accountId' | 'deliver' | 'timeoutSeconds'>;
}

/** The hook path and key a request is made idempotent by (and how long, when not the default). */
export type IdempotencyKey = Pick<IdempotencyWrite, 'scope' | 'key' | 'ttlMs'>;

/** What dispatch reads and writes of the store. */
export type DispatchStore = Pick<Store, 'commit' | 'lastRoute' | 'backlog'>;

export interface DispatchOptions {
  config: Config;
  store: DispatchStore;
  heartbeat: { request(reason: string): void };
  log: Logger;
  newId: () => string;
  transforms: CallTransform;
  /** The agent runtime's queue: accepted runs go there; a full queue answers 503. */
  runs?: RunQueue;
  /** Holds a `waitForCompletion` answer until its runs finished; without it such requests are answered at once. */
  wait?: Waiter;
  /** Forward mode: told when new outbox entries are on disk, so it sends them at once. */
  forwarded?: () => void;
}

/** Handles one authenticated hook call; `idem` is the key the answer is remembered under. */
export type Dispatch = (call: HookCall, idem: IdempotencyKey | null) => Promise<Answer>;

// What the handlers share: the options and where accepted actions go.
interface _Context extends DispatchOptions {
  destination: _Destination;
  /** `hooks.unknownPayloadFields` is `log`: /wake and /agent accept fields they do not know, and say so. */
  acceptUnknown: boolean;
}

/**
 * Where accepted actions go, chosen once when the dispatcher is built: into this process's store
 * and runtime, or, in forward mode, into the outbox bound for the upstream gateway.
 */
interface _Destination {
  /** The configured channels a run's reply is checked against; `null` in forward mode, where the upstream delivers. */
  routes: Routes | null;
  /** Why the upstream would refuse a run's destination (forward mode), or null. */
  unsendable(run: RunSpec): string | null;
  /** The agents a run may go to (in forward mode the upstream's), and what an id that is not among them becomes. */
  agents: AgentRules;
  unknownAgent(hook: string): UnknownAgent;
  /** Records what a request was accepted for, then answers it. */
  accept(ctx: _Context, call: HookCall, accepted: _Accepted, idem: IdempotencyKey | null, answer: Answer): Promise<Answer>;
}

/** What a request was accepted for, its actions in order. */
interface _Accepted {
  actions: readonly ({ kind: 'wake'; action: WakeAction; target: WakeTarget } | { kind: 'agent'; action: AgentAction; run: RunSpec })[];
  /** Where its wakes' events come from (`wake`, `hook:<name>`); a `now` one requests a heartbeat from there. */
  source: string;
  /** Whether the request asked to be answered when its runs finished. */
  wait: boolean;
  /** Names a wake text that is too long. */
  field: (i: number) => string;
  /** Said once the actions are recorded. */
  recorded?: () => void;
}

// Local: events for the main session and runs for this runtime, in one commit.
const _LOCAL = {
  async accept(ctx, call, accepted, idem, answer) {
    const { source } = accepted;
    // A wake is a system event of its target's session; one equal to that session's newest unread event coalesces into it.
    const events = accepted.actions.flatMap((a) =>
      a.kind === 'wake' ? [{ kind: 'system' as const, text: a.action.text, source, mode: a.action.mode, requestId: call.id, ...a.target, coalesce: true }] : [],
    );
    const runs = accepted.actions.flatMap((a) => (a.kind === 'agent' ? [a.run] : []));
    const waitFor = accepted.wait && runs.length > 0 && ctx.wait !== undefined ? runs.map((r) => r.runId) : undefined;
    const told = (outcomes: readonly EventOutcome[]) => _withOutcome(answer, outcomes);
    const idemFor = idem === null ? undefined : (outcomes: readonly EventOutcome[]) => _remember(idem, call, told(outcomes), waitFor)!;
    const outcomes = await _commit(ctx, call, { events, runs }, idemFor, accepted.field);
    accepted.recorded?.();
    if (events.some((e) => e.mode === 'now')) ctx.heartbeat.request(source);
    return waitFor === undefined ? told(outcomes) : ctx.wait!({ ...told(outcomes), waitFor }, call.gone);
  },
} satisfies Pick<_Destination, 'accept'>;

// Forward mode: the actions as the upstream gateway's /wake and /agent take them, into the outbox.
const _FORWARD = {
  routes: null,
  unsendable: forwardDestination,
  async accept(ctx, call, accepted, idem, answer) {
    const outbox = accepted.actions.map((a) => (a.kind === 'wake' ? _outboxWake(ctx, a.action, a.target, call) : _outboxAgent(ctx, a.action, a.run, call)));
    // Queued for the upstream, which decides on its own whether it coalesces.
    const told = _withOutcome(answer, accepted.actions.flatMap((a) => (a.kind === 'wake' ? ['queued' as const] : [])));
    await _commitForward(ctx, call, outbox, _remember(idem, call, told));
    accepted.recorded?.();
    return told;
  },
} satisfies Omit<_Destination, 'agents' | 'unknownAgent'>;

/**
 * Turns a hook request into its effects: `/wake` and `/agent` by their schemas, any other name
 * through the mappings; every action through policy; all of a request's effects (and its
 * idempotency key) into the store as one commit, and the accepted runs to the runtime.
 */
export function createDispatch(options: DispatchOptions): Dispatch {
  const { config } = options;
  const { forward } = config.hooks;
  const destination: _Destination =
    forward === null
      ? // A /wake naming an agent this server does not have is refused, as the gateway refuses it; a run's falls back to the default.
        { ..._LOCAL, routes: routesOf(config.channels), unsendable: () => null, agents: config, unknownAgent: (hook) => (hook === 'wake' ? 'refuse' : 'default') }
      : { ..._FORWARD, ..._upstreamAgents(config, forward.agents) };
  const ctx: _Context = { ...options, destination, acceptUnknown: config.hooks.unknownPayloadFields === 'log' };
  return (call, idem) => (call.name === 'wake' ? _wake(ctx, call, idem) : call.name === 'agent' ? _agent(ctx, call, idem) : _mapped(ctx, call, idem));
}

async function _wake(ctx: _Context, call: HookCall, idem: IdempotencyKey | null): Promise<Answer> {
  const parsed = parseWake(call.body, ctx.acceptUnknown);
  if (!parsed.ok) throw new HttpError(400, ErrorCode.InvalidPayload, parsed.error);
  _logUnknown(ctx, call, parsed.ignored);
  const target = _admitWake(ctx, call, parsed.action, '');
  const answer: Answer = { status: 200, body: { ok: true, mode: parsed.action.mode } };
  const { text, mode } = parsed.action;
  if (call.preview !== undefined) {
    call.preview.actions.push({ kind: 'wake', text, unresolved: [], mode, ...(Object.keys(target).length === 0 ? {} : { target }) });
    return answer;
  }
  return ctx.destination.accept(ctx, call, { actions: [{ kind: 'wake', action: parsed.action, target }], source: 'wake', wait: false, field: () => 'text' }, idem, answer);
}

async function _agent(ctx: _Context, call: HookCall, idem: IdempotencyKey | null): Promise<Answer> {
  const parsed = parseAgent(call.body, ctx.acceptUnknown);
  if (!parsed.ok) throw new HttpError(400, ErrorCode.InvalidPayload, parsed.error);
  _logUnknown(ctx, call, parsed.ignored);
  const { message, name, untrustedName } = parsed.action;
  // A name the request gave is request text as much as the message is.
  _warnInjection(ctx, call, call.name, untrustedName === true ? _union(detectInjection(message), detectInjection(name)) : detectInjection(message));
  parsed.action.message = wrapUntrusted(message, { source: 'Webhook' });
  parsed.action.name = (untrustedName === true ? requestName(name) : nameLine(name)) || 'Hook';
  const run = _admit(ctx, call, parsed.action, '');
  const answer: Answer = { status: 202, body: { ok: true, runId: run.runId, sessionKey: run.sessionKey, agentId: run.agentId, channel: run.channel } };
  if (call.preview !== undefined) {
    call.preview.actions.push({ kind: 'agent', text: run.message, unresolved: [], mode: run.wakeMode, run: _decisions(run) });
    return answer;
  }
  const accepted: _Accepted = { actions: [{ kind: 'agent', action: parsed.action, run }], source: 'agent', wait: parsed.action.waitForCompletion === true, field: () => 'message' };
  return ctx.destination.accept(ctx, call, accepted, idem, answer);
}

async function _mapped(ctx: _Context, call: HookCall, idem: IdempotencyKey | null): Promise<Answer> {
  const { name } = call;
  const request = { name, payload: call.body, headers: call.headers, query: Object.fromEntries(call.query), now: new Date(), pathOnly: call.pathOnly === true };
  const preview = call.preview;
  const outcome = await applyMappings(ctx.config.hooks.mappings, request, preview === undefined ? ctx.transforms : _watched(ctx.transforms, preview));
  if (call.note !== undefined && 'mappingId' in outcome) call.note.mapping = outcome.mappingId;
  if (preview !== undefined) {
    if ('mappingId' in outcome) preview.mapping = outcome.mappingId;
    preview.filter = outcome.kind === 'unmatched' || outcome.kind === 'ignored' ? outcome.kind : 'matched';
  }
  switch (outcome.kind) {
    case 'unmatched':
      throw new HttpError(404, ErrorCode.NotFound, 'no hook with this name');
    case 'ignored':
      // Senders post every event type; one the operator filtered out is acknowledged, not failed (the ledger notes it).
      if (call.note !== undefined) call.note.became = { ignored: true };
      return { status: 200, body: { ok: true, ignored: true } };
    case 'skip':
      if (call.note !== undefined) call.note.became = { skipped: true };
      return { status: 204, body: {} };
    case 'invalid':
      throw new HttpError(400, ErrorCode.InvalidPayload, outcome.error);
    case 'failed':
      _say(ctx, call, 'error', 'hook mapping failed', { id: call.id, mapping: outcome.mappingId, detail: outcome.detail });
      throw new HttpError(500, ErrorCode.MappingFailed, 'hook mapping failed');
  }
  const source = `hook:${nameLine(name)}`;
  const events: Effects['events'] & {} = [];
  const runs: RunSpec[] = [];
  const accepted: _Accepted['actions'][number][] = [];
  // Said once the request is accepted: a refused one left nothing behind to explain.
  const hollow: LogFields[] = [];
  for (const { action, injections, unresolved } of outcome.actions) {
    _warnInjection(ctx, call, nameLine(name), injections);
    if (action.kind === 'wake') {
      const target = _admitWake(ctx, call, action, `mapping ${outcome.mappingId}: `);
      events.push({ kind: 'system', text: action.text, source, mode: action.mode, requestId: call.id, ...target });
      accepted.push({ kind: 'wake', action, target });
      if (unresolved.length > 0) hollow.push({ placeholders: unresolved.join(',') });
      continue;
    }
    const run = _admit(ctx, call, action, `mapping ${outcome.mappingId}: `);
    runs.push(run);
    accepted.push({ kind: 'agent', action, run });
    if (unresolved.length > 0) hollow.push({ runId: run.runId, placeholders: unresolved.join(',') });
  }
  const answer = _mappedAnswer(outcome.forEach, runs, events);
  if (preview !== undefined) {
    let r = 0;
    let w = 0;
    for (const { action, unresolved } of outcome.actions) {
      const target = action.kind === 'wake' ? accepted.filter((a) => a.kind === 'wake')[w++]!.target : {};
      if (action.kind === 'wake') preview.actions.push({ kind: 'wake', text: action.text, unresolved, mode: action.mode, ...(Object.keys(target).length === 0 ? {} : { target }) });
      else preview.actions.push({ kind: 'agent', text: action.message, unresolved, mode: action.wakeMode, run: _decisions(runs[r++]!) });
    }
    return answer;
  }
  const warnHollow = () => {
    for (const fields of hollow) ctx.log.warn('template placeholders resolved to nothing', { id: call.id, hook: nameLine(name), mapping: outcome.mappingId, ...fields });
  };
  const field = (i: number) => `mapping ${outcome.mappingId}: wake text${events.length > 1 ? ` [${i}]` : ''}`;
  return ctx.destination.accept(ctx, call, { actions: accepted, source, wait: outcome.waitForCompletion, field, recorded: warnHollow }, idem, answer);
}

// What a mapped request answers: its run (or runs, for forEach), else the wake's mode.
function _mappedAnswer(forEach: boolean, runs: readonly RunSpec[], events: NonNullable<Effects['events']>): Answer {
  const first = runs[0];
  if (forEach) {
    return runs.length > 0
      ? { status: 202, body: { ok: true, runIds: runs.map((r) => r.runId), ...(events.length > 0 ? { events: events.length } : {}) } }
      : { status: 200, body: { ok: true, mode: events[0]!.mode, events: events.length } };
  }
  return first !== undefined
    ? { status: 202, body: { ok: true, runId: first.runId, sessionKey: first.sessionKey, agentId: first.agentId, channel: first.channel } }
    : { status: 200, body: { ok: true, mode: events[0]!.mode } };
}

/**
 * The one admission of an agent action, for `/agent` and mapped hooks alike: every policy rule,
 * then the route, since a reply that could never be delivered is refused now, while the sender can
 * still fix it (in forward mode the upstream delivers: its channels, not ours, decide what is
 * routable, and a destination it cannot express is refused here). `label` starts the message (which mapping refused it).
 */
function _admit(ctx: _Context, call: HookCall, action: AgentAction, label: string): RunSpec {
  const { routes, agents, unknownAgent, unsendable } = ctx.destination;
  const admitted = admitRun(action, call.name, agents, ctx.newId, unknownAgent(call.name));
  if (!admitted.ok) throw new HttpError(400, ErrorCode.NotAllowed, `${label}${admitted.error}`);
  const run = admitted.value;
  const unroutable = routes === null ? unsendable(run) : run.deliver ? checkRoute(routes, ctx.store.lastRoute(), run.channel, run.to) : null;
  if (unroutable !== null) throw new HttpError(400, ErrorCode.InvalidPayload, `${label}${unroutable}`);
  return { ...run, requestId: call.id };
}

// A wake's agent and session under the rules of an agent run, among the destination's agents.
function _admitWake(ctx: _Context, call: HookCall, action: WakeAction, label: string): WakeTarget {
  const { agents, unknownAgent } = ctx.destination;
  const admitted = admitWake(action, agents, unknownAgent(call.name));
  if (!admitted.ok) throw new HttpError(400, ErrorCode.NotAllowed, `${label}${admitted.error}`);
  return admitted.value;
}

// The answer to a request that added wakes says what became of them, as OpenClaw's does:
// `queued` when any became an event, `coalesced` when each was already its session's newest unread one.
function _withOutcome(answer: Answer, outcomes: readonly EventOutcome[]): Answer {
  if (outcomes.length === 0) return answer;
  return { ...answer, body: { ...answer.body, eventOutcome: outcomes.includes('queued') ? 'queued' : 'coalesced' } };
}

// Bounds are checked (and queue slots held) with no await before the commit, so requests that
// arrive together are counted together; the slots go back once the runs are queued or refused.
// `field` names a wake text that is too long.
async function _commit(
  ctx: _Context,
  call: HookCall,
  effects: Effects,
  idem: ((outcomes: readonly EventOutcome[]) => IdempotencyWrite) | undefined,
  field: (i: number) => string,
): Promise<EventOutcome[]> {
  const events = effects.events ?? [];
  admitEvents(ctx.store, ctx.config, events.filter((e) => e.kind === 'system').map((e) => e.text), field);
  const release = reserveRuns(ctx.runs, effects.runs?.length ?? 0, ctx.config);
  try {
    const committed = await ctx.store.commit(effects, idem);
    for (const run of committed.runs) ctx.runs?.enqueue(run);
    if (call.note !== undefined) call.note.became = _became(committed.events.map((e) => e.seq), committed.runs.map((r) => r.runId));
    return committed.outcomes;
  } catch (error) {
    throw unavailable(error);
  } finally {
    release();
  }
}

/**
 * Forward mode's agents: the upstream's, when hooks.forward.agents lists them (its default first;
 * a request's unknown id is refused there, so here too; a mapping's falls back to the default, as
 * there). With no list every requested id is kept as sent and left to the upstream to resolve.
 */
function _upstreamAgents(config: Config, listed: readonly string[] | null): Pick<_Destination, 'agents' | 'unknownAgent'> {
  if (listed === null) return { agents: config, unknownAgent: () => 'keep' };
  const agents = { ...config.agents, list: listed.map((id) => ({ id })), defaultAgentId: listed[0] ?? config.agents.defaultAgentId };
  return { agents: { ...config, agents }, unknownAgent: (hook) => (hook === 'agent' || hook === 'wake' ? 'refuse' : 'default') };
}

// The outbox entries of forward mode: what the upstream gateway's /wake and /agent take.
function _outboxWake(ctx: _Context, action: WakeAction, target: WakeTarget, call: HookCall): OutboxSpec {
  // The agent as the request or mapping named it, unless it fell back to the default (then the upstream's own choice, hooks.forward.agentId).
  const resolved = (target.agentId ?? ctx.destination.agents.agents.defaultAgentId).toLowerCase();
  const { agentId, ...rest } = action;
  const sent = agentId !== undefined && agentId.toLowerCase() === resolved ? { ...rest, agentId } : rest;
  return { id: ctx.newId(), target: 'wake', body: upstreamWake(sent, ctx.config.hooks.forward?.agentId), hook: call.name, requestId: call.id };
}

function _outboxAgent(ctx: _Context, action: AgentAction, run: RunSpec, call: HookCall): OutboxSpec {
  return { id: ctx.newId(), target: 'agent', body: upstreamAgent(action, run), hook: call.name, requestId: call.id, runId: run.runId };
}

async function _commitForward(ctx: _Context, call: HookCall, outbox: OutboxSpec[], idem: IdempotencyWrite | undefined): Promise<void> {
  await ctx.store.commit({ outbox }, idem).catch((error: unknown) => {
    throw unavailable(error);
  });
  if (call.note !== undefined) call.note.became = { outbox: outbox.map((o) => o.id) };
  ctx.forwarded?.();
}

// What a commit made, for the ledger: only the kinds it made.
function _became(events: number[], runs: string[]): Became {
  const became: Became = {};
  if (events.length > 0) became.events = events;
  if (runs.length > 0) became.runs = runs;
  return became;
}

function _union(a: readonly string[], b: readonly string[]): string[] {
  return [...new Set([...a, ...b])];
}

function _warnInjection(ctx: _Context, call: HookCall, hook: string, kinds: readonly string[]): void {
  if (kinds.length > 0) _say(ctx, call, 'warn', 'possible prompt injection (content wrapped)', { id: call.id, hook, kinds: kinds.join(',') });
}

// A log line, or in a dry run a warning of the preview (it is not this server's request to log).
function _say(ctx: _Context, call: HookCall, level: 'info' | 'warn' | 'error', message: string, fields: LogFields): void {
  if (call.preview === undefined) return ctx.log[level](message, fields);
  const { id: _id, hook: _hook, ...rest } = fields;
  const detail = Object.entries(rest).map(([k, v]) => `${k}=${String(v)}`).join(' ');
  call.preview.warnings.push(detail === '' ? message : `${message}: ${detail}`);
}

// A transform caller that also tells the preview what each call returned.
function _watched(call: CallTransform, preview: PreviewSink): CallTransform {
  return async (ref, input) => {
    const result = await call(ref, input);
    preview.transforms.push(result.ok ? { ok: true, value: result.value } : { ok: false, error: `${result.reason}: ${result.detail}` });
    return result;
  };
}

// The policy decisions of an admitted run, as a dry run shows them.
function _decisions(run: RunSpec): NonNullable<PreviewAction['run']> {
  const { name, agentId, sessionKey, sessionMode, model, thinking, channel, to, accountId, deliver, timeoutSeconds } = run;
  const optional = { sessionMode, model, thinking, to, accountId, timeoutSeconds };
  return { name, agentId, sessionKey, channel, deliver, ...Object.fromEntries(Object.entries(optional).filter(([, v]) => v !== undefined)) };
}

// Field names are the caller's text: a few of them, each made one short line.
const _SHOWN_FIELDS = 10;

function _logUnknown(ctx: _Context, call: HookCall, ignored: readonly string[]): void {
  if (ignored.length === 0) return;
  const shown = ignored.slice(0, _SHOWN_FIELDS).map((field) => nameLine(field, 64));
  const fields = ignored.length > _SHOWN_FIELDS ? `${shown.join(',')},… (${ignored.length} in all)` : shown.join(',');
  _say(ctx, call, 'info', 'unknown payload fields ignored', { id: call.id, hook: call.name, fields });
}


// A request that waits is remembered with its runs, so a retry waits for the same ones.
function _remember(idem: IdempotencyKey | null, call: HookCall, answer: StoredAnswer, waitFor?: readonly string[]): IdempotencyWrite | undefined {
  if (idem === null) return undefined;
  return { ...idem, status: answer.status, body: answer.body, requestId: call.id, ...(waitFor === undefined ? {} : { waitFor }) };
}
