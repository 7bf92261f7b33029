import { WAKE_MODES, type WakeAction } from '../actions.ts';
import { check, formatIssue, literal, object, optional, string } from '../schema.ts';

const wakeSchema = object({
  text: string({ trim: true, nonEmpty: true }),
  mode: optional(literal(...WAKE_MODES)),
});

/** Checks a `/wake` payload: `{text, mode?}` and nothing else. */
export function parseWake(body: Record<string, unknown>): { ok: true; action: WakeAction } | { ok: false; error: string } {
  const checked = check(wakeSchema, body);
  if (!checked.ok) return { ok: false, error: checked.issues.map(formatIssue).join('; ') };
  return { ok: true, action: { kind: 'wake', text: checked.value.text, mode: checked.value.mode ?? 'now' } };
}
