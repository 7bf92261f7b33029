// What a run that stands for several requests (a mapping's `coalesce`) tells the model and the main
// session: how many requests, over what time, and which of their messages follow.

import type { RunRecord } from '../model/records.ts';

/**
 * The prompt of a run: its message, and for a run that several requests joined, a first paragraph
 * saying how many it stands for and which messages follow (each message is wrapped as untrusted
 * content on its own; this paragraph is ours).
 */
export function runPrompt(run: Pick<RunRecord, 'message' | 'coalesce'>): string {
  const window = run.coalesce;
  if (window === undefined || window.count === 1) return run.message;
  const { count, firstAt, lastAt, leftOut } = window;
  const head = `This run stands for ${count} requests to this hook with the same coalesce key, ` +
    `accepted from ${firstAt} to ${lastAt}.`;
  const which = window.messages === 'latest'
    ? `The latest request's message follows; the ${count - 1} before it are not shown.`
    : leftOut === undefined
    ? `Their ${count} messages follow, oldest first.`
    : `Their messages follow, oldest first; ${leftOut} of them did not fit within ${window.maxBytes} bytes and are not shown.`;
  return `${head} ${which}\n\n${run.message}`;
}

/** What the main session's line about a run adds for a run several requests joined: ` (10 requests)`. */
export function standsFor(run: Pick<RunRecord, 'coalesce'>): string {
  const count = run.coalesce?.count ?? 1;
  return count > 1 ? ` (${count} requests)` : '';
}
