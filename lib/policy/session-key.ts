import type { RequestedKey } from '../actions.ts';
import type { Config } from '../config/types.ts';
import type { Decision } from './decision.ts';

/** The generated session keys start with this; prefix allowlists must admit it when no default key is set. */
export const GENERATED_KEY_PREFIX = 'hook:';

const GENERATED = new RegExp(`^${GENERATED_KEY_PREFIX}[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`);

/** Whether a session key is one `resolveSessionKey` generated (`hook:<uuid>`): an isolated, one-off session. */
export function isGeneratedKey(key: string): boolean {
  return GENERATED.test(key);
}

/** Whether a session key starts with one of the prefixes, compared case-insensitively. */
export function hasPrefix(key: string, prefixes: readonly string[]): boolean {
  const lower = key.toLowerCase();
  return prefixes.some((p) => lower.startsWith(p.toLowerCase()));
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

/**
 * OpenClaw's per-agent session namespace: `agent:<agentId>:<rest>`. A key inside the namespace of
 * the agent a run goes to means `<rest>` for that agent, so the prefix is dropped; a key naming
 * another agent is left as it is.
 */
const _AGENT_KEY = /^agent:([^:]+):(.+)$/i;

/** `key` without the `agent:<agentId>:` prefix when that prefix names `agentId` (any case). */
export function normaliseSessionKey(key: string, agentId: string): string {
  const match = _AGENT_KEY.exec(key);
  if (match === null) return key;
  const [, owner, rest] = match as unknown as [string, string, string];
  // `agent:hooks::x` and `agent:hooks:` name no session: left as they are, like any other odd key.
  const trimmed = rest.replace(/^:+/, '');
  if (owner.toLowerCase() !== agentId.toLowerCase() || trimmed === '') return key;
  return trimmed;
}
