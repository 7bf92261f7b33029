// The answer to a request whose run joined a pending one (coalescing): the pending run's id where
// the planned one stood, `coalesced: true`, and what the ledger notes of it.

import type { RunRecord } from '../model/records.ts';
import type { Joined } from '../store/journal/store.ts';
import type { Answer } from './answer.ts';
import { extend } from '../object.ts';

/** The answer with each joined run in place of the planned one: its id (and for one run its session, agent and channel), and `coalesced: true`. */
export function coalescedAnswer(answer: Answer, joined: Joined): Answer {
  if (joined.size === 0) return answer;
  const body: Record<string, unknown> = extend(answer.body, { coalesced: true });
  const run = typeof body['runId'] === 'string' ? joined.get(body['runId']) : undefined;
  if (run !== undefined) Object.assign(body, _destination(run));
  if (Array.isArray(body['runIds'])) body['runIds'] = body['runIds'].map((id) => joined.get(id)?.runId ?? id);
  return { ...answer, body };
}

/** The runs a waiting request waits for, each joined one replaced by the run it joined. */
export function joinedIds(runIds: readonly string[], joined: Joined): string[] {
  return [...new Set(runIds.map((id) => joined.get(id)?.runId ?? id))];
}

/** The pending runs the request joined, for the ledger (`became.joined`). */
export function joinedRuns(joined: Joined): string[] {
  return [...new Set([...joined.values()].map((run) => run.runId))];
}

function _destination(run: RunRecord): Record<string, unknown> {
  return { runId: run.runId, sessionKey: run.sessionKey, agentId: run.agentId, channel: run.channel };
}
