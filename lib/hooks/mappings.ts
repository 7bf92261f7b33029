// The mapping schema, the Gmail preset, matching, forEach, and building actions from a mapping.

import {
  type Action,
  type AgentAction,
  type Channel,
  type NotifyAction,
  type RequestedKey,
  SESSION_MODES,
  type SessionMode,
  type Thinking,
  THINKING_LEVELS,
  WAKE_MODES,
  type WakeAction,
  type WakeMode,
} from '../model/actions.ts';
import { checkAccount } from './agent.ts';
import { type Coalesce, coalesceAsked, coalesceSchema, toCoalesce } from './coalesce.ts';
import { SESSION_KEY_NEEDS_NOW } from './wake.ts';
import { channel as channelName } from './channel-names.ts';
import { array, boolean, check, formatIssue, literal, number, object, optional, refine, string } from '../schema.ts';
import { allowableHeader, visibleHeaders } from '../guard/credentials.ts';
import type { Signature } from '../guard/signatures/config.ts';
import { type Filter, filterHolds, filterMiss, filterSchema } from './filter.ts';
import { type Budget, budgetSchema, type RateLimit, rateLimitSchema } from './limits.ts';
import { signatureSchema } from '../guard/signatures/config.ts';
import {
  compileTemplate,
  isTemplated,
  parsePath,
  type PathSegment,
  render,
  type Template,
  type TemplateContext,
  templateSchema,
  valueAt,
} from './template.ts';
import type { TransformInput, TransformRef, TransformResult } from './transforms/protocol.ts';
import { plainLabel } from '../untrusted/label.ts';
import { type OnComplete, onCompleteSchema } from './on-complete.ts';
import { detectInjection, nameLine, requestName, wrapUntrusted } from '../untrusted/wrap.ts';
import { trimSlashes } from '../text.ts';

/** At most this many actions come from one `forEach`. */
export const MAX_FOR_EACH = 200;

// The cap /agent puts on a requested session key; a mapped action passes the same checks.
const MAX_SESSION_KEY = 512;

const template = templateSchema;

const payloadPath = refine(string({ trim: true, nonEmpty: true }), (path) => {
  const segments = parsePath(path.replace(/^payload\./, ''));
  if (segments === null) return 'must be a payload path such as "messages" or "data.items"';
  // The copy made per element writes along this path, so it must never name the prototype.
  return segments.some((s) => s === '__proto__' || s === 'prototype' || s === 'constructor')
    ? 'may not name __proto__, prototype or constructor'
    : null;
});

/** One entry of `hooks.mappings`, as the config file writes it (templates compiled). */
export const mappingSchema = object({
  id: optional(string({ trim: true, nonEmpty: true })),
  match: optional(object({ path: optional(string({ trim: true })), source: optional(string({ nonEmpty: true })) })),
  action: optional(literal('wake', 'agent', 'notify')),
  wakeMode: optional(literal(...WAKE_MODES)),
  name: optional(template),
  textTemplate: optional(template),
  messageTemplate: optional(template),
  sessionKey: optional(template),
  sessionMode: optional(literal(...SESSION_MODES)),
  agentId: optional(string({ trim: true, nonEmpty: true })),
  deliver: optional(boolean),
  channel: optional(channelName),
  to: optional(template),
  accountId: optional(template),
  model: optional(template),
  thinking: optional(template),
  timeoutSeconds: optional(number({ above: 0 })),
  allowUnsafeExternalContent: optional(boolean),
  transform: optional(object({ module: string({ nonEmpty: true }), export: optional(string({ nonEmpty: true })) })),
  forEach: optional(payloadPath),
  allowCredentialHeaders: optional(array(allowableHeader)),
  waitForCompletion: optional(boolean),
  signature: optional(signatureSchema),
  filter: optional(filterSchema),
  ledgerBody: optional(boolean),
  concurrency: optional(number({ integer: true, min: 1 })),
  maxQueued: optional(number({ integer: true, min: 1 })),
  onComplete: optional(onCompleteSchema),
  coalesce: optional(coalesceSchema),
  rateLimit: optional(rateLimitSchema),
  budget: optional(budgetSchema),
});

export type RawMapping = NonNullable<ReturnType<typeof mappingSchema>>;

