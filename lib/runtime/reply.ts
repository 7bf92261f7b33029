// Delivering a run's reply and recording the outcome.

import type { DeliveryOutcome, RunRecord } from '../model/records.ts';
import { failureCode } from '../model/alerts.ts';
import { isAck } from './ack.ts';
import { hookLine, isoNow, type RuntimeContext, summarise } from './context.ts';
import { settledCallback } from './callback-event.ts';

/** The route a delivered reply took: the main session's new last route. */
export function routeOf(delivered: { channel: string; to: string }): { channel: string; to: string } {
  return { channel: delivered.channel, to: delivered.to };
}

/**
 * Whether a run's delivery may become the last route: only when its recipient came from the
 * configuration (no `to`, so the last route's or the channel's `defaultTo`; or a mapping's literal
 * `to`). A request that names a recipient reaches it once; it never redirects later replies
 * (heartbeats, `last` runs) there.
 */
export function movesLastRoute(run: Pick<RunRecord, 'to' | 'toConfigured'>): boolean {
  return run.to === undefined || run.toConfigured === true;
}

/** Delivers a run's reply and records the outcome on the run (a failure also in the main session). */
export async function deliverReply(ctx: RuntimeContext, run: RunRecord, reply: string): Promise<void> {
  let delivery: DeliveryOutcome;
  if (isAck(reply, ctx.config.agents.heartbeat.ackMaxChars)) {
    delivery = { status: 'skipped', reason: 'the reply is only an acknowledgment' };
  } else if (ctx.deliver === undefined) delivery = { status: 'skipped', reason: 'no delivery is configured' };
  else {
    const request = {
      channel: run.channel,
      ...(run.to === undefined ? {} : { to: run.to }),
      text: reply,
      signal: ctx.stopping,
    };
    delivery = await ctx.deliver(request);
    // A failure during a stop may be the stop itself: nothing is recorded, so the next process tries again.
    if (ctx.stopping.aborted && delivery.status === 'failed') return;
  }
  const events = delivery.status === 'failed'
    ? [{
      kind: 'system' as const,
      text: hookLine(run, `: delivery to ${delivery.channel} failed: ${summarise(delivery.reason)}`),
      source: `run:${run.runId}`,
    }]
    : [];
  // The run settles with its delivery's outcome: a callback it owes is written in the same line.
  const settled = { ...(ctx.store.run(run.runId) ?? run), delivery };
  await ctx.store.commit({
    events,
    runUpdates: [{ runId: run.runId, delivery }],
    ...(delivery.status === 'delivered' && movesLastRoute(run) ? { lastRoute: routeOf(delivery) } : {}),
    callbacks: settledCallback(ctx.config, settled, isoNow(ctx)),
  });
  if (run.callback !== undefined) ctx.callbacks?.kick();
  const fields = {
    runId: run.runId,
    requestId: run.requestId,
    status: delivery.status,
    ...('channel' in delivery ? { channel: delivery.channel } : {}),
  };
  // A reply that did not arrive is, like a failed run, what an operator looks for.
  if (delivery.status === 'failed') {
    ctx.log.warn('run delivery', { ...fields, error: summarise(delivery.reason) });
    ctx.alerts?.note({
      kind: 'delivery-failures',
      hook: run.hook,
      code: failureCode(delivery.reason, `${delivery.channel} failed`),
    });
  } else ctx.log.info('run delivery', fields);
}
