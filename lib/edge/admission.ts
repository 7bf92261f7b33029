// Where a plan's actions may go, chosen once per (re)load (this server's agents and channels, or
// forward mode's upstream), and the one admission of a run or a wake against it: part of plan.

import type { AgentAction, CallbackSpec, NoticeSpec, NotifyAction, RunSpec, WakeAction } from '../model/actions.ts';
import type { Config } from '../config/types.ts';
import { ErrorCode, HttpError } from '../errors.ts';
import { admitRun, admitWake, type AgentRules, type UnknownAgent, type WakeTarget } from '../policy/admit.ts';
import { checkRoute, type Routes, routesOf } from '../policy/route.ts';
import { forwardDestination } from '../runtime/forward-body.ts';
import type { Route } from '../model/records.ts';
import { makeCause } from '../model/cause.ts';
import { extend } from '../object.ts';

/** The rules an action is admitted by. */
export interface Admission {
  /** The configured channels a run's reply is checked against; `null` in forward mode, where the upstream delivers. */
  routes: Routes | null;
  /** Why the upstream would refuse a run's destination (forward mode), or null. */
  unsendable(run: RunSpec): string | null;
  /** The agents a run may go to (in forward mode the upstream's), and what an id that is not among them becomes. */
  agents: AgentRules;
  unknownAgent(hook: string): UnknownAgent;
  /** The last delivery's route, which the `last` channel goes to. */
  lastRoute: () => Route | null;
  newId: () => string;
}

/** The admission of one (re)load. */
export function createAdmission(config: Config, lastRoute: () => Route | null, newId: () => string): Admission {
  const { forward } = config.hooks;
  // A /wake naming an agent this server does not have is refused, as the gateway refuses it; a run's falls back to the default.
  if (forward === null) {
    return {
      routes: routesOf(config.channels),
      unsendable: () => null,
      agents: config,
      unknownAgent: (hook) => (hook === 'wake' ? 'refuse' : 'default'),
      lastRoute,
      newId,
    };
  }
  return { routes: null, unsendable: forwardDestination, ..._upstreamAgents(config, forward.agents), lastRoute, newId };
}

/**
 * The one admission of an agent action, for `/agent` and mapped hooks alike: every policy rule,
 * then the route, since a reply that could never be delivered is refused now, while the sender can
 * still fix it (in forward mode the upstream delivers: its channels, not ours, decide what is
 * routable, and a destination it cannot express is refused here). `label` starts the message (which mapping refused it);
 * `mapping` is the id of the mapping that made the action (absent for `/agent`).
 * `callback`, where the run's completion is POSTed, rides on the run.
 */
export function admitAgent(
  ctx: Admission,
  hook: string,
  requestId: string,
  action: AgentAction,
  label: string,
  mapping?: string,
  callback?: CallbackSpec,
): RunSpec {
  const admitted = admitRun(action, hook, ctx.agents, ctx.newId, ctx.unknownAgent(hook));
  if (!admitted.ok) throw _refused(ErrorCode.NotAllowed, label, admitted.error);
  const run = admitted.value;
  const unroutable = ctx.routes === null
    ? ctx.unsendable(run)
    : run.deliver
    ? checkRoute(ctx.routes, ctx.lastRoute(), run.channel, run.to)
    : null;
  if (unroutable !== null) throw _refused(ErrorCode.InvalidPayload, label, unroutable);
  const spec: RunSpec = extend(run, mapping === undefined ? { requestId } : { mapping, requestId });
  if (callback !== undefined) spec.callback = callback;
  return spec;
}

/**
 * The admission of a notify action: its channel must be one of this server's (forward mode has
 * none: the upstream delivers) and its recipient one the platform takes, or the channel's `defaultTo`.
 */
export function admitNotice(
  ctx: Admission,
  hook: string,
  requestId: string,
  action: NotifyAction,
  label: string,
): NoticeSpec {
  if (ctx.routes === null) {
    throw new HttpError(
      400,
      ErrorCode.NotAllowed,
      `${label}notify needs a channel of this server, and forward mode delivers upstream`,
    );
  }
  const unroutable = checkRoute(ctx.routes, null, action.channel, action.to);
  if (unroutable !== null) throw new HttpError(400, ErrorCode.InvalidPayload, `${label}${unroutable}`);
  if (action.to === undefined && ctx.routes.get(action.channel)?.defaultTo === undefined) {
    throw new HttpError(
      400,
      ErrorCode.InvalidPayload,
      `${label}to: is required, or channels.${action.channel}.defaultTo`,
    );
  }
  const { kind, text, name, channel, to } = action;
  return { kind, deliveryId: ctx.newId(), hook, name, channel, ...(to === undefined ? {} : { to }), text, requestId };
}

/** A wake's agent and session under the rules of an agent run, among the destination's agents. */
export function admitWakeTarget(ctx: Admission, hook: string, action: WakeAction, label: string): WakeTarget {
  const admitted = admitWake(action, ctx.agents, ctx.unknownAgent(hook));
  if (!admitted.ok) throw _refused(ErrorCode.NotAllowed, label, admitted.error);
  return admitted.value;
}

// A policy's refusal: the rule, as the policy says it, is its cause (the ledger keeps it).
function _refused(code: ErrorCode, label: string, rule: string): HttpError {
  return new HttpError(400, code, `${label}${rule}`, { cause: makeCause('policy', rule) });
}

/**
 * Forward mode's agents: the upstream's, when hooks.forward.agents lists them (its default first;
 * a request's unknown id is refused there, so here too; a mapping's falls back to the default, as
 * there). With no list every requested id is kept as sent and left to the upstream to resolve.
 */
function _upstreamAgents(config: Config, listed: readonly string[] | null): Pick<Admission, 'agents' | 'unknownAgent'> {
  if (listed === null) return { agents: config, unknownAgent: () => 'keep' };
  const agents = {
    ...config.agents,
    list: listed.map((id) => ({ id })),
    defaultAgentId: listed[0] ?? config.agents.defaultAgentId,
  };
  return {
    agents: { ...config, agents },
    unknownAgent: (hook) => (hook === 'agent' || hook === 'wake' ? 'refuse' : 'default'),
  };
}
