// Where a run's completion is POSTed, decided when the run is admitted: its mapping's `onComplete`, or for
// /agent the request's own `callbackUrl` (only to an origin of hooks.callbackOrigins) else
// `hooks.onComplete`. The run carries the decision; the secret stays in the config.

import type { CallbackSpec } from '../model/actions.ts';
import type { Config } from '../config/types.ts';
import { ErrorCode, HttpError } from '../errors.ts';
import { makeCause } from '../model/cause.ts';

/**
 * The callback of a run from mapping `mappingId` (`null`: /agent), with the URL the request named,
 * if any; `undefined` when none is configured. A `callbackUrl` is a 400: ERR_INVALID_PAYLOAD when
 * it is no http(s) URL or carries a user or password, ERR_CALLBACK_ORIGIN when its origin is not
 * listed. It is signed with `hooks.onComplete`'s secret (load requires one with the origins).
 */
export function callbackFor(config: Config, mappingId: string | null, requested?: string): CallbackSpec | undefined {
  const { hooks } = config;
  if (mappingId !== null) {
    const onComplete = hooks.mappings.find((m) => m.id === mappingId)?.onComplete;
    if (onComplete === undefined) return undefined;
    const { url, includeReply, maxAgeSeconds } = onComplete;
    return { url, mapping: mappingId, includeReply, maxAgeSeconds };
  }
  const signer = hooks.onComplete;
  if (requested === undefined) {
    return signer === null
      ? undefined
      : { url: signer.url, includeReply: signer.includeReply, maxAgeSeconds: signer.maxAgeSeconds };
  }
  const url = URL.canParse(requested) ? new URL(requested) : null;
  if (url === null || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    throw new HttpError(400, ErrorCode.InvalidPayload, 'callbackUrl: must be an http:// or https:// URL');
  }
  if (url.username !== '' || url.password !== '') {
    throw new HttpError(400, ErrorCode.InvalidPayload, 'callbackUrl: must not hold a user or password');
  }
  if (signer === null || !hooks.callbackOrigins.includes(url.origin)) {
    const rule = 'callbackUrl: its origin is not one of hooks.callbackOrigins';
    throw new HttpError(400, ErrorCode.CallbackOrigin, rule, { cause: makeCause('policy', rule) });
  }
  return { url: url.href, requested: true, includeReply: signer.includeReply, maxAgeSeconds: signer.maxAgeSeconds };
}
