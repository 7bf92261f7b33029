import type { AgentAction, RunSpec, WakeAction } from '../actions.ts';

// Forward mode's outbox bodies: what forward.ts sends upstream. The dispatcher writes them into the
// outbox when it accepts a request, so they stand apart from forward.ts, which serve loads only
// when hooks.forward is set.

/** The body OpenClaw's `POST /hooks/wake` takes. */
export function upstreamWake(action: Pick<WakeAction, 'text' | 'mode'>): Record<string, unknown> {
  return { text: action.text, mode: action.mode };
}

/**
 * The body OpenClaw's `POST /hooks/agent` takes, for a run that passed our policy. What the
 * request or mapping chose is sent as it chose it (agent, session key, model), so the upstream
 * resolves them against its own agents and rules; what we generated or defaulted is left to its
 * defaults. The message goes as the run would read it here: wrapped as untrusted content.
 */
export function upstreamAgent(action: AgentAction, run: RunSpec): Record<string, unknown> {
  const body: Record<string, unknown> = {
    message: run.message,
    name: run.name,
    wakeMode: run.wakeMode,
    deliver: run.deliver,
    channel: run.channel,
  };
  if (action.agentId !== undefined) body['agentId'] = action.agentId;
  if (action.sessionKey !== undefined) body['sessionKey'] = action.sessionKey.value;
  if (run.to !== undefined) body['to'] = run.to;
  if (run.accountId !== undefined) body['accountId'] = run.accountId;
  if (action.sessionMode !== undefined) body['sessionMode'] = action.sessionMode;
  if (action.model !== undefined) body['model'] = action.model;
  if (run.thinking !== undefined) body['thinking'] = run.thinking;
  if (run.timeoutSeconds !== undefined) body['timeoutSeconds'] = run.timeoutSeconds;
  return body;
}