/** A mapping ready to use: defaults applied, templates compiled, the transform module contained. */
export interface Mapping {
  id: string;
  match: { path?: string; source?: string };
  /** `notify`: `messageTemplate` rendered and sent to `channel`/`to` as it is, with no model call. */
  action: 'wake' | 'agent' | 'notify';
  wakeMode: WakeMode;
  name?: Template;
  textTemplate?: Template;
  messageTemplate?: Template;
  sessionKey?: Template;
  sessionMode?: SessionMode;
  agentId?: string;
  deliver?: boolean;
  channel: Channel;
  to?: Template;
  accountId?: Template;
  model?: Template;
  thinking?: Template;
  timeoutSeconds?: number;
  allowUnsafeExternalContent: boolean;
  /** `module` is the real path, checked to lie inside the transforms root. */
  transform?: TransformRef;
  forEach?: PathSegment[];
  /** Hold the answer until the mapping's runs finished, and answer their completions. */
  waitForCompletion?: boolean;
  /** The `Source:` line of the untrusted-content wrapper. */
  source: 'Email' | 'Webhook';
  /** Credential headers (lowercase) this mapping's templates and transform may read; all others stay hidden. */
  allowCredentialHeaders: ReadonlySet<string>;
  /** How senders on this mapping's path authenticate, instead of the hook token. */
  signature?: Signature;
  /** Passes the mapping over (as if `match` had not selected it) unless the request holds to it. */
  filter?: Filter;
  /** `false`: the request ledger keeps no body of this mapping's path (a sensitive sender). */
  ledgerBody?: boolean;
  /** Runs of this mapping in flight at once (work control; lib/model/work-hook.ts); absent: no limit of its own. */
  concurrency?: number;
  /** Runs of this mapping waiting or executing; past it its requests are answered 503. */
  maxQueued?: number;
  /** Where each run's completion is POSTed, signed, when the run ends (agent mappings only). */
  onComplete?: OnComplete;
  /** Requests with the same rendered key within a window become one run (lib/hooks/coalesce.ts). */
  coalesce?: Coalesce;
  /** At most `max` requests in any `windowSeconds` (limits.ts). */
  rateLimit?: RateLimit;
  /** At most `runsPerDay` runs a day (limits.ts). */
  budget?: Budget;
}

/** Applies a mapping's defaults; `transform.module` is still as written (the config resolves it). */
export function toMapping(raw: RawMapping, index: number, source: Mapping['source'] = 'Webhook'): Mapping {
  const {
    id,
    match,
    action,
    wakeMode,
    channel,
    allowUnsafeExternalContent,
    forEach,
    transform,
    allowCredentialHeaders,
    coalesce,
    ...rest
  } = raw;
  const mapping: Mapping = {
    ...rest,
    id: id ?? `mapping-${index + 1}`,
    match: { ...match, ...(match?.path === undefined ? {} : { path: trimSlashes(match.path) }) },
    action: action ?? 'agent',
    wakeMode: wakeMode ?? 'now',
    channel: channel ?? 'last',
    allowUnsafeExternalContent: allowUnsafeExternalContent ?? false,
    source,
    allowCredentialHeaders: new Set((allowCredentialHeaders ?? []).map((name) => name.toLowerCase())),
  };
  if (transform !== undefined) mapping.transform = transform;
  if (coalesce !== undefined) mapping.coalesce = toCoalesce(coalesce);
  if (forEach !== undefined) mapping.forEach = parsePath(forEach.replace(/^payload\./, ''))!;
  return mapping;
}

/** The built-in presets, by the name `hooks.presets` uses. */
export function presetMappings(
  name: 'gmail',
  options: { allowUnsafeExternalContent?: boolean; model?: string; thinking?: Thinking },
): Mapping {
  const compile = (source: string) => (compileTemplate(source) as { ok: true; template: Template }).template;
  const mapping: Mapping = {
    id: `preset:${name}`,
    match: { path: 'gmail' },
    action: 'agent',
    wakeMode: 'now',
    name: compile('Gmail'),
    sessionKey: compile('hook:gmail:{{messages[0].id}}'),
    messageTemplate: compile(
      'New email from {{messages[0].from}}\nSubject: {{messages[0].subject}}\n{{messages[0].snippet}}\n{{messages[0].body}}',
    ),
    channel: 'last',
    allowUnsafeExternalContent: options.allowUnsafeExternalContent ?? false,
    forEach: ['messages'],
    source: 'Email',
    allowCredentialHeaders: new Set(),
  };
  if (options.model !== undefined) mapping.model = compile(options.model);
  if (options.thinking !== undefined) mapping.thinking = compile(options.thinking);
  return mapping;
}

