// Forward mode's outbox bodies: what forward.ts sends upstream. Commit (edge/commit.ts) writes them into the
// outbox when it accepts a request, so they stand apart from forward.ts, which serve loads only
// when hooks.forward is set. What the released gateway refuses is refused here first
// (forwardDestination), so nothing acknowledged here is refused there for its destination.

import type { AgentAction, RunSpec, WakeAction } from '../model/actions.ts';

/**
 * The body OpenClaw's `POST /hooks/wake` takes: the agent and session key as the request or
 * mapping gave them; with no agent, `hooks.forward.agentId` (the upstream agent wakes go to).
 */
export function upstreamWake(
  action: Pick<WakeAction, 'text' | 'mode' | 'agentId' | 'sessionKey'>,
  agentId?: string | null,
): Record<string, unknown> {
  const body: Record<string, unknown> = { text: action.text, mode: action.mode };
  const agent = action.agentId ?? agentId;
  if (agent !== undefined && agent !== null) body['agentId'] = agent;
  if (action.sessionKey !== undefined) body['sessionKey'] = action.sessionKey.value;
  return body;
}

/**
 * Why the upstream gateway (OpenClaw 2026.9) would refuse a run's destination, or null. It
 * delivers a hook run only to a concrete channel and a recipient named together: `last` with a
 * `to`, or a channel without one, is refused there (400), so it is refused here before the answer.
 * A run that does not deliver, or names neither (`last` with no `to`, the default), has no
 * destination and is sent without one.
 */
export function forwardDestination(run: Pick<RunSpec, 'deliver' | 'channel' | 'to'>): string | null {
  if (!run.deliver) return null;
  if (run.channel === 'last') {
    return run.to === undefined
      ? null
      : 'to: needs a concrete channel in forward mode: the upstream gateway delivers only to a channel and a recipient named together, never to "last" with a recipient';
  }
  return run.to === undefined
    ? `to: is required with channel ${run.channel} in forward mode: the upstream gateway delivers only to a channel and a recipient named together`
    : null;
}

/**
 * The body OpenClaw's `POST /hooks/agent` takes, for a run that passed our policy and
 * forwardDestination. What the request or mapping chose is sent as it chose it (agent, session
 * key, model), so the upstream resolves them against its own agents and rules; what we generated
 * or defaulted is left to its defaults: a run without a destination goes without `deliver`,
 * `channel`, `to` and `accountId`, and an agent id that fell back to the default goes without `agentId`. The
 * message goes as the run would read it here: wrapped as untrusted content.
 */
export function upstreamAgent(action: AgentAction, run: RunSpec): Record<string, unknown> {
  const body: Record<string, unknown> = { message: run.message, name: run.name, wakeMode: run.wakeMode };
  if (!run.deliver) body['deliver'] = false;
  else if (run.channel !== 'last' && run.to !== undefined) {
    Object.assign(body, { deliver: true, channel: run.channel, to: run.to });
    if (run.accountId !== undefined) body['accountId'] = run.accountId;
  }
  // The agent asked for, as the policy resolved it; one that resolved to the default is the upstream's default too.
  if (action.agentId !== undefined && action.agentId.toLowerCase() === run.agentId.toLowerCase()) {
    body['agentId'] = run.agentId;
  }
  if (action.sessionKey !== undefined) body['sessionKey'] = action.sessionKey.value;
  if (action.sessionMode !== undefined) body['sessionMode'] = action.sessionMode;
  if (action.model !== undefined) body['model'] = action.model;
  if (run.thinking !== undefined) body['thinking'] = run.thinking;
  if (run.timeoutSeconds !== undefined) body['timeoutSeconds'] = run.timeoutSeconds;
  return body;
}
