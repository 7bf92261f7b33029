// The interface of a chat channel, and of a delivery request.

import type { Channel } from '../model/actions.ts';
import type { DeliveryOutcome } from '../model/records.ts';
import type { Attempt } from '../retry.ts';

/** What a successful send returns: the platform's ids for the message(s) it created. */
export interface Sent {
  messageIds: string[];
}

/**
 * One chat platform. `send` posts ONE message no longer than `maxLength` (the caller chunks and
 * retries); a failure says whether a retry can help, and carries the platform's own message
 * without any token.
 */
export interface Adapter {
  readonly channel: string;
  /** The platform's limit for one message, in characters. */
  readonly maxLength: number;
  /** Why `to` cannot be a recipient on this platform, or `null` when it can. */
  checkRecipient(to: string): string | null;
  send(to: string, text: string, signal?: AbortSignal): Promise<Attempt<Sent>>;
}

/** What delivery is asked to do with a reply; the delivery layer resolves `last` and chunks. */
export interface DeliveryRequest {
  channel: Channel;
  to?: string;
  text: string;
  /** Aborted when the process stops: delivery gives up between attempts. */
  signal?: AbortSignal;
}

/** Sends one reply; the outcome is recorded with its run. */
export type Deliver = (request: DeliveryRequest) => Promise<DeliveryOutcome>;