/** Whether a mapping's session key is chosen by the payload rather than written by the operator. */
export function payloadControlsKey(mapping: Mapping): boolean {
  return mapping.sessionKey !== undefined && isTemplated(mapping.sessionKey.source);
}

/** What a mapped request is, as far as a hook can tell without policy or disk. */
export interface HookRequest {
  name: string;
  payload: Record<string, unknown>;
  /** As received: credential headers are hidden per mapping before templates or transforms see them. */
  headers: Readonly<Record<string, string | readonly string[] | undefined>>;
  query: Record<string, string>;
  now: Date;
  /** The request's credential opens this path alone: a mapping without `match.path` (any path) passes it over. */
  pathOnly?: boolean;
}

/** An action built from a mapping, with where its key came from and what the content looked like. */
export interface MappedAction {
  action: Action;
  /** Injection phrasings seen in the payload text (logged; the text is still wrapped). */
  injections: string[];
  /** The placeholders of the message (or wake text) template that resolved to nothing, as written. */
  unresolved: string[];
}

export type MapOutcome =
  | { kind: 'unmatched' }
  /** `match` selected mappings, but each one's `filter` passed the request over: the first such mapping, and why (bounded by the filter's own text). */
  | { kind: 'ignored'; filteredBy: string; why: string }
  | { kind: 'skip'; mappingId: string }
  /** `detail` is the failure and the transform's message; `at` where it was raised (`ci.mjs:4`), when known. */
  | { kind: 'failed'; mappingId: string; detail: string; at?: string }
  | { kind: 'invalid'; mappingId: string; error: string }
  | { kind: 'actions'; mappingId: string; actions: MappedAction[]; forEach: boolean; waitForCompletion: boolean };

/** Calls a transform off the request thread (the server hands in the worker pool). */
export type CallTransform = (ref: TransformRef, input: TransformInput) => Promise<TransformResult>;

const overrideSchema = object({
  kind: optional(literal('wake', 'agent')),
  text: optional(string({ trim: true })),
  mode: optional(literal(...WAKE_MODES)),
  message: optional(string({ trim: true })),
  name: optional(string({ trim: true })),
  agentId: optional(string({ trim: true })),
  sessionKey: optional(string({ trim: true })),
  sessionMode: optional(literal(...SESSION_MODES)),
  wakeMode: optional(literal(...WAKE_MODES)),
  deliver: optional(boolean),
  channel: optional(channelName),
  to: optional(string({ trim: true })),
  accountId: optional(string({ trim: true })),
  model: optional(string({ trim: true })),
  thinking: optional(literal(...THINKING_LEVELS)),
  timeoutSeconds: optional(number({ above: 0 })),
  allowUnsafeExternalContent: optional(boolean),
});

type Override = NonNullable<ReturnType<typeof overrideSchema>>;

/** Whether a mapping's `match` selects a request (its `filter` aside). */
function _selects(m: Mapping, name: string, payload: Record<string, unknown>, pathOnly = false): boolean {
  return (m.match.path === undefined ? !pathOnly : m.match.path === name) &&
    (m.match.source === undefined || payload['source'] === m.match.source);
}

/** The first mapping, in order, whose `match` selects the request and whose `filter` holds for it. */
export function findMapping(
  mappings: readonly Mapping[],
  request: Pick<HookRequest, 'name' | 'payload' | 'pathOnly'> & { headers?: HookRequest['headers'] },
): Mapping | null {
  const name = trimSlashes(request.name);
  // A filter reads headers as templates do (credential headers hidden), made only when one asks.
  let context: { headers: Record<string, string>; payload: unknown } | undefined;
  const holds = (filter: Filter) =>
    filterHolds(filter, context ??= { headers: visibleHeaders(request.headers ?? {}), payload: request.payload });
  return mappings.find((m) =>
    _selects(m, name, request.payload, request.pathOnly) && (m.filter === undefined || holds(m.filter))
  ) ?? null;
}

