import { WAKE_MODES, type WakeAction } from '../actions.ts';
import { check, formatIssue, literal, object, optional, string } from '../schema.ts';

const SHAPE = {
  text: string({ trim: true, nonEmpty: true }),
  mode: optional(literal(...WAKE_MODES)),
};
const strict = object(SHAPE);
const lenient = object(SHAPE, { unknown: 'ignore' });

/**
 * Checks a `/wake` payload: `{text, mode?}` and nothing else; with `acceptUnknown`, other fields
 * are accepted and named in `ignored` (as OpenClaw ignores them).
 */
export function parseWake(body: Record<string, unknown>, acceptUnknown = false): { ok: true; action: WakeAction; ignored: string[] } | { ok: false; error: string } {
  const checked = check(acceptUnknown ? lenient : strict, body);
  if (!checked.ok) return { ok: false, error: checked.issues.map(formatIssue).join('; ') };
  return { ok: true, action: { kind: 'wake', text: checked.value.text, mode: checked.value.mode ?? 'now' }, ignored: checked.ignored };
}
