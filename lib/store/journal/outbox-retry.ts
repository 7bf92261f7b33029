// `outbox retry`: dead entries sent again, pending ones now, as the store's retryUpdates decides (forward
// mode's outbox and the completion callbacks alike). The server runs it over the control channel while it
// runs, so it stays the journal's only writer.

import { retryUpdates } from './outbox.ts';
import { callbackRetryUpdates } from './callbacks.ts';
import type { Store } from './store.ts';

/** What `outbox retry` asks for: the entry ids to send again (dead) or now (pending), or every dead entry. */
export type RetryRequest = { ids: string[] } | { dead: true };

/** What a retry did: the ids asked for that are due now, and the asked ids that are neither dead nor pending (nothing is done then). */
export interface RetryOutcome {
  retried: string[];
  notRetryable: string[];
}

/**
 * Makes the asked entries (or every dead one) pending and due now, as the store's retryUpdates
 * decides; when an asked id is neither dead nor pending nothing is changed and the outcome names it.
 */
export async function retryOutbox(
  store: Pick<Store, 'outbox' | 'callbacks' | 'commit'>,
  request: RetryRequest,
  time = new Date().toISOString(),
): Promise<RetryOutcome> {
  const forward = retryUpdates(store.outbox(), request, time);
  const callbacks = callbackRetryUpdates(store.callbacks(), request, time);
  // An id is unknown when neither queue has it.
  const unknown = forward.unknown.filter((id) => callbacks.unknown.includes(id));
  if (unknown.length > 0) return { retried: [], notRetryable: unknown };
  const effects = {
    ...(forward.updates.length > 0 ? { outboxUpdates: forward.updates } : {}),
    ...(callbacks.updates.length > 0 ? { callbackUpdates: callbacks.updates } : {}),
  };
  if (Object.keys(effects).length > 0) await store.commit(effects);
  // The pending entries ahead of an asked one are made due too (updates without a state): not counted.
  const retried = [...forward.updates, ...callbacks.updates].filter((u) => u.state === 'pending').map((u) => u.id);
  return { retried, notRetryable: [] };
}
