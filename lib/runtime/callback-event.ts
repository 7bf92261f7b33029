// The completion callback a run owes once it settled: the event POSTed (the completion waitForCompletion
// answers, under a type and a version), as the journal entry written in the line that settles the run.

import type { Config } from '../config/types.ts';
import type { RunRecord } from '../model/records.ts';
import type { NewCallback } from '../store/journal/callbacks.ts';
import { completionOf, isSettled } from './completion.ts';

/** The event type of every callback: the run ended, whatever its status (in `data.status`). */
export const CALLBACK_TYPE = 'run.completed';

/** The version of the event's shape; a change a receiver must know of gets a new one. */
export const CALLBACK_VERSION = 1;

/**
 * The callback `run` owes, once it settled (ended, and a reply meant for delivery delivered or
 * given up on), as the completion `waitForCompletion` would answer at that moment; none when the
 * run has no callback or is not settled yet. Its id, the `webhook-id`, is the run's, so a run can
 * owe only one and a receiver dedupes on it. The reply text goes only with `includeReply`.
 */
export function settledCallback(config: Config, run: RunRecord, time: string): NewCallback[] {
  const { callback } = run;
  if (callback === undefined || !isSettled(run)) return [];
  const completion = completionOf(run, {
    ackMaxChars: config.agents.heartbeat.ackMaxChars,
    allowReply: callback.includeReply,
  });
  const data = {
    runId: run.runId,
    hook: run.hook,
    agentId: run.agentId,
    sessionKey: run.sessionKey,
    ...(run.requestId === undefined ? {} : { requestId: run.requestId }),
    ...completion,
  };
  return [{
    id: `msg_${run.runId}`,
    runId: run.runId,
    hook: run.hook,
    url: callback.url,
    origin: new URL(callback.url).origin,
    ...(callback.mapping === undefined ? {} : { mapping: callback.mapping }),
    maxAgeSeconds: callback.maxAgeSeconds,
    body: { type: CALLBACK_TYPE, version: CALLBACK_VERSION, timestamp: time, data },
  }];
}
