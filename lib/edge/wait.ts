// waitForCompletion: the 202 held until the runs settled, answered with their completions.

import type { Config } from '../config/types.ts';
import type { Store } from '../store/journal/store.ts';
import type { StoredAnswer } from '../model/records.ts';
import { extend } from '../object.ts';

/** What shapes a completion: the ack bound and whether the reply text may be returned. */
export interface CompletionOptions {
  ackMaxChars: number;
  allowReply: boolean;
}

/** Subscribes to the departure of the client that waits; returns the unsubscribe. */
export type Gone = (listener: () => void) => () => void;

/** Waits for runs to settle and answers each one's completion (the runtime provides it). */
export interface Completions {
  /** Ends early, with the runs as they are, once `gone` calls back. */
  wait(runIds: readonly string[], timeoutMs: number, options: CompletionOptions, gone?: Gone): Promise<object[]>;
  /** Waits not yet ended. */
  held(): number;
}

/** Extra time a waiting request allows beyond the run's own timeout: queueing, delivery, the commits. */
export const COMPLETION_MARGIN_MS = 30_000;

/** The status logged for a waiting request whose client went away (nginx's "client closed request"); no client sees it. */
export const CLIENT_GONE = 499;

/** Holds a waiting reply until its runs settled, or its client went away. */
export type Waiter = (reply: WaitingReply, gone?: Gone) => Promise<StoredAnswer>;

/** A remembered answer whose request asked to wait for these runs. */
export interface WaitingReply extends StoredAnswer {
  waitFor: readonly string[];
}

/**
 * Turns the 202 of a request that asked for `waitForCompletion` into the 200 with each run's
 * completion, once the runs settled (or the wait ran out). A replayed key goes through here too,
 * so a retry waits for the same runs, or gets their completion at once when they are done. A
 * client that goes away ends its wait at once (`gone`): its answer could never be sent.
 */
export function createWaiter(config: Config, store: Pick<Store, 'run'>, completions: Completions): Waiter {
  const options = { ackMaxChars: config.agents.heartbeat.ackMaxChars, allowReply: config.hooks.allowCompletionReply };
  return async (reply, gone) => {
    // A run held for a coalescing window starts at the latest when its longest wait ends.
    const seconds = reply.waitFor.map((id) => {
      const run = store.run(id);
      return (run?.timeoutSeconds ?? config.agents.timeoutSeconds) + (run?.coalesce?.maxWaitSeconds ?? 0);
    });
    const timeoutMs = Math.max(0, ...seconds) * 1000 + COMPLETION_MARGIN_MS;
    let left = false;
    const watched: Gone | undefined = gone && ((listener) => gone(() => ((left = true), listener())));
    const done = await completions.wait(reply.waitFor, timeoutMs, options, watched);
    // Never sent (the connection is gone): what the request log and the metrics record for it.
    if (left) {
      return { status: CLIENT_GONE, body: { ok: false, error: 'the client went away before the runs settled' } };
    }
    const { runIds: _ids, ...rest } = reply.body;
    const body = 'runIds' in reply.body
      ? extend(rest, { runIds: reply.waitFor, completions: done.map((c, i) => ({ runId: reply.waitFor[i], ...c })) })
      : extend(reply.body, { completion: done[0] });
    return { status: 200, body };
  };
}
