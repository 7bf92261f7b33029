import type { Config } from '../config/types.ts';
import type { StoredAnswer, Store } from '../store/store.ts';

/** What shapes a completion: the ack bound and whether the reply text may be returned. */
export interface CompletionOptions {
  ackMaxChars: number;
  allowReply: boolean;
}

/** Waits for runs to settle and answers each one's completion (the runtime provides it). */
export interface Completions {
  wait(runIds: readonly string[], timeoutMs: number, options: CompletionOptions): Promise<object[]>;
}

/** Extra time a waiting request allows beyond the run's own timeout: queueing, delivery, the commits. */
export const COMPLETION_MARGIN_MS = 30_000;

/** A remembered answer whose request asked to wait for these runs. */
export interface WaitingReply extends StoredAnswer {
  waitFor: readonly string[];
}

/**
 * Turns the 202 of a request that asked for `waitForCompletion` into the 200 with each run's
 * completion, once the runs settled (or the wait ran out). A replayed key goes through here too,
 * so a retry waits for the same runs, or gets their completion at once when they are done.
 */
export function createWaiter(config: Config, store: Pick<Store, 'run'>, completions: Completions): (reply: WaitingReply) => Promise<StoredAnswer> {
  const options = { ackMaxChars: config.agents.heartbeat.ackMaxChars, allowReply: config.hooks.allowCompletionReply };
  return async (reply) => {
    const seconds = reply.waitFor.map((id) => store.run(id)?.timeoutSeconds ?? config.agents.timeoutSeconds);
    const timeoutMs = Math.max(0, ...seconds) * 1000 + COMPLETION_MARGIN_MS;
    const done = await completions.wait(reply.waitFor, timeoutMs, options);
    const { runIds: _ids, ...rest } = reply.body;
    const body = 'runIds' in reply.body ? { ...rest, runIds: reply.waitFor, completions: done.map((c, i) => ({ runId: reply.waitFor[i], ...c })) } : { ...reply.body, completion: done[0] };
    return { status: 200, body };
  };
}
