// Test helper: the runs a store holds that have not finished (pending or running), oldest first.
import type { Store } from '../lib/store/journal/store.ts';
import type { RunRecord } from '../lib/model/records.ts';

/** The store's unfinished runs, oldest first: what a restart would hand the runtime again. */
export function pendingRuns(store: Store): RunRecord[] {
  return store.runs().filter((run) => run.status === 'pending' || run.status === 'running');
}