/** Turns a mapped request into actions: first matching mapping, `forEach`, transform, templates, wrapper. */
export async function applyMappings(
  mappings: readonly Mapping[],
  request: HookRequest,
  callTransform: CallTransform,
): Promise<MapOutcome> {
  const mapping = findMapping(mappings, request);
  if (mapping === null) return _unmatched(mappings, request);
  const mappingId = mapping.id;
  // Made when a transform or a template first reads them: most mappings never do.
  let visible: Record<string, string> | undefined;
  const headers = () => (visible ??= visibleHeaders(request.headers, mapping.allowCredentialHeaders));
  const payloads = _expand(mapping, request.payload);
  if (typeof payloads === 'string') return { kind: 'invalid', mappingId, error: `mapping ${mappingId}: ${payloads}` };
  const actions: MappedAction[] = [];
  for (const payload of payloads) {
    const transformed = mapping.transform === undefined
      ? { override: {} }
      : await _transformed(mapping, mapping.transform, payload, request, headers, callTransform);
    if ('outcome' in transformed) return transformed.outcome;
    if ('skip' in transformed) continue;
    const { override } = transformed;
    const built = _build(mapping, override, {
      payload,
      get headers() {
        return headers();
      },
      query: request.query,
      path: request.name,
      now: request.now,
    });
    if (typeof built === 'string') return { kind: 'invalid', mappingId, error: `mapping ${mappingId}: ${built}` };
    actions.push(built);
  }
  if (actions.length === 0) return { kind: 'skip', mappingId };
  return {
    kind: 'actions',
    mappingId,
    actions,
    forEach: mapping.forEach !== undefined,
    waitForCompletion: mapping.waitForCompletion === true,
  };
}

// What the mapping's transform returned for one payload, checked: what it overrides, nothing to do
// (it returned null), or the outcome a failed call or an invalid result comes to.
async function _transformed(
  mapping: Mapping,
  transform: TransformRef,
  payload: unknown,
  request: HookRequest,
  headers: () => Record<string, string>,
  callTransform: CallTransform,
): Promise<{ override: Override } | { skip: true } | { outcome: MapOutcome }> {
  const mappingId = mapping.id;
  const result = await callTransform(transform, {
    payload,
    headers: headers(),
    query: request.query,
    path: request.name,
  });
  if (!result.ok) {
    return {
      outcome: {
        kind: 'failed',
        mappingId,
        detail: `${result.reason}: ${result.detail}`,
        ...(result.at === undefined ? {} : { at: result.at }),
      },
    };
  }
  if (result.value === null || result.value === undefined) return { skip: true };
  const checked = check(overrideSchema, result.value);
  if (!checked.ok) {
    return {
      outcome: {
        kind: 'invalid',
        mappingId,
        error: `mapping ${mappingId}: transform result ${checked.issues.map(formatIssue).join('; ')}`,
      },
    };
  }
  return { override: checked.value };
}

// No mapping took the request: none selected it, or the filters of those that did passed it over
// (the first of them named, with the condition it failed; the others counted).
function _unmatched(mappings: readonly Mapping[], request: HookRequest): MapOutcome {
  const name = trimSlashes(request.name);
  const selecting = mappings.filter((m) => _selects(m, name, request.payload, request.pathOnly));
  const first = selecting[0];
  if (first === undefined) return { kind: 'unmatched' };
  const why = first.filter === undefined
    ? 'no condition'
    : (filterMiss(first.filter, { headers: visibleHeaders(request.headers), payload: request.payload }) ??
      'no condition');
  const others = selecting.length - 1;
  return {
    kind: 'ignored',
    filteredBy: first.id,
    why: others === 0
      ? why
      : `${why} (and the filter${others === 1 ? '' : 's'} of ${others} more mapping${others === 1 ? '' : 's'})`,
  };
}

// One payload per element of the forEach array, each with that element standing in for the array.
function _expand(mapping: Mapping, payload: Record<string, unknown>): unknown[] | string {
  if (mapping.forEach === undefined) return [payload];
  const list = valueAt(payload, mapping.forEach);
  const where = mapping.forEach.map((s) => (typeof s === 'number' ? `[${s}]` : s)).join('.');
  if (!Array.isArray(list)) return `forEach: payload.${where} must be an array`;
  if (list.length > MAX_FOR_EACH) return `forEach: payload.${where} may hold at most ${MAX_FOR_EACH} items`;
  return list.map((item) => _replaceAt(payload, mapping.forEach!, [item]));
}

