/**
 * @module Why a request came out as it did, as its ledger entry keeps it: a kind, one bounded line
 * of text, and where it arose. The plan finds it (a transform's exception, the placeholders that
 * found nothing, the filter that passed the request over, the policy's refusal, the request it
 * duplicated); the ledger keeps it; `requests` and the inspector show it. Its text may quote the
 * request (an exception message often does): it is untrusted wherever it is shown.
 */
import { clip } from '../text.ts';

/** The kinds of cause, each the diagnosis of one outcome. */
export const CAUSE_KINDS = ['transform', 'placeholders', 'filter', 'policy', 'duplicate'] as const;
export type CauseKind = (typeof CAUSE_KINDS)[number];

/**
 * The diagnosis of an entry's outcome.
 * - `transform`: the transform failed; `text` is the failure and its message (`threw: boom`), `at` its module and line (`ci.mjs:4`) when the stack gave them.
 * - `placeholders`: the template placeholders that resolved to nothing, as written (`payload.title, sender.login`).
 * - `filter`: `at` is the mapping whose filter passed the request over, `text` the condition that failed.
 * - `policy`: the rule that refused the action, as its refusal says it.
 * - `duplicate`: `text` is the request id of the copy it was answered from (`''` when unknown).
 */
export interface Cause {
  kind: CauseKind;
  /** One line of at most {@link CAUSE_TEXT_MAX} characters. */
  text: string;
  /** At most {@link CAUSE_AT_MAX} characters. */
  at?: string;
}

/** The most characters a cause's text keeps. */
export const CAUSE_TEXT_MAX = 300;
/** The most characters a cause's `at` keeps. */
export const CAUSE_AT_MAX = 200;

// Where a first line ends: any line break a terminal or a browser honours.
const _BREAK = /\r\n|[\n\r\v\f\u0085\u2028\u2029]/;

/** A cause with its text cut to the first line and both bounded (the only way one is made). */
export function makeCause(kind: CauseKind, text: string, at?: string): Cause {
  const cause: Cause = { kind, text: firstLine(text, CAUSE_TEXT_MAX) };
  if (at !== undefined && at !== '') cause.at = firstLine(at, CAUSE_AT_MAX);
  return cause;
}

/** Whether `value` is a cause (an error's `cause` may be anything). */
export function isCause(value: unknown): value is Cause {
  if (typeof value !== 'object' || value === null) return false;
  const { kind, text } = value as { kind?: unknown; text?: unknown };
  return (CAUSE_KINDS as readonly unknown[]).includes(kind) && typeof text === 'string';
}

/** The first line of `text`, trimmed and cut to at most `max` characters. */
export function firstLine(text: string, max: number): string {
  return clip((text.split(_BREAK, 1)[0] ?? '').trim(), max);
}

/** The cause in words, one line (not escaped: the caller escapes it for where it is shown). */
export function describeCause(cause: Cause): string {
  switch (cause.kind) {
    case 'transform':
      return `transform${cause.at === undefined ? '' : ` ${cause.at}`} ${cause.text}`;
    case 'placeholders':
      return `placeholders resolved to nothing: ${cause.text}`;
    case 'filter':
      return `ignored by ${cause.at === undefined ? 'a' : `${cause.at}'s`} filter: ${cause.text}`;
    case 'policy':
      return `refused by policy: ${cause.text}`;
    case 'duplicate':
      return `duplicate of ${cause.text === '' ? 'an earlier request' : `request ${cause.text}`}`;
  }
}
