// A run held for its coalescing window (a mapping's `coalesce`), as a rule of the run queue
// (can-start.ts): it waits until the window closes, as the store has it now, since every request
// that joins keeps the window open longer.

import { heldUntil } from '../model/coalesce.ts';
import type { RunRecord } from '../model/records.ts';
import type { StartRule } from './can-start.ts';

/** Holds a run while its window is open, until it closes (the queue asks again then). */
export function windowClosed(store: { run(runId: string): RunRecord | null }): StartRule {
  return (run, _hook, queue) => {
    if (run.coalesce === undefined) return null;
    const until = heldUntil(store.run(run.runId) ?? run, queue.now);
    return until === null ? null : { rule: 'coalesce', until };
  };
}
