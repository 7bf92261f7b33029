// A decision as a value, and how a refused request value is quoted.

import { clip } from '../text.ts';

/** A policy decision: the checked value, or the reason (naming the field and the rule) it was refused. */
export type Decision<T> = { ok: true; value: T } | { ok: false; error: string };

const MAX_ECHO = 100;

/** A request value quoted in a refusal: on one line and cut short. */
export function echo(value: string): string {
  return clip(value.replace(/[\u0000-\u001f\u007f\u2028\u2029]+/g, ' '), MAX_ECHO + 1);
}
