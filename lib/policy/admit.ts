// The agent decision, admitRun(): every rule over an agent action, and admitWake(): the agent and session a
// wake goes to.

import type { AgentAction, RunSpec, WakeAction } from '../model/actions.ts';
import { type Decision, echo } from './decision.ts';
import { allowModel, type Models } from './models.ts';
import { resolveSessionKey, scopeSessionKey, type SessionKeyRules } from './session-key.ts';

/** What the agent rules read of the config. */
export interface AgentRules {
  hooks: SessionKeyRules & {
    /** `null`: any agent may be picked. */
    allowedAgentIds: readonly string[] | null;
  };
  agents: { models: Models; list: readonly { id: string }[]; defaultAgentId: string };
}

/**
 * What becomes of a requested agent id that `agents.list` does not hold: the default agent
 * (this runtime's rule, and OpenClaw's for a mapping's agent), refused (OpenClaw's rule for a
 * request's agent, in forward mode against the upstream's agents listed in hooks.forward.agents),
 * or kept as sent (forward mode with no list: only the upstream knows its agents).
 */
export type UnknownAgent = 'default' | 'refuse' | 'keep';

/** Picks the agent: a known requested one, else what `unknown` says; the result must pass `hooks.allowedAgentIds`. */
export function resolveAgentId(
  requested: string | undefined,
  config: AgentRules,
  unknown: UnknownAgent = 'default',
): Decision<string> {
  const allowed = config.hooks.allowedAgentIds;
  if (requested !== undefined && allowed !== null && allowed.length === 0) {
    return { ok: false, error: 'agentId: may not be chosen (hooks.allowedAgentIds is empty)' };
  }
  const wanted = requested?.toLowerCase();
  const known = config.agents.list.find((a) => a.id.toLowerCase() === wanted)?.id;
  if (requested !== undefined && known === undefined && unknown === 'refuse') {
    return {
      ok: false,
      error: `agentId: unknown agent "${
        echo(requested)
      }" (the upstream gateway's agents are listed in hooks.forward.agents)`,
    };
  }
  const agentId = known ?? (requested !== undefined && unknown === 'keep' ? requested : config.agents.defaultAgentId);
  if (
    allowed !== null && allowed.length > 0 && !allowed.includes('*') &&
    !allowed.some((id) => id.toLowerCase() === agentId.toLowerCase())
  ) {
    return { ok: false, error: `agentId: agent "${echo(agentId)}" is not in hooks.allowedAgentIds` };
  }
  return { ok: true, value: agentId };
}

/** Turns an agent action into a run that every rule admits. */
export function admitRun(
  action: AgentAction,
  hook: string,
  config: AgentRules,
  newId: () => string,
  unknown: UnknownAgent = 'default',
): Decision<RunSpec> {
  // A key refused as written is reported before a refused agent; as re-scoped to the agent, after.
  const written = resolveSessionKey(action.sessionKey, config.hooks, newId);
  if (!written.ok) return written;
  const agentId = resolveAgentId(action.agentId, config, unknown);
  if (!agentId.ok) return agentId;
  const sessionKey = scopeSessionKey(written.value, agentId.value, config.hooks);
  if (!sessionKey.ok) return sessionKey;
  const persistent = action.sessionMode === 'persistent' ? checkPersistent(action, config.hooks) : null;
  if (persistent !== null) return { ok: false, error: persistent };
  const model = allowModel(action.model, config.agents.models);
  if (!model.ok) return model;
  const run: RunSpec = {
    runId: newId(),
    hook,
    name: action.name,
    message: action.message,
    sessionKey: sessionKey.value,
    agentId: agentId.value,
    wakeMode: action.wakeMode,
    deliver: action.deliver,
    channel: action.channel,
  };
  if (action.untrustedName === true) run.untrustedName = true;
  if (action.sessionKey?.trusted === false) run.requestKey = true;
  if (action.to !== undefined) run.to = action.to;
  if (action.to !== undefined && action.toConfigured === true) run.toConfigured = true;
  if (action.accountId !== undefined) run.accountId = action.accountId;
  if (action.sessionMode !== undefined) run.sessionMode = action.sessionMode;
  if (model.value !== undefined) run.model = model.value;
  if (action.thinking !== undefined) run.thinking = action.thinking;
  if (action.timeoutSeconds !== undefined) run.timeoutSeconds = action.timeoutSeconds;
  return { ok: true, value: run };
}

/**
 * OpenClaw's preconditions for `sessionMode: "persistent"`, kept so that what is accepted here is
 * accepted by the gateway in forward mode: a session to continue (the action's key, or for a
 * mapping `hooks.defaultSessionKey`), and, when the request chose the key, prefixes that bound it.
 */
export function checkPersistent(action: Pick<AgentAction, 'sessionKey'>, hooks: AgentRules['hooks']): string | null {
  if (action.sessionKey === undefined && hooks.defaultSessionKey === null) {
    return 'sessionMode: "persistent" requires a sessionKey or hooks.defaultSessionKey';
  }
  if (action.sessionKey?.trusted === false && (hooks.allowedSessionKeyPrefixes ?? []).length === 0) {
    return 'sessionMode: "persistent" with a session key the request chose requires hooks.allowedSessionKeyPrefixes';
  }
  return null;
}

/** Where a wake's event goes: absent fields are the default agent and its main session. */
export interface WakeTarget {
  agentId?: string;
  sessionKey?: string;
}

/**
 * The agent and session a wake goes to, under the rules of an agent run: an agent the list does
 * not hold is refused, made the default or kept as `unknown` says (a request's is refused, as
 * OpenClaw answers a wake; a mapping's falls back to the default), and it must pass
 * `hooks.allowedAgentIds`; a key passes
 * `hooks.allowRequestSessionKey` and the prefixes as sent and re-scoped, and names the session
 * its `agent:<id>:` leaves (`main` is the agent's main session). Without a key the event goes to
 * the agent's main session (no default or generated key).
 */
export function admitWake(
  action: Pick<WakeAction, 'agentId' | 'sessionKey'>,
  config: AgentRules,
  unknown: UnknownAgent,
): Decision<WakeTarget> {
  const { list, defaultAgentId } = config.agents;
  const written = action.sessionKey === undefined ? null : resolveSessionKey(action.sessionKey, config.hooks, () => '');
  if (written !== null && !written.ok) return written;
  const named = action.agentId?.toLowerCase();
  // The default agent is known even when agents.list is empty.
  if (
    unknown === 'refuse' && named !== undefined && named !== defaultAgentId.toLowerCase() &&
    !list.some((a) => a.id.toLowerCase() === named)
  ) {
    return { ok: false, error: `agentId: unknown agent "${echo(action.agentId!)}"` };
  }
  const agentId = resolveAgentId(action.agentId, config, unknown === 'refuse' ? 'default' : unknown);
  if (!agentId.ok) return agentId;
  const target: WakeTarget = {};
  if (agentId.value !== defaultAgentId) target.agentId = agentId.value;
  if (written === null) return { ok: true, value: target };
  const session = scopeSessionKey(written.value, agentId.value, config.hooks);
  if (!session.ok) return session;
  if (session.value.toLowerCase() !== 'main') target.sessionKey = session.value;
  return { ok: true, value: target };
}
