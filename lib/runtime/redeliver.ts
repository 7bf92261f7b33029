// A run's stored reply sent again to its channel (`hooks-ingress runs redeliver`), with no model
// call: one more delivery attempt, recorded on the run beside the first.

import type { DeliveryOutcome, Redelivery, RunRecord } from '../model/records.ts';
import { isoNow, type RuntimeContext } from './context.ts';
import { movesLastRoute, routeOf } from './reply.ts';

/** How many redeliveries a run keeps: past it, the oldest go. */
export const MAX_REDELIVERIES = 20;

/**
 * Sends `run`'s reply through the delivery of now and records the outcome on the run (its newest
 * `delivery`, and one more of its `redeliveries`); a delivered reply to a configured recipient
 * moves the last route, as the first delivery does.
 */
export async function redeliverReply(ctx: RuntimeContext, run: RunRecord, reply: string): Promise<DeliveryOutcome> {
  const delivery: DeliveryOutcome = ctx.deliver === undefined
    ? { status: 'skipped', reason: 'no delivery is configured' }
    : await ctx.deliver({
      channel: run.channel,
      ...(run.to === undefined ? {} : { to: run.to }),
      text: reply,
      signal: ctx.stopping,
    });
  const attempt: Redelivery = { time: isoNow(ctx), delivery };
  await ctx.store.commit({
    runUpdates: [{
      runId: run.runId,
      delivery,
      redeliveries: [...(run.redeliveries ?? []), attempt].slice(-MAX_REDELIVERIES),
    }],
    ...(delivery.status === 'delivered' && movesLastRoute(run) ? { lastRoute: routeOf(delivery) } : {}),
  });
  const fields = { runId: run.runId, requestId: run.requestId, status: delivery.status, redelivery: true };
  if (delivery.status === 'failed') ctx.log.warn('run delivery', { ...fields, channel: delivery.channel });
  else ctx.log.info('run delivery', fields);
  return delivery;
}
