import { failure, scrub, SCRUB_PREFIX, type CallResult, type Failure } from '../../http-call.ts';
import { asObject } from '../../object.ts';
import { clipLine, hideUrlCredentials } from '../../text.ts';

// What the HTTP providers share: how a failure message is made safe, and how an error body is read.

/** How long a provider's failure message may be: it ends up in a run record and a main-session summary. */
export const MESSAGE_MAX = 300;

/**
 * A message on one line, without any secret (a URL's user:password, the API key however short, and header values long
 * enough to be one: short ones such as `1` or `true` are not, and masking them would shred
 * messages), and bounded.
 */
export function providerTeller(apiKey: string | undefined, headers: Readonly<Record<string, string>>): (message: string) => string {
  const secrets = [apiKey, ...Object.values(headers).filter((s) => s.length >= SCRUB_PREFIX)];
  return (message) => clipLine(hideUrlCredentials(scrub(message, secrets)), MESSAGE_MAX);
}

/** A call that got no answer: an abort is not retried, nor an answer past the cap (it would come again); a connection failure is. */
export function unanswered(reply: Extract<CallResult, { ok: false }>, tell: (message: string) => string): Failure {
  if (reply.kind === 'too-large') return failure(tell(`Answer refused: ${reply.message}`), false);
  return reply.kind === 'aborted' ? failure('aborted', false) : failure(tell(`Connection failed: ${reply.message}`), true);
}

/** The error text of a JSON body: `{error: {message}}`, `{error: "..."}` or `{message}` (what compatible servers and proxies say). */
export function errorText(json: unknown): string | undefined {
  const error = asObject(json)?.['error'];
  const candidates = [asObject(error)?.['message'], error, asObject(json)?.['message']];
  return candidates.find((said): said is string => typeof said === 'string' && said.trim() !== '');
}
