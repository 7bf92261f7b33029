// Waiting for runs to settle; OpenClaw's completion shape.

import type { Store } from '../store/journal/store.ts';
import type { RunRecord } from '../model/records.ts';
import { isAck } from './ack.ts';

/** A finished run as OpenClaw's `waitForCompletion` answers it. */
export interface Completion {
  status: 'ok' | 'error' | 'timeout';
  /** `visible`: a reply meant for the user; `silent`: only an acknowledgment; `empty`: no reply. */
  replyDisposition: 'visible' | 'silent' | 'empty';
  delivered: boolean;
  deliveryAttempted: boolean;
  deliveryError?: string;
  /** The model's text: only when the operator set `hooks.allowCompletionReply`. */
  reply?: string;
}

/** What shapes a completion answer: the ack bound and whether the reply text may be returned. */
export interface CompletionOptions {
  ackMaxChars: number;
  allowReply: boolean;
}

/** Waits for runs to settle (finished, and a reply meant for delivery delivered or given up on). */
export interface Completions {
  /** Ends early, with the runs as they are then, once `gone` calls back (the client that waits went away). */
  wait(runIds: readonly string[], timeoutMs: number, options: CompletionOptions, gone?: Gone): Promise<Completion[]>;
  /** Waits not yet ended: each holds a request, a watcher and a timer. */
  held(): number;
}

/** Subscribes to the departure of whoever waits (a client's connection closing); returns the unsubscribe. */
export type Gone = (listener: () => void) => () => void;

/** Whether nothing more will happen to a run: it ended, and any delivery it owes is recorded. */
export function isSettled(run: RunRecord): boolean {
  if (run.status === 'pending' || run.status === 'running') return false;
  return run.status !== 'ok' || !run.deliver || run.delivery !== undefined;
}

/** The completion answer for a run; a run still unsettled (the wait ran out) counts as a timeout. */
export function completionOf(run: RunRecord | null, options: CompletionOptions): Completion {
  if (run === null) {
    return {
      status: 'error',
      replyDisposition: 'empty',
      delivered: false,
      deliveryAttempted: false,
      deliveryError: 'the run is no longer on record',
    };
  }
  const ended = run.status === 'ok' || run.status === 'error' || run.status === 'timeout';
  // A dropped run never ran: it ended in an error the owner chose.
  const status = run.status === 'dropped' ? 'error' : ended ? (run.status as Completion['status']) : 'timeout';
  const reply = run.status === 'ok' ? (run.reply ?? '') : '';
  const delivery = run.delivery;
  const completion: Completion = {
    status,
    replyDisposition: reply.trim() === '' ? 'empty' : isAck(reply, options.ackMaxChars) ? 'silent' : 'visible',
    delivered: delivery?.status === 'delivered',
    deliveryAttempted: delivery?.status === 'delivered' || delivery?.status === 'failed',
  };
  if (delivery?.status === 'failed') completion.deliveryError = delivery.reason;
  if (options.allowReply && reply !== '') completion.reply = reply;
  return completion;
}

/**
 * Builds the waiter over the store's run changes. A wait ends when every run settled, at
 * `timeoutMs`, or as soon as its client went away (nothing is held for a client that cannot be
 * answered); the request that waits never holds the run, so a client that goes away cancels nothing.
 */
export function createCompletions(store: Pick<Store, 'run' | 'watchRuns'>): Completions {
  let held = 0;
  return {
    held: () => held,
    wait: (runIds, timeoutMs, options, gone) =>
      new Promise((resolve) => {
        const open = new Set(runIds.filter((id) => !_settled(store.run(id))));
        let done = false;
        let leave = _stay;
        held++;
        const finish = () => {
          if (done) return;
          done = true;
          held--;
          stop();
          leave();
          clearTimeout(timer);
          resolve(runIds.map((id) => completionOf(store.run(id), options)));
        };
        const stop = store.watchRuns((run) => {
          if (!open.has(run.runId) || !isSettled(run)) return;
          open.delete(run.runId);
          if (open.size === 0) finish();
        });
        // setTimeout fires at once past 2^31-1 ms; unref so a wait never keeps a stopping process alive.
        const timer = setTimeout(finish, Math.min(timeoutMs, 2 ** 31 - 1));
        timer.unref?.();
        if (open.size === 0) return finish();
        if (gone === undefined) return;
        leave = gone(finish);
        if (done) leave();
      }),
  };
}

const _stay = () => {};

function _settled(run: RunRecord | null): boolean {
  return run === null || isSettled(run);
}
