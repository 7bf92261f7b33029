// A run held until a time: a rate limit's `queue` or a budget's `wait` gave it a `notBefore`
// (lib/edge/work-limits.ts), and it waits in the queue until then, kept in the journal like any
// accepted run, so a restart keeps it waiting until the same time.

import type { StartRule, Wait } from './can-start.ts';

/** A run with a `notBefore` still ahead waits until then; the queue asks again at that time. */
export const notBefore: StartRule = (run, _hook, queue): Wait | null => {
  if (run.notBefore === undefined) return null;
  const until = Date.parse(run.notBefore);
  return until > queue.now ? { rule: 'held', until } : null;
};
