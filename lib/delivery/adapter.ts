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
