// Whether a waiting run may start now: one question asked of each run in the queue, composed of
// small rules, each a file of its own (a busy session here, a full lane in lane.ts). A rule answers
// null to let the run start, or why it waits and, when the wait ends by itself, until when.

import type { Config } from '../config/types.ts';
import type { RunRecord } from '../model/records.ts';

/** What a rule sees of the queue when asked about one waiting run. */
export interface QueueView {
  /** The configuration of this moment. */
  readonly config: Config;
  readonly now: number;
  /** The session keys with a run executing. */
  readonly busySessions: ReadonlySet<string>;
  /** Runs executing, by work hook (lib/model/work-hook.ts); a hook with none is absent. */
  readonly running: ReadonlyMap<string, number>;
}

/**
 * Why a run waits. With `until` (epoch ms) the wait ends by itself and the queue asks again then;
 * without, whatever ends it (a run finishing, a hook resumed) asks the queue again.
 */
export interface Wait {
  /** A short name of the rule that holds the run (`session`, `lane`, ...). */
  readonly rule: string;
  readonly until?: number;
}

/** One rule over a waiting run and its work hook: null lets it start. */
export type StartRule = (run: RunRecord, hook: string, queue: QueueView) => Wait | null;

const _SESSION_BUSY: Wait = { rule: 'session' };

/** The runs of one session key go one at a time, in the order they were accepted. */
export const sessionFree: StartRule = (run, _hook, queue) =>
  queue.busySessions.has(run.sessionKey) ? _SESSION_BUSY : null;

/** The first rule that holds the run, or null when every rule lets it start. */
export function canStart(rules: readonly StartRule[], run: RunRecord, hook: string, queue: QueueView): Wait | null {
  for (const rule of rules) {
    const wait = rule(run, hook, queue);
    if (wait !== null) return wait;
  }
  return null;
}
