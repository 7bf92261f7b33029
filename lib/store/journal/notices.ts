// The deliveries of notify mappings as the journal keeps them: recorded pending with the request
// that made them, then updated once with their outcome. Pending ones are always kept (the next
// process sends them); finished ones are history, trimmed to the newest like finished runs.

import type { NoticeSpec } from '../../model/actions.ts';
import type { NoticeRecord, NoticeUpdate } from '../../model/records.ts';
import { extend, updated } from '../../object.ts';

/** A delivery as first recorded: pending, no send begun. */
export function newNotices(specs: readonly NoticeSpec[], time: string): NoticeRecord[] {
  return specs.map((spec) => extend(spec, { status: 'pending' as const, acceptedAt: time, attempts: 0 }));
}

/** Applies a commit's new deliveries and changes to earlier ones; a change to one no longer kept is dropped. */
export function applyNotices(
  notices: Map<string, NoticeRecord>,
  added: readonly NoticeRecord[] | undefined,
  updates: readonly NoticeUpdate[] | undefined,
): void {
  for (const notice of added ?? []) notices.set(notice.deliveryId, notice);
  for (const { deliveryId, ...change } of updates ?? []) {
    const notice = notices.get(deliveryId);
    if (notice !== undefined) notices.set(deliveryId, updated(notice, change));
  }
}

/** Keeps every pending delivery and the newest `retain` finished ones, trimmed in batches. */
export function trimNotices(notices: Map<string, NoticeRecord>, retain: number): void {
  let finished = 0;
  for (const notice of notices.values()) if (notice.status !== 'pending') finished++;
  if (finished <= retain * 1.25) return;
  for (const [id, notice] of notices) {
    if (finished <= retain) break;
    if (notice.status === 'pending') continue;
    notices.delete(id);
    finished--;
  }
}
