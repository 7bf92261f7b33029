// The server's side of `hooks-ingress runs redeliver` and of the inspector's Redeliver button: a
// finished run's stored reply sent to its channel again through the delivery of now, with no model
// call (lib/runtime/redeliver.ts), recorded on the run as one more delivery attempt.

import type { Config } from '../config/types.ts';
import { ErrorCode, HttpError } from '../errors.ts';
import type { DeliveryOutcome, RunRecord } from '../model/records.ts';
import { checkRoute, routesOf } from '../policy/route.ts';
import { isAck } from '../runtime/ack.ts';
import type { Store } from '../store/journal/store.ts';
import type { Claims } from './claims.ts';
import { needLocalRuns } from './retry.ts';

/** One result per id, in order: where the reply went (or why it did not), or why it was not sent. */
export type RedeliverResult =
  | { id: string; ok: true; delivery: DeliveryOutcome }
  | { id: string; ok: false; code: string; error: string };

/** What the operation works with in the server. */
export interface RedeliverParts {
  store: Pick<Store, 'run' | 'lastRoute'>;
  /** The runtime's delivery of now (lib/runtime/runner.ts). */
  runs: { redeliver(run: RunRecord, reply: string): Promise<DeliveryOutcome> };
  config: () => Config;
  /** One redelivery of a run at a time: a second click waits for no second send. */
  claims: Claims;
}

/** Sends each id's stored reply again, one after another; a run with no reply or no channel is refused, saying which. */
export function redeliverOperation(parts: RedeliverParts): (args: unknown) => Promise<{ results: RedeliverResult[] }> {
  return async (raw) => {
    const ids = _ids(raw);
    needLocalRuns(parts.config(), 'runs redeliver');
    const results: RedeliverResult[] = [];
    for (const id of ids) {
      const key = `redeliver:${id}`;
      try {
        const { run, reply } = _sendable(parts, id);
        if (!parts.claims.take(key)) throw _refusal(`a redelivery of run ${id} runs now`);
        try {
          results.push({ id, ok: true, delivery: await parts.runs.redeliver(run, reply) });
        } finally {
          parts.claims.release(key);
        }
      } catch (error) {
        if (!(error instanceof HttpError)) throw error;
        results.push({ id, ok: false, code: error.code, error: error.message });
      }
    }
    return { results };
  };
}

// The run and its reply, when the reply can be sent again now: the run ended ok with a reply that
// is more than an acknowledgment, it was to be delivered, and its channel is one of the config's.
function _sendable(parts: RedeliverParts, id: string): { run: RunRecord; reply: string } {
  const run = parts.store.run(id);
  if (run === null) {
    throw new HttpError(
      404,
      ErrorCode.NotFound,
      `no run has the id ${JSON.stringify(id)} (it may have been trimmed: the newest finished runs are kept)`,
    );
  }
  if (run.status !== 'ok' || run.reply === undefined) {
    throw _refusal(`run ${id} has no reply to send (it ${_ended(run)}); runs retry runs a failed run again`);
  }
  if (!run.deliver) throw _refusal(`run ${id} has no channel: it was not to be delivered (deliver: false)`);
  const config = parts.config();
  if (isAck(run.reply, config.agents.heartbeat.ackMaxChars)) {
    throw _refusal(`run ${id}'s reply is only an acknowledgment, which is never sent`);
  }
  const unroutable = checkRoute(routesOf(config.channels), parts.store.lastRoute(), run.channel, run.to);
  if (unroutable !== null) throw _refusal(`run ${id} has no channel to send to now: ${unroutable}`);
  return { run, reply: run.reply };
}

function _ended(run: RunRecord): string {
  return run.status === 'pending' || run.status === 'running'
    ? `has not finished: ${run.status}`
    : `ended ${run.status}`;
}

function _refusal(message: string): HttpError {
  return new HttpError(409, ErrorCode.NotRetryable, message);
}

function _ids(raw: unknown): string[] {
  const ids = (raw as { ids?: unknown } | null)?.ids;
  if (!Array.isArray(ids) || ids.length === 0 || !ids.every((id) => typeof id === 'string' && id !== '')) {
    throw new HttpError(400, ErrorCode.InvalidPayload, 'ids: must be a non-empty list of run ids');
  }
  return ids as string[];
}