function _build(
  mapping: Mapping,
  override: Override,
  context: TemplateContext & { path: string },
): MappedAction | string {
  const rendering = _rendering(context);
  if ((override.kind ?? mapping.action) === 'notify') return _notify(mapping, override, rendering, context.path);
  const common = _common(mapping, override, rendering);
  if (typeof common === 'string') return common;
  if (common.kind === 'wake') return _wake(common, rendering.unresolved());
  const built = _agent(mapping, override, rendering, common, context.path);
  if (mapping.coalesce !== undefined && typeof built !== 'string') {
    (built.action as AgentAction).coalesce = coalesceAsked(mapping.coalesce, context);
  }
  return built;
}

/** A mapping's templates rendered for one request; `unresolved()`: the body's placeholders that rendered nothing. */
interface _Rendering {
  /** The template rendered and trimmed; `undefined` when there is none or it renders empty. */
  text(template: Template | undefined, body?: boolean): string | undefined;
  unresolved(): string[];
}

function _rendering(context: TemplateContext): _Rendering {
  let unresolved: string[] = [];
  return {
    text: (t, body = false) => {
      if (t === undefined) return undefined;
      const rendered = render(t, context);
      if (body) unresolved = rendered.unresolved;
      const trimmed = rendered.text.trim();
      return trimmed === '' ? undefined : trimmed;
    },
    unresolved: () => unresolved,
  };
}

/** What a wake and an agent action share: the body (wrapped unless unsafe content is allowed), its injections, the mode, the agent and the session key. */
interface _Common {
  kind: 'wake' | 'agent' | 'notify';
  unsafe: boolean | undefined;
  injections: string[];
  content: string;
  wakeMode: WakeMode;
  agentId: string | undefined;
  key: RequestedKey | undefined;
}

function _common(mapping: Mapping, override: Override, { text }: _Rendering): _Common | string {
  const kind = override.kind ?? mapping.action;
  const unsafe = override.allowUnsafeExternalContent ?? mapping.allowUnsafeExternalContent;
  const body = kind === 'wake'
    ? (override.text ?? text(mapping.textTemplate, true))
    : (override.message ?? text(mapping.messageTemplate, true));
  if (body === undefined || body === '') {
    return kind === 'wake' ? 'text: must be a non-empty string' : 'message: must be a non-empty string';
  }
  const injections = detectInjection(body);
  const content = unsafe ? body : wrapUntrusted(body, { source: mapping.source });
  const wakeMode = override.wakeMode ?? override.mode ?? mapping.wakeMode;
  const agentId = override.agentId || mapping.agentId;
  const sessionKey = override.sessionKey || text(mapping.sessionKey);
  if (sessionKey && sessionKey.length > MAX_SESSION_KEY) {
    return `sessionKey: must be at most ${MAX_SESSION_KEY} characters`;
  }
  // A key the operator wrote is trusted; one a transform returned or a template rendered is the payload's.
  const key = sessionKey
    ? { value: sessionKey, trusted: !override.sessionKey && !payloadControlsKey(mapping) }
    : undefined;
  return { kind, unsafe, injections, content, wakeMode, agentId, key };
}

function _wake({ content, wakeMode, agentId, key, injections }: _Common, unresolved: string[]): MappedAction | string {
  if (key !== undefined && wakeMode !== 'now') return SESSION_KEY_NEEDS_NOW;
  const wake: WakeAction = { kind: 'wake', text: content, mode: wakeMode };
  if (agentId) wake.agentId = agentId;
  if (key !== undefined) wake.sessionKey = key;
  return { action: wake, injections, unresolved };
}

