// The HEARTBEAT_OK acknowledgment rule.

/** The token a main agent answers with when a heartbeat needs nothing from the user. */
export const HEARTBEAT_OK = 'HEARTBEAT_OK';

// The token with the light markup models wrap it in: **x**, __x__, `x`, <b>x</b>, <strong>x</strong>.
const _TOKEN = String
  .raw`(?:\*\*|__|\*|_|\x60)?(?:<(?:b|strong|code)>)?HEARTBEAT_OK(?:<\/(?:b|strong|code)>)?(?:\*\*|__|\*|_|\x60)?[.!]?`;
// Bounded by non-word characters, so `HEARTBEAT_OKAY` or `NOT_HEARTBEAT_OK` is not the token.
const _LEADING = new RegExp(String.raw`^\s*${_TOKEN}(?!\w)`);
const _TRAILING = new RegExp(String.raw`(?<!\w)${_TOKEN}\s*$`);

/**
 * Whether a reply is only an acknowledgment: after removing the token at its start or end,
 * at most `maxChars` characters remain (or nothing). Acks are recorded, never delivered.
 */
export function isAck(reply: string, maxChars: number): boolean {
  const trimmed = reply.trim();
  if (trimmed === '') return true;
  const rest = trimmed.replace(_LEADING, '');
  const stripped = rest === trimmed ? trimmed.replace(_TRAILING, '') : rest;
  if (stripped === trimmed) return false;
  return stripped.trim().length <= maxChars;
}
