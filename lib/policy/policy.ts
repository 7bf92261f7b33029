import type { AgentAction, RequestedKey, RunSpec } from '../actions.ts';
import { GENERATED_KEY_PREFIX, hasPrefix, type Config } from '../config/config.ts';
import { normaliseSessionKey } from './session-key.ts';

/** A policy decision: the checked value, or the reason (naming the field and the rule) it was refused. */
export type Decision<T> = { ok: true; value: T } | { ok: false; error: string };

const MAX_ECHO = 100;

const GENERATED = new RegExp(`^${GENERATED_KEY_PREFIX}[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`);

/** Whether a session key is one `resolveSessionKey` generated (`hook:<uuid>`): an isolated, one-off session. */
export function isGeneratedKey(key: string): boolean {
  return GENERATED.test(key);
}

/**
 * Picks the session key: a requested one if the rules allow it, else the default, else a generated
 * `hook:<uuid>`. With the run's `agentId`, a requested `agent:<agentId>:` key loses that prefix
 * first, and the prefix rules judge what is left: the key the run will really use.
 */
export function resolveSessionKey(requested: RequestedKey | undefined, hooks: Config['hooks'], newId: () => string, agentId?: string): Decision<string> {
  if (requested === undefined) return { ok: true, value: hooks.defaultSessionKey ?? `${GENERATED_KEY_PREFIX}${newId()}` };
  if (!requested.trusted && !hooks.allowRequestSessionKey) {
    return { ok: false, error: 'sessionKey: may not be chosen by the request while hooks.allowRequestSessionKey is false' };
  }
  const key = agentId === undefined ? requested.value : normaliseSessionKey(requested.value, agentId);
  const prefixes = hooks.allowedSessionKeyPrefixes;
  if (prefixes !== null && !hasPrefix(key, prefixes)) {
    return { ok: false, error: `sessionKey: must start with one of ${prefixes.map((p) => JSON.stringify(p)).join(', ')}` };
  }
  return { ok: true, value: key };
}

/** Picks the agent: a known requested one, else the default; the result must pass `hooks.allowedAgentIds`. */
export function resolveAgentId(requested: string | undefined, config: Config): Decision<string> {
  const allowed = config.hooks.allowedAgentIds;
  if (requested !== undefined && allowed !== null && allowed.length === 0) {
    return { ok: false, error: 'agentId: may not be chosen (hooks.allowedAgentIds is empty)' };
  }
  const wanted = requested?.toLowerCase();
  const agentId = config.agents.list.find((a) => a.id.toLowerCase() === wanted)?.id ?? config.agents.defaultAgentId;
  if (allowed !== null && allowed.length > 0 && !allowed.includes('*') && !allowed.some((id) => id.toLowerCase() === agentId.toLowerCase())) {
    return { ok: false, error: `agentId: agent "${_echo(agentId)}" is not in hooks.allowedAgentIds` };
  }
  return { ok: true, value: agentId };
}

/** Checks a model override against `agents.defaults.models` and resolves an alias to its `provider/model` key. */
export function resolveModel(model: string | undefined, config: Config): Decision<string | undefined> {
  if (model === undefined) return { ok: true, value: undefined };
  const models = Object.entries(config.agents.models);
  if (models.length === 0) return { ok: true, value: model };
  const lower = model.toLowerCase();
  const hit = models.find(([key, entry]) => key.toLowerCase() === lower || entry.alias?.toLowerCase() === lower);
  if (hit === undefined) return { ok: false, error: `model not allowed: ${_echo(model)}` };
  return { ok: true, value: hit[0] };
}

/** Turns an agent action into a run that every rule admits. */
export function admitRun(action: AgentAction, hook: string, config: Config, newId: () => string): Decision<RunSpec> {
  // The agent first, so an `agent:<id>:` key is judged without the prefix; a refused key is still reported first.
  const agentId = resolveAgentId(action.agentId, config);
  const sessionKey = resolveSessionKey(action.sessionKey, config.hooks, newId, agentId.ok ? agentId.value : undefined);
  if (!sessionKey.ok) return sessionKey;
  if (!agentId.ok) return agentId;
  const model = resolveModel(action.model, config);
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
  if (action.to !== undefined) run.to = action.to;
  if (model.value !== undefined) run.model = model.value;
  if (action.thinking !== undefined) run.thinking = action.thinking;
  if (action.timeoutSeconds !== undefined) run.timeoutSeconds = action.timeoutSeconds;
  return { ok: true, value: run };
}

// Request values echoed in an error are cut short and kept on one line.
function _echo(value: string): string {
  const line = value.replace(/[\u0000-\u001f\u007f\u2028\u2029]+/g, ' ');
  return line.length > MAX_ECHO ? `${line.slice(0, MAX_ECHO)}…` : line;
}
