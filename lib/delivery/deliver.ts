// Sending a reply: the route (policy/route.ts), chunks, retries.

import type { Channel } from '../model/actions.ts';
import { resolveRoute, type Routes } from '../policy/route.ts';
import { retry, type RetryOptions } from '../retry.ts';
import type { DeliveryOutcome, Route } from '../model/records.ts';
import type { DeliveryRequest } from './adapter.ts';
import type { ConfiguredChannel } from './channels.ts';
import { chunkText } from './chunk.ts';

export interface DeliveryOptions {
  channels: ReadonlyMap<Channel, ConfiguredChannel>;
  /** The main session's last route (the most recent successful delivery). */
  lastRoute: () => Route | null;
  retry?: Partial<Pick<RetryOptions, 'maxAttempts' | 'baseDelayMs' | 'maxDelayMs' | 'sleep' | 'random'>>;
}

/** How long one reply may spend in retries before delivery gives up. */
export const DELIVERY_BOUND_MS = 10 * 60_000;

/** Sends replies: resolves the route, splits the text to the platform's limit, retries each part. */
export function createDeliver(options: DeliveryOptions): (request: DeliveryRequest) => Promise<DeliveryOutcome> {
  const routes: Routes = new Map(
    [...options.channels].map((
      [name, c],
    ) => [name, {
      checkRecipient: c.adapter.checkRecipient,
      ...(c.defaultTo === undefined ? {} : { defaultTo: c.defaultTo }),
    }]),
  );
  return async (request) => {
    const resolved = resolveRoute(routes, options.lastRoute(), request.channel, request.to);
    if (!resolved.ok) {
      return resolved.skipped
        ? { status: 'skipped', reason: resolved.reason }
        : { status: 'failed', channel: request.channel, reason: resolved.reason };
    }
    const { route } = resolved;
    const adapter = options.channels.get(route.channel)!.adapter;
    const messageIds: string[] = [];
    for (const part of chunkText(request.text, adapter.maxLength)) {
      const sent = await retry(() => adapter.send(route.to, part, request.signal), {
        maxAttempts: 5,
        baseDelayMs: 1_000,
        maxDelayMs: 30_000,
        ...options.retry,
        // A platform asking for a very long pause does not hold the reply (or a shutdown) for hours.
        deadline: Date.now() + DELIVERY_BOUND_MS,
        ...(request.signal === undefined ? {} : { signal: request.signal }),
      });
      if (!sent.ok) {
        const partial = messageIds.length > 0 ? ` (after ${messageIds.length} part(s) were delivered)` : '';
        return { status: 'failed', channel: route.channel, to: route.to, reason: `${sent.message}${partial}` };
      }
      messageIds.push(...sent.value.messageIds);
    }
    return { status: 'delivered', channel: route.channel, to: route.to, messageIds };
  };
}
