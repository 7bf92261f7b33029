import type { Channel } from '../actions.ts';
import { retry, type RetryOptions } from '../retry.ts';
import type { DeliveryRequest } from '../runtime/runner.ts';
import type { DeliveryOutcome, Route } from '../store/store.ts';
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

/** A route decided, or the reason there is none. */
export type Resolved = { ok: true; route: Route; adapter: ConfiguredChannel['adapter'] } | { ok: false; skipped: boolean; reason: string };

/**
 * Decides where a reply goes. `last` is the last route; `to` with `last` means the last route's
 * channel with that recipient; with no last route yet, the one configured channel (if there is
 * exactly one) and its default recipient.
 */
export function resolveRoute(channels: ReadonlyMap<Channel, ConfiguredChannel>, last: Route | null, channel: Channel, to: string | undefined): Resolved {
  let name: Channel;
  if (channel !== 'last') name = channel;
  else if (last !== null) name = last.channel as Channel;
  else if (channels.size === 1) name = [...channels.keys()][0]!;
  else return { ok: false, skipped: true, reason: channels.size === 0 ? 'no channel is configured' : 'no last route yet and more than one channel is configured' };
  const configured = channels.get(name);
  if (configured === undefined) return { ok: false, skipped: false, reason: `channel ${name} is not configured (channels.${name})` };
  const recipient = to ?? (last !== null && last.channel === name ? last.to : undefined) ?? configured.defaultTo;
  if (recipient === undefined) return { ok: false, skipped: true, reason: `no recipient: the run names none and channels.${name}.defaultTo is not set` };
  const problem = configured.adapter.checkRecipient(recipient);
  if (problem !== null) return { ok: false, skipped: false, reason: problem };
  return { ok: true, route: { channel: name, to: recipient }, adapter: configured.adapter };
}

/** Sends replies: resolves the route, splits the text to the platform's limit, retries each part. */
export function createDeliver(options: DeliveryOptions): (request: DeliveryRequest) => Promise<DeliveryOutcome> {
  return async (request) => {
    const resolved = resolveRoute(options.channels, options.lastRoute(), request.channel, request.to);
    if (!resolved.ok) {
      return resolved.skipped ? { status: 'skipped', reason: resolved.reason } : { status: 'failed', channel: request.channel, reason: resolved.reason };
    }
    const { route, adapter } = resolved;
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

/** The request-time check: a named channel must be configured and `to` well formed for it. */
export function checkRoute(channels: ReadonlyMap<Channel, ConfiguredChannel>, last: Route | null, channel: Channel, to: string | undefined): string | null {
  if (channel === 'last' && to === undefined) return null; // decided at delivery time
  const name = channel === 'last' ? (last?.channel as Channel | undefined) ?? (channels.size === 1 ? [...channels.keys()][0] : undefined) : channel;
  if (name === undefined) return null;
  const configured = channels.get(name);
  if (configured === undefined) return `channel: ${name} is not configured (channels.${name})`;
  if (to === undefined) return null;
  const problem = configured.adapter.checkRecipient(to);
  return problem === null ? null : `to: ${problem}`;
}
