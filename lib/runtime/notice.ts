// Sending a notify mapping's delivery (no model call, nothing in the main session) and recording the outcome.

import type { DeliveryOutcome, NoticeRecord } from '../model/records.ts';
import { failureCode } from '../model/alerts.ts';
import { isoNow, type RuntimeContext, summarise } from './context.ts';

/**
 * Sends a notify mapping's message to its channel and recorded recipient, with delivery's chunking
 * and retries, and records the outcome on the delivery. The send is marked begun on disk first,
 * so a delivery resumed after a crash says so. Nothing goes to the main session: its text is the
 * payload's, unwrapped, and no model may read it; a failure is on the record and in the log.
 * A notify delivery never moves the last route: it is not a conversation with the agent.
 */
export async function deliverNotice(ctx: RuntimeContext, notice: NoticeRecord): Promise<void> {
  const { deliveryId, requestId } = notice;
  await ctx.store.commit({ noticeUpdates: [{ deliveryId, attempts: notice.attempts + 1 }] });
  let delivery: DeliveryOutcome;
  if (ctx.deliver === undefined) delivery = { status: 'skipped', reason: 'no delivery is configured' };
  else {
    delivery = await ctx.deliver({
      channel: notice.channel,
      ...(notice.to === undefined ? {} : { to: notice.to }),
      text: notice.text,
      signal: ctx.stopping,
    });
    // A failure during a stop may be the stop itself: nothing is recorded, so the next process sends it.
    if (ctx.stopping.aborted && delivery.status === 'failed') return;
  }
  await ctx.store.commit({
    noticeUpdates: [{ deliveryId, status: delivery.status, finishedAt: isoNow(ctx), delivery }],
  });
  const fields = { deliveryId, requestId, hook: notice.hook, status: delivery.status, channel: notice.channel };
  if (delivery.status === 'delivered') ctx.log.info('notify delivery', fields);
  else ctx.log.warn('notify delivery', { ...fields, error: summarise(delivery.reason) });
  if (delivery.status === 'failed') {
    ctx.alerts?.note({
      kind: 'delivery-failures',
      hook: notice.hook,
      code: failureCode(delivery.reason, `${delivery.channel} failed`),
    });
  }
}
