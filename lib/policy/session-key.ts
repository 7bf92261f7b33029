import type { RequestedKey } from '../actions.ts';
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

/** What the session-key rules read of `hooks`. */
export interface SessionKeyRules {
  defaultSessionKey: string | null;
  allowRequestSessionKey: boolean;
  /** `null`: no prefix rule. */
  allowedSessionKeyPrefixes: readonly string[] | null;
}

/**
 * Picks the session key: a requested one if the rules allow it, else the default, else a generated
 * `hook:<uuid>`. As OpenClaw does, the prefix rules judge a key as it was written (by the request,
 * the mapping or the config), and only then is a leading `agent:<id>:` dropped: the run's agent is
 * the one it resolves to, whichever agent the key names, so what is left is the session it uses.
 */
export function resolveSessionKey(requested: RequestedKey | undefined, hooks: SessionKeyRules, newId: () => string): Decision<string> {
  if (requested === undefined) {
    return { ok: true, value: hooks.defaultSessionKey === null ? `${GENERATED_KEY_PREFIX}${newId()}` : stripAgentNamespace(hooks.defaultSessionKey) };
  }
  if (!requested.trusted && !hooks.allowRequestSessionKey) {
    return { ok: false, error: 'sessionKey: may not be chosen by the request while hooks.allowRequestSessionKey is false' };
  }
  const prefixes = hooks.allowedSessionKeyPrefixes;
  if (prefixes !== null && !hasPrefix(requested.value, prefixes)) {
    return { ok: false, error: `sessionKey: must start with one of ${prefixes.map((p) => JSON.stringify(p)).join(', ')}` };
  }
  return { ok: true, value: stripAgentNamespace(requested.value) };
}

/** OpenClaw's per-agent session namespace: `agent:<agentId>:<rest>`. */
const _AGENT_KEY = /^agent:([^:]+):(.+)$/i;

/** `key` without a leading `agent:<agentId>:` (any agent, any case): the session it names for the run's agent. */
export function stripAgentNamespace(key: string): string {
  const match = _AGENT_KEY.exec(key);
  if (match === null) return key;
  // `agent:hooks::x` and `agent:hooks:` name no session: left as they are, like any other odd key.
  const trimmed = match[2]!.replace(/^:+/, '');
  return trimmed === '' ? key : trimmed;
}

/**
 * Whether a prefix admits every session of the agents a run may go to: a key is checked as sent
 * and its `agent:<id>:` dropped after, so `agent:` (or `agent:<id>:`) lets `agent:<id>:main` through.
 */
export function admitsEveryAgentSession(prefix: string): boolean {
  const lower = prefix.toLowerCase();
  return 'agent:'.startsWith(lower) || /^agent:[^:]*:?$/.test(lower);
}
