import { failure, scrub, type CallResult, type Failure } from '../http-call.ts';
import { clipLine, hideUrlCredentials } from '../text.ts';

// The rules every chat adapter follows, in one place: what text it accepts, how a failure message
// is made safe to record, which failures a retry can help, and what an abort is.

/** How long a failure message quoted from a platform may be. */
export const MESSAGE_MAX = 401;

/** Makes a message safe to record: every secret (and a URL's user:password) masked first, then on one line and clipped, so a cut never leaves half a secret. */
export function teller(secrets: readonly (string | undefined)[], mask?: string): (message: string) => string {
  return (message) => clipLine(hideUrlCredentials(scrub(message, secrets, mask)), MESSAGE_MAX);
}

/** Refuses text the caller should never have passed: empty, or longer than the platform takes (the caller chunks). */
export function checkText(platform: string, text: string, maxLength: number): void {
  if (typeof text !== 'string' || text.trim() === '') throw new RangeError('Cannot send text: it is empty');
  if (text.length > maxLength) throw new RangeError(`Cannot send text: ${text.length} characters exceed the ${platform} limit of ${maxLength}`);
}

/** Whether a platform's HTTP status says "later" (rate limited, or its own fault), so a retry can help. */
export function retryableStatus(status: number): boolean {
  return status === 429 || status >= 500;
}

/**
 * A call that got no answer. An abort is the caller's own stop and is never retried, nor an answer
 * past the cap (it would come again); a network failure is. `what` starts the message (`Cannot reach the WhatsApp Cloud API`).
 */
export function unanswered(platform: string, reply: Extract<CallResult, { ok: false }>, what: string, tell: (message: string) => string): Failure {
  if (reply.kind === 'too-large') return failure(tell(`${platform} answer refused: ${reply.message}`), false);
  return reply.kind === 'aborted' ? failure(`${platform} request aborted`, false) : failure(tell(`${what}: ${reply.message}`), true);
}
