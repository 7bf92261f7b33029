import { ErrorCode, HttpError } from '../errors.ts';
import type { Client } from './address.ts';
import type { FailureLimiter } from './rate-limit.ts';
import { tokenMatches } from './token.ts';

/** The authentication of one (re)load, over the failure limiter that outlives reloads. */
export interface Auth {
  /** Counts a failure for the client and throws its answer: `status` (401 unless 403 is named), or 429 once the client is locked. */
  refuse(client: Client, refusal: string, status?: 401 | 403): never;
  /** Passes a presented token that matches one of the expected digests, else refuses with `refusal`. */
  authenticate(presented: string | null, expected: readonly (Buffer | null)[], client: Client, refusal: string): void;
}

/**
 * One limit for the hook token, the gateway token and signatures alike: a correct token passes
 * even while its client is locked out (an attacker cannot lock the operator out); anything else is
 * a failure, answered 401 (403 for a failed subscription check), or 429 once the client is locked.
 * A success clears nothing: whoever else sends from the same address (a shared NAT) would get fresh
 * guesses. Failures decay with the window.
 */
export function createAuth(limiter: FailureLimiter): Auth {
  const refuse = (client: Client, refusal: string, status: 401 | 403 = 401): never => {
    const verdict = limiter.fail(client.key);
    if (verdict.locked) {
      throw new HttpError(429, ErrorCode.TooManyFailures, 'too many failed authentication attempts; retry later', {
        headers: { 'retry-after': String(verdict.retryAfterSeconds) },
      });
    }
    throw new HttpError(status, status === 403 ? ErrorCode.NotAllowed : ErrorCode.Unauthorized, refusal);
  };
  return {
    refuse,
    authenticate(presented, expected, client, refusal) {
      // Every candidate is compared, so the time taken does not say which one matched.
      const matches = expected.map((digest) => presented !== null && digest !== null && tokenMatches(presented, digest));
      if (!matches.includes(true)) refuse(client, refusal);
    },
  };
}
