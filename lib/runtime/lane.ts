// A hook's lane: at most its `concurrency` runs in flight at once (a mapping's, or `hooks.agent`'s
// for /agent), as a rule of the run queue (can-start.ts). A hook that sets none has no lane of its
// own: only agents.maxConcurrent and one run at a time per session hold its runs.

import { workControls } from '../model/work-hook.ts';
import type { StartRule, Wait } from './can-start.ts';

const _LANE_FULL: Wait = { rule: 'lane' };

/** Holds a run while its hook has `concurrency` runs executing; a run finishing asks the queue again. */
export const laneFree: StartRule = (_run, hook, queue) => {
  const limit = workControls(queue.config.hooks).get(hook)?.concurrency;
  return limit !== undefined && (queue.running.get(hook) ?? 0) >= limit ? _LANE_FULL : null;
};
