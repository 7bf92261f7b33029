// The shared-token schemes: a header that carries the secret itself (GitLab's X-Gitlab-Token, a path's own
// token).

import { extractToken } from '../token.ts';
import { header, safeEqual } from './crypto.ts';
import { headerDelivery, NO_DELIVERY, PASS, refuse, type Scheme, type SignedRequest, type Verdict } from './scheme.ts';
import type { Signature } from './config.ts';

const GITLAB = 'X-Gitlab-Token';

function _any(signature: Signature, presented: string): boolean {
  let found = false;
  // Every secret is compared, so the time taken does not say which one matched.
  for (const secret of signature.secrets) found = safeEqual(presented, secret) || found;
  return found;
}

/** GitLab: `X-Gitlab-Token` carries the secret itself; retries keep `Idempotency-Key` and `X-Gitlab-Event-UUID`. */
export const gitlab: Scheme = {
  verify(signature: Signature, request: SignedRequest): Verdict {
    const presented = header(request.headers, GITLAB);
    if (presented === null) return refuse(GITLAB, 'is missing');
    return _any(signature, presented) ? PASS : refuse(GITLAB, 'does not match');
  },
  sign: (signature, _body, _now, id) => ({
    'x-gitlab-token': signature.secrets[0]!,
    'x-gitlab-event-uuid': id,
    'idempotency-key': id,
  }),
  delivery: headerDelivery('idempotency-key', 'x-gitlab-event-uuid'),
  presented: (headers) => header(headers, GITLAB),
};

/** A token of this path's own, in the usual token headers; the hook token does not open the path. */
export const pathToken: Scheme = {
  verify(signature: Signature, request: SignedRequest): Verdict {
    const presented = extractToken(request.headers);
    if (presented === null) return refuse('Authorization', 'is missing');
    return _any(signature, presented) ? PASS : refuse('Authorization', "does not carry this path's token");
  },
  sign: (signature) => ({ authorization: `Bearer ${signature.secrets[0]!}` }),
  delivery: NO_DELIVERY,
  presented: (headers) => extractToken(headers),
};
