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

/** Picks the session key: a requested one if the rules allow it, else the default, else a generated `hook:<uuid>`. */
export function resolveSessionKey(requested: RequestedKey | undefined, hooks: Config['hooks'], newId: () => string): Decision<string> {
  if (requested === undefined) return { ok: true, value: hooks.defaultSessionKey ?? `${GENERATED_KEY_PREFIX}${newId()}` };
  if (!requested.trusted && !hooks.allowRequestSessionKey) {
    return { ok: false, error: 'sessionKey: may not be chosen by the request while hooks.allowRequestSessionKey is false' };
  }
  const prefixes = hooks.allowedSessionKeyPrefixes;
  if (prefixes !== null && !hasPrefix(requested.value, prefixes)) {
    return { ok: false, error: `sessionKey: must start with one of ${prefixes.map((p) => JSON.stringify(p)).join(', ')}` };
  }
  return { ok: true, value: requested.value };
}
