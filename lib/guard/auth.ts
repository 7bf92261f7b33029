import { ErrorCode, HttpError } from '../errors.ts';
import { clientKey } from './address.ts';
import type { FailureLimiter } from './rate-limit.ts';
import { tokensMatch } from './token.ts';

/**
 * Checks a presented token against the expected one, or throws the refusal: 401 with `refusal`,
 * or 429 with Retry-After once the client is locked out. `clears`: a success resets the client's count.
 */
export type Authenticate = (presented: string | null, expected: string | null, client: string, refusal: string, clears: boolean) => void;

/**
 * One limit for the hook token and the gateway token alike: a correct token passes even while its
 * client is locked out (an attacker cannot lock the operator out); anything else is a failure,
 * answered 401, or 429 once the client is locked. Only the hook token clears the client's count.
 */
export function createAuthenticator(limiter: FailureLimiter): Authenticate {
  return (presented, expected, client, refusal, clears) => {
    const key = clientKey(client);
    if (presented !== null && expected !== null && tokensMatch(presented, expected)) {
      if (clears) limiter.succeed(key);
      return;
    }
    const verdict = limiter.fail(key);
    if (verdict.locked) {
      throw new HttpError(429, ErrorCode.TooManyFailures, 'too many failed authentication attempts; retry later', {
        headers: { 'retry-after': String(verdict.retryAfterSeconds) },
      });
    }
    throw new HttpError(401, ErrorCode.Unauthorized, refusal);
  };
}
