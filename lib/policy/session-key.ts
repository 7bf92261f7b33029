// The session key decision, hook: keys, prefixes, OpenClaw's agent:<agentId>: namespace.

import type { RequestedKey } from '../model/actions.ts';
import { type Decision, echo } from './decision.ts';

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
 * Picks the session key as it was written: a requested one if the rules allow it, else the
 * default, else a generated `hook:<uuid>`. As OpenClaw does, the prefix rules judge a requested
 * key as it was written (by the request, the mapping or the config); `scopeSessionKey` then
 * re-scopes it to the run's agent and judges it again.
 */
export function resolveSessionKey(
  requested: RequestedKey | undefined,
  hooks: SessionKeyRules,
  newId: () => string,
): Decision<string> {
  if (requested === undefined) {
    return { ok: true, value: hooks.defaultSessionKey ?? `${GENERATED_KEY_PREFIX}${newId()}` };
  }
  if (!requested.trusted && !hooks.allowRequestSessionKey) {
    return {
      ok: false,
      error: 'sessionKey: may not be chosen by the request while hooks.allowRequestSessionKey is false',
    };
  }
  const prefixes = hooks.allowedSessionKeyPrefixes;
  if (prefixes !== null && !hasPrefix(requested.value, prefixes)) {
    return { ok: false, error: `sessionKey: must start with one of ${_list(prefixes)}` };
  }
  return { ok: true, value: requested.value };
}

/**
 * The session a key names for the run's agent, after OpenClaw's second check: a key in the
 * `agent:<id>:<rest>` namespace is re-scoped to `agent:<agentId>:<rest>` (the agent the run
 * resolved to) and the prefix rules judge that key again, so `agent:main:x` sent for agent
 * `hooks` must also pass as `agent:hooks:x`. What is left once the namespace is dropped is the
 * session the run uses here.
 */
export function scopeSessionKey(
  key: string,
  agentId: string,
  hooks: Pick<SessionKeyRules, 'allowedSessionKeyPrefixes'>,
): Decision<string> {
  const scoped = rescopeSessionKey(key, agentId);
  const prefixes = hooks.allowedSessionKeyPrefixes;
  if (prefixes !== null && !hasPrefix(scoped, prefixes)) {
    return {
      ok: false,
      error: `sessionKey: must start with one of ${_list(prefixes)} (checked again as ${
        JSON.stringify(echo(scoped))
      }, the key re-scoped to agent ${JSON.stringify(echo(agentId))})`,
    };
  }
  return { ok: true, value: stripAgentNamespace(key) };
}

/**
 * The key as OpenClaw dispatches it to `agentId`: `agent:<any id>:<rest>` becomes
 * `agent:<agentId, canonical>:<rest>`; a key its parser does not take as namespaced (no id, an
 * empty rest, a rest starting with `:`) is left as it is.
 */
export function rescopeSessionKey(key: string, agentId: string): string {
  if (key.slice(0, 6).toLowerCase() !== 'agent:') return key;
  const end = key.indexOf(':', 6);
  if (end === -1 || key.slice(6, end).trim() === '') return key;
  const rest = key.slice(end + 1);
  return rest === '' || rest.startsWith(':') ? key : `agent:${canonicalAgentId(agentId)}:${rest}`;
}

// OpenClaw's agent ids in session keys: lower case, runs of anything but letters, digits, "_" and
// "-" made one "-", no dash at either end, at most 64 characters; nothing left is "main".
const _VALID_ID = /^[a-z0-9][a-z0-9_-]{0,63}$/i;

/** An agent id as OpenClaw writes it in a session key. */
export function canonicalAgentId(id: string): string {
  const trimmed = id.trim();
  const lower = trimmed.toLowerCase();
  if (_VALID_ID.test(trimmed)) return lower;
  return lower.replace(/[^a-z0-9_-]+/g, '-').replace(/^-+/, '').replace(/-+$/, '').slice(0, 64) || 'main';
}

function _list(prefixes: readonly string[]): string {
  return prefixes.map((p) => JSON.stringify(p)).join(', ');
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
