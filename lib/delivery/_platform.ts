// The skeleton every chat adapter shares: check the text, check the recipient, post, map the
// answer. A platform's own file says only what differs: the endpoint and body shape (`post`), the
// answer's meaning (`answer`), or, where a send is more than one call, the whole of it (`deliver`).

import {
  type CallResult,
  failure,
  invalidOption,
  MESSAGE_MAX,
  type Received,
  teller,
  unanswered,
} from './http-call.ts';
import type { Attempt } from '../retry.ts';
import type { Adapter, Sent } from './adapter.ts';
import { type NamedChannel, RECIPIENT_RULES } from '../policy/recipients.ts';

/** What every platform says about itself. */
interface _Common {
  /** The channel; its recipient rule is the policy's (`RECIPIENT_RULES`). */
  channel: NamedChannel;
  /** The platform's name in a refused text (`Cannot send text: … the Telegram limit`). */
  name: string;
  /** What answers, where it differs from `name` (BlueBubbles serves iMessage). */
  service?: string;
  maxLength: number;
  /** Makes a message safe to record (see {@link tellFor}). */
  tell: (message: string) => string;
}

/** A platform reached with one call per message. */
export interface Posting extends _Common {
  /** Starts the message for a call that reached nothing; default `<service> request failed`. */
  unreachable?: string;
  /** Posts one message: the endpoint and the body shape. */
  post(to: string, text: string, signal: AbortSignal | undefined): Promise<CallResult>;
  /** What the platform's answer means. */
  answer(reply: Received): Attempt<Sent>;
}

/** A platform whose send is more than one call (a token first) or no HTTP call at all. */
export interface Delivering extends _Common {
  /** Sends a text already checked to a recipient already checked. */
  deliver(to: string, text: string, signal: AbortSignal | undefined): Promise<Attempt<Sent>>;
}

/** The adapter of a platform: the shared checks, then the platform's own call and answer. */
export function platformAdapter(platform: Posting | Delivering): Adapter {
  const { channel, name, maxLength, tell } = platform;
  const service = platform.service ?? name;
  const checkRecipient = RECIPIENT_RULES[channel];
  const send = async (to: string, text: string, signal?: AbortSignal): Promise<Attempt<Sent>> => {
    checkText(name, text, maxLength);
    const problem = checkRecipient(to);
    if (problem !== null) return failure(tell(problem), false);
    if ('deliver' in platform) return platform.deliver(to, text, signal);
    const reply = await platform.post(to, text, signal);
    if (!reply.ok) {
      return unanswered(reply, wordsFor(service, platform.unreachable ?? `${service} request failed`), tell);
    }
    return platform.answer(reply);
  };
  return { channel, maxLength, checkRecipient, send };
}

/** Masks `secrets` in a message quoted from a platform, puts it on one line and clips it. */
export function tellFor(secrets: readonly (string | undefined)[], mask?: string): (message: string) => string {
  return teller(secrets, MESSAGE_MAX.delivery, mask);
}

/** How a platform's unanswered call is worded. */
export function wordsFor(
  service: string,
  unreachable: string,
): { refused: string; aborted: string; unreachable: string } {
  return { refused: `${service} answer refused`, aborted: `${service} request aborted`, unreachable };
}

/** A success: the platform's id of the message when it gave one as a string. */
export function sent(id: unknown): Attempt<Sent> {
  return { ok: true, value: { messageIds: typeof id === 'string' ? [id] : [] } };
}

/** Refuses text the caller should never have passed: empty, or longer than the platform takes (the caller chunks). */
export function checkText(platform: string, text: string, maxLength: number): void {
  if (typeof text !== 'string' || text.trim() === '') throw new RangeError('Cannot send text: it is empty');
  if (text.length > maxLength) {
    throw new RangeError(`Cannot send text: ${text.length} characters exceed the ${platform} limit of ${maxLength}`);
  }
}

/** Option `name` as a token sent in a header: a header value cannot hold line breaks, and a token with spaces is not a token. */
export function checkHeaderToken(name: string, value: unknown): string {
  if (typeof value !== 'string' || !/^[\x21-\x7e]+$/.test(value)) {
    throw invalidOption(name, 'must be a non-empty string of visible ASCII characters');
  }
  return value;
}

/** Option `fetch`, when given, must be one. */
export function checkFetch(fetch: unknown): void {
  if (typeof fetch !== 'function') throw invalidOption('fetch', 'must be a function');
}

/** Whether a platform's HTTP status says "later" (rate limited, or its own fault), so a retry can help. */
export function retryableStatus(status: number): boolean {
  return status === 429 || status >= 500;
}

/** Options of a platform reached with one bot token at an API base. */
export interface BotOptions {
  botToken: string;
  /** The API base; each platform has its default. */
  apiBase?: string | undefined;
  fetch?: typeof fetch | undefined;
}
