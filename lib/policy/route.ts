// Where a reply goes: the `last` rule, defaultTo, the request-time route check.

import type { Channel } from '../model/actions.ts';
import type { Route } from '../model/records.ts';
import { type NamedChannel, RECIPIENT_RULES } from './recipients.ts';

/** What routing needs to know of a configured channel: who it can reach, and whom it reaches by default. */
export interface Reachable {
  checkRecipient(to: string): string | null;
  defaultTo?: string;
}

/** The configured channels by name. */
export type Routes = ReadonlyMap<Channel, Reachable>;

/** A route decided, or the reason there is none (`skipped`: nothing to send to, not a failure). */
export type Resolved = { ok: true; route: Route & { channel: Channel } } | {
  ok: false;
  skipped: boolean;
  reason: string;
};

/** The configured channels of a config, with the platforms' recipient rules. */
export function routesOf(
  channels: Readonly<Partial<Record<NamedChannel, { defaultTo?: string | undefined }>>>,
): Routes {
  const routes = new Map<Channel, Reachable>();
  for (const [name, section] of Object.entries(channels) as [NamedChannel, { defaultTo?: string } | undefined][]) {
    if (section === undefined) continue;
    routes.set(name, {
      checkRecipient: RECIPIENT_RULES[name],
      ...(section.defaultTo === undefined ? {} : { defaultTo: section.defaultTo }),
    });
  }
  return routes;
}

// `last` is the last route's channel, else the one configured channel (if there is exactly one).
function _channel(routes: Routes, last: Route | null, channel: Channel): Channel | undefined {
  if (channel !== 'last') return channel;
  if (last !== null) return last.channel as Channel;
  return routes.size === 1 ? [...routes.keys()][0] : undefined;
}

/**
 * Decides where a reply goes. `last` is the last route; `to` with `last` means the last route's
 * channel with that recipient; with no last route yet, the one configured channel (if there is
 * exactly one) and its default recipient.
 */
export function resolveRoute(routes: Routes, last: Route | null, channel: Channel, to: string | undefined): Resolved {
  const name = _channel(routes, last, channel);
  if (name === undefined) {
    return {
      ok: false,
      skipped: true,
      reason: routes.size === 0
        ? 'no channel is configured'
        : 'no last route yet and more than one channel is configured',
    };
  }
  const configured = routes.get(name);
  if (configured === undefined) {
    return { ok: false, skipped: false, reason: `channel ${name} is not configured (channels.${name})` };
  }
  const recipient = to ?? (last !== null && last.channel === name ? last.to : undefined) ?? configured.defaultTo;
  if (recipient === undefined) {
    return {
      ok: false,
      skipped: true,
      reason: `no recipient: the run names none and channels.${name}.defaultTo is not set`,
    };
  }
  const problem = configured.checkRecipient(recipient);
  if (problem !== null) return { ok: false, skipped: false, reason: problem };
  return { ok: true, route: { channel: name, to: recipient } };
}

/** The request-time check: a named channel must be configured and `to` well formed for it. */
export function checkRoute(
  routes: Routes,
  last: Route | null,
  channel: Channel,
  to: string | undefined,
): string | null {
  if (channel === 'last' && to === undefined) return null; // decided at delivery time
  const name = _channel(routes, last, channel);
  if (name === undefined) return null;
  const configured = routes.get(name);
  if (configured === undefined) return `channel: ${name} is not configured (channels.${name})`;
  if (to === undefined) return null;
  const problem = configured.checkRecipient(to);
  return problem === null ? null : `to: ${problem}`;
}
