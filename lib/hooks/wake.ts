// Checks a /wake payload (text, mode, agentId, sessionKey) and turns it into a wake action.

import { WAKE_MODES, type WakeAction } from '../model/actions.ts';
import { check, formatIssue, literal, object, optional, string } from '../schema.ts';

const SHAPE = {
  text: string({ trim: true, nonEmpty: true }),
  mode: optional(literal(...WAKE_MODES)),
  agentId: optional(string({ trim: true, nonEmpty: true })),
  sessionKey: optional(string({ trim: true, nonEmpty: true, maxLength: 512 })),
  // Read by the idempotency step (edge/idempotency.ts), not part of the action.
  idempotencyKey: optional(string()),
};
const strict = object(SHAPE);
const lenient = object(SHAPE, { unknown: 'ignore' });

/** OpenClaw's rule: an event for a named session wakes it at once, so it cannot wait for the next heartbeat. */
export const SESSION_KEY_NEEDS_NOW = 'sessionKey: requires mode "now"';

/**
 * Checks a `/wake` payload: `{text, mode?, agentId?, sessionKey?, idempotencyKey?}` and nothing else; with
 * `acceptUnknown`, other fields are accepted and named in `ignored` (as OpenClaw ignores them).
 * The session key is the request's choice (untrusted).
 */
export function parseWake(
  body: Record<string, unknown>,
  acceptUnknown = false,
): { ok: true; action: WakeAction; ignored: string[] } | { ok: false; error: string } {
  const checked = check(acceptUnknown ? lenient : strict, body);
  if (!checked.ok) return { ok: false, error: checked.issues.map(formatIssue).join('; ') };
  const { text, mode = 'now', agentId, sessionKey } = checked.value;
  if (sessionKey !== undefined && mode !== 'now') return { ok: false, error: SESSION_KEY_NEEDS_NOW };
  const action: WakeAction = { kind: 'wake', text, mode };
  if (agentId !== undefined) action.agentId = agentId;
  if (sessionKey !== undefined) action.sessionKey = { value: sessionKey, trusted: false };
  return { ok: true, action, ignored: checked.ignored };
}
