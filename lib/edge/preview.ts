// A dry run of a hook request: its plan alone, under a configuration — the mapping and its
// filter, each transform's result, the rendered text with the placeholders that found nothing, and
// the policy decisions — with nothing committed, queued or logged. `try` and
// `requests replay --dry-run` both run it; the server runs it with its own config and transforms.

import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { NoticeSpec, RunSpec, WakeMode } from '../model/actions.ts';
import type { Config } from '../config/types.ts';
import { ErrorCode } from '../errors.ts';
import type { CallTransform } from '../hooks/mappings.ts';
import type { WakeTarget } from '../policy/admit.ts';
import type { SignatureVerdict } from '../model/ledger-entry.ts';
import type { Cause } from '../model/cause.ts';
import type { Route } from '../model/records.ts';
import { createPlanner, type HookRequest, type Judged, type Plan, plan } from './plan.ts';
import type { PlannedAction, Said, TransformCall } from './trace.ts';

/** A request to try: the hook, its headers, its query as received and its body bytes. */
export interface PreviewInput {
  name: string;
  headers: IncomingHttpHeaders;
  rawQuery: string;
  bytes: Buffer;
  /** A stored request whose shared token (`gitlab`, `token`) passed when it arrived: its verdict is on record. */
  verified?: boolean;
  /** Only mappings that name the path may take it (a stored request to the gmail hook). */
  pathOnly?: boolean;
}

/** One action a dry run would take: the text as the agent would read it, the placeholders that found nothing, and the run's policy decisions. */
export interface PreviewAction {
  kind: 'wake' | 'agent' | 'notify';
  text: string;
  unresolved: string[];
  mode?: WakeMode;
  /** A wake's agent and session, when not the default agent's main session. */
  target?: WakeTarget;
  run?: Pick<
    RunSpec,
    | 'name'
    | 'agentId'
    | 'sessionKey'
    | 'sessionMode'
    | 'model'
    | 'thinking'
    | 'channel'
    | 'to'
    | 'accountId'
    | 'deliver'
    | 'timeoutSeconds'
  >;
  /** A notify delivery's channel and recipient (absent: the channel's `defaultTo`). */
  notice?: Pick<NoticeSpec, 'name' | 'channel' | 'to'>;
}

/** What a request would become. */
export interface Preview {
  hook: string;
  /** The answer it would get. */
  status: number;
  /** Each transform call's result. */
  transforms: TransformCall[];
  actions: PreviewAction[];
  /** What would have been logged. */
  warnings: string[];
  code?: string;
  error?: string;
  /** A signed path's verdict over these bytes (with today's secrets; the timestamp's age not held against it). */
  signature?: SignatureVerdict;
  mapping?: string;
  /** Whether a mapping's `match` and `filter` took the request (`ignored`: filtered out; `unmatched`: no mapping). */
  filter?: 'matched' | 'ignored' | 'unmatched';
  /** Why it would come out so, as its ledger entry would say (lib/model/cause.ts). */
  cause?: Cause;
}

/** What a dry run works with. */
export interface PreviewOptions {
  config: Config;
  transforms: CallTransform;
  /** The last delivery's route, which the `last` channel goes to. */
  lastRoute: () => Route | null;
  clock?: () => number;
}

/** Plans a request under `options.config` without committing anything; every refusal is part of the answer. */
export async function previewHook(options: PreviewOptions, input: PreviewInput): Promise<Preview> {
  const planner = createPlanner({
    config: options.config,
    transforms: options.transforms,
    lastRoute: options.lastRoute,
    newId: randomUUID,
    clock: options.clock ?? Date.now,
  });
  // A dry run: a failed signature is reported and the rest planned as if it had verified, so one try shows every problem.
  const judged: Judged = { fresh: false, keyed: false, counted: false, whole: true };
  if (input.verified === true) judged.verified = true;
  const request: HookRequest = {
    id: 'try',
    name: input.name,
    headers: input.headers,
    query: new URLSearchParams(input.rawQuery),
    rawQuery: input.rawQuery,
    bytes: input.bytes,
    client: { address: '', key: '' },
    trace: { hook: input.name, auth: 'none' },
    judged,
  };
  if (input.pathOnly === true) request.pathOnly = true;
  return previewOf(input.name, await plan(planner, request));
}

/** A plan as a dry run shows it. */
export function previewOf(hook: string, planned: Plan): Preview {
  const { trace } = planned;
  const preview: Preview = {
    hook,
    status: 0,
    transforms: [...(trace.transforms ?? [])],
    actions: (trace.actions ?? []).map(_action),
    warnings: (trace.said ?? []).map(_warning),
  };
  if (trace.signature !== undefined) preview.signature = trace.signature;
  if (planned.kind === 'refused') {
    Object.assign(preview, {
      status: planned.refusal.status,
      code: planned.refusal.code,
      error: planned.refusal.message,
    });
  } else preview.status = planned.answer.status;
  if (trace.mapping !== undefined) preview.mapping = trace.mapping;
  if (trace.filter !== undefined) preview.filter = trace.filter;
  if (trace.cause !== undefined) preview.cause = trace.cause;
  if (preview.signature?.ok === false) {
    Object.assign(preview, {
      status: 401,
      code: ErrorCode.Unauthorized,
      error: preview.signature.reason ?? 'invalid signature',
    });
  }
  return preview;
}

function _action(planned: PlannedAction): PreviewAction {
  const unresolved = [...planned.unresolved];
  if (planned.kind === 'wake') {
    const { target } = planned;
    return {
      kind: 'wake',
      text: planned.action.text,
      unresolved,
      mode: planned.action.mode,
      ...(Object.keys(target).length === 0 ? {} : { target }),
    };
  }
  if (planned.kind === 'notify') {
    const { name, channel, to } = planned.notice;
    return {
      kind: 'notify',
      text: planned.notice.text,
      unresolved,
      notice: { name, channel, ...(to === undefined ? {} : { to }) },
    };
  }
  return {
    kind: 'agent',
    text: planned.run.message,
    unresolved,
    mode: planned.run.wakeMode,
    run: _decisions(planned.run),
  };
}

// A log line, as a dry run's warning (it is not this server's request to log).
function _warning({ message, fields }: Said): string {
  const { id: _id, hook: _hook, ...rest } = fields;
  const detail = Object.entries(rest).map(([k, v]) => `${k}=${String(v)}`).join(' ');
  return detail === '' ? message : `${message}: ${detail}`;
}

// The policy decisions of an admitted run, as a dry run shows them.
function _decisions(run: RunSpec): NonNullable<PreviewAction['run']> {
  const { name, agentId, sessionKey, sessionMode, model, thinking, channel, to, accountId, deliver, timeoutSeconds } =
    run;
  const optional = { sessionMode, model, thinking, to, accountId, timeoutSeconds };
  return {
    name,
    agentId,
    sessionKey,
    channel,
    deliver,
    ...Object.fromEntries(Object.entries(optional).filter(([, v]) => v !== undefined)),
  };
}