function _agent(
  mapping: Mapping,
  override: Override,
  { text, unresolved }: _Rendering,
  common: _Common,
  path: string,
): MappedAction | string {
  const { content, wakeMode, agentId, key, injections, unsafe } = common;
  const thinking = override.thinking ?? text(mapping.thinking);
  if (thinking !== undefined && !(THINKING_LEVELS as readonly string[]).includes(thinking)) {
    return `thinking: must be one of ${THINKING_LEVELS.map((l) => JSON.stringify(l)).join(', ')}`;
  }
  const named = _name(mapping, override.name, text(mapping.name), path);
  const action: AgentAction = {
    kind: 'agent',
    message: content,
    name: named.name,
    wakeMode,
    deliver: override.deliver ?? mapping.deliver ?? true,
    channel: override.channel ?? mapping.channel,
  };
  if (agentId) action.agentId = agentId;
  if (key !== undefined) action.sessionKey = key;
  const to = override.to || text(mapping.to);
  if (to) action.to = to;
  // Only a `to` the operator wrote out may move the last route; a rendered or returned one is the payload's.
  if (to && !override.to && !isTemplated(mapping.to!.source)) action.toConfigured = true;
  const accountId = override.accountId || text(mapping.accountId);
  const account = checkAccount(action.deliver, accountId, action.channel, to);
  if (account !== null) return account;
  if (accountId && action.deliver) action.accountId = accountId;
  const sessionMode = override.sessionMode ?? mapping.sessionMode;
  if (sessionMode !== undefined) action.sessionMode = sessionMode;
  const model = override.model || text(mapping.model);
  if (model) action.model = model;
  if (thinking !== undefined) action.thinking = thinking as Thinking;
  const timeoutSeconds = override.timeoutSeconds ?? mapping.timeoutSeconds;
  if (timeoutSeconds !== undefined) action.timeoutSeconds = timeoutSeconds;
  if (!named.fromRequest) return { action, injections, unresolved: unresolved() };
  // Request text as much as the message: scanned like it, and wrapped where a model reads it unless
  // it is a plain label or the mapping allows unsafe content.
  if (!unsafe && !named.plain) action.untrustedName = true;
  return {
    action,
    injections: [...new Set([...injections, ...detectInjection(named.name)])],
    unresolved: unresolved(),
  };
}

// A notify message goes to the operator's channel and recipient as rendered: no model reads it, so
// it is neither wrapped nor scanned for injection phrasing (the channel's own escaping applies), and
// a transform may change its text but not where it goes.
function _notify(
  mapping: Mapping,
  override: Override,
  { text, unresolved }: _Rendering,
  path: string,
): MappedAction | string {
  const body = override.message ?? text(mapping.messageTemplate, true);
  if (body === undefined || body === '') return 'message: must be a non-empty string';
  if (override.channel !== undefined || override.to !== undefined || override.accountId !== undefined) {
    return "transform result: channel, to and accountId are the configuration's for a notify mapping";
  }
  const { channel } = mapping;
  if (channel === 'last') return 'channel: must be a concrete channel for a notify mapping, not "last"';
  const action: NotifyAction = {
    kind: 'notify',
    text: body,
    name: nameLine(override.name || text(mapping.name) || path) || 'Hook',
    channel,
  };
  if (mapping.to !== undefined) action.to = mapping.to.source.trim();
  return { action, injections: [], unresolved: unresolved() };
}

// A run's name is the operator's when the mapping writes it without placeholders or it is the path
// the mapping matches; a transform's, a rendered one, or a path no mapping names is the request's.
// `plain`: the request's name, as it came (before it is cut to one line), is a plain label.
function _name(
  mapping: Mapping,
  returned: string | undefined,
  rendered: string | undefined,
  path: string,
): { name: string; fromRequest: boolean; plain: boolean } {
  const fromRequest = returned
    ? true
    : rendered !== undefined
    ? isTemplated(mapping.name!.source)
    : mapping.match.path === undefined;
  const raw = returned || rendered || path;
  const name = (fromRequest ? requestName : nameLine)(raw);
  return { name: name || 'Hook', fromRequest: fromRequest && name !== '', plain: plainLabel(raw) };
}

// A copy of `root` with the value at `path` replaced; only the objects along the path are copied.
function _replaceAt(root: unknown, path: readonly PathSegment[], value: unknown): unknown {
  if (path.length === 0) return value;
  const [head, ...rest] = path as [PathSegment, ...PathSegment[]];
  if (Array.isArray(root)) {
    const copy: unknown[] = [...root];
    copy[Number(head)] = _replaceAt(copy[Number(head)], rest, value);
    return copy;
  }
  const copy: Record<string, unknown> = { ...(root as Record<string, unknown>) };
  copy[head] = _replaceAt(copy[head], rest, value);
  return copy;
}
