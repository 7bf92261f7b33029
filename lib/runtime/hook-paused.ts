// The run queue's pause rule (a rule of can-start.ts): a run of a paused hook waits in the queue
// (still pending on disk) until its hook resumes, while the runs of other hooks go on.

import type { Store } from '../store/journal/store.ts';
import type { StartRule, Wait } from './can-start.ts';

const _PAUSED: Wait = { rule: 'paused' };

/** The rule that holds the runs of a paused hook; a resume asks the queue again (Runner.recheck). */
export function hookResumed(store: Pick<Store, 'paused'>): StartRule {
  return (_run, hook) => (store.paused(hook) === null ? null : _PAUSED);
}
