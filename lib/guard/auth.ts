// Authentication over the failure limiter: the refusal (401, 403 or 429) returned as a value, each text made
// once.

import { ErrorCode, HttpError } from '../errors.ts';
import type { Client } from './address.ts';
import type { FailureLimiter } from './rate-limit.ts';
import { tokenMatches } from './token.ts';

/**
 * The authentication of one (re)load, over the failure limiter that outlives reloads. A refusal is
 * an expected outcome, returned as a value: a flood of wrong tokens is the one load an attacker
 * chooses, and throwing each refusal through the request's promises cost more than the check.
 */
export interface Auth {
  /** Counts a failure for the client and returns its answer: `status` (401 unless 403 is named), or 429 once the client is locked. */
  refuse(client: Client, refusal: string, status?: 401 | 403): HttpError;
  /** `null` for a presented token that matches one of the expected digests, else the refusal (`refuse` with `refusal`). */
  authenticate(
    presented: string | null,
    expected: readonly (Buffer | null)[],
    client: Client,
    refusal: string,
  ): HttpError | null;
}

/** How many distinct refusals are kept made. */
const _MAX_REFUSALS = 64;

/**
 * One limit for the hook token, the gateway token and signatures alike: a correct token passes
 * even while its client is locked out (an attacker cannot lock the operator out); anything else is
 * a failure, answered 401 (403 for a failed subscription check), or 429 once the client is locked.
 * A success clears nothing: whoever else sends from the same address (a shared NAT) would get fresh
 * guesses. Failures decay with the window. `onLockout` hears of each lock once, when it begins.
 */
export function createAuth(limiter: FailureLimiter, onLockout: (client: Client) => void = () => {}): Auth {
  // The same few refusals answer a flood of wrong tokens: each is made once (making an Error is a
  // visible part of a refusal's cost) and frozen.
  const made = new Map<string, HttpError>();
  const refusalOf = (status: 401 | 403, refusal: string): HttpError => {
    const key = `${status} ${refusal}`;
    let error = made.get(key);
    if (error === undefined) {
      error = new HttpError(status, status === 403 ? ErrorCode.NotAllowed : ErrorCode.Unauthorized, refusal, {
        headers: Object.freeze({}),
      });
      // Shared by every request refused alike: nobody who holds one may change it for the rest.
      Object.freeze(error);
      // Refusal texts come from the code and the config, never from a request; the bound is a backstop.
      if (made.size < _MAX_REFUSALS) made.set(key, error);
    }
    return error;
  };
  const refuse = (client: Client, refusal: string, status: 401 | 403 = 401): HttpError => {
    const verdict = limiter.fail(client.key);
    // Said once, as the lock begins: the 429s that follow are its consequence, not news.
    if (!verdict.locked && verdict.remaining === 0) onLockout(client);
    if (verdict.locked) {
      return new HttpError(429, ErrorCode.TooManyFailures, 'too many failed authentication attempts; retry later', {
        headers: { 'retry-after': String(verdict.retryAfterSeconds) },
      });
    }
    return refusalOf(status, refusal);
  };
  return {
    refuse,
    authenticate(presented, expected, client, refusal) {
      // Every candidate is compared, so the time taken does not say which one matched.
      let matched = false;
      for (const digest of expected) {
        if (presented !== null && digest !== null && tokenMatches(presented, digest)) matched = true;
      }
      return matched ? null : refuse(client, refusal);
    },
  };
}
