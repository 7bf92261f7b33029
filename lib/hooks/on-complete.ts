// A run's completion callback as the config writes it (a mapping's `onComplete`, and `hooks.onComplete`
// for /agent): where a run's end is POSTed, the Standard Webhooks secrets that sign it, whether the
// reply text goes with it, and how long it is tried.

import { boolean, join, number, object, optional, type Schema, string } from '../schema.ts';
import { secrets, standardSecretProblem } from '../guard/signatures/config.ts';

/** How long a callback is tried when `onComplete.maxAgeSeconds` is not set: a day, as Svix's senders try. */
export const CALLBACK_MAX_AGE_SECONDS = 86_400;

/** An `onComplete` with its defaults applied. */
export interface OnComplete {
  /** An http(s) URL; its origin (scheme://host:port) is the queue the callback waits in. */
  url: string;
  /** Each one signs every attempt (a `webhook-signature` entry each), so a receiver can rotate. */
  secrets: readonly string[];
  includeReply: boolean;
  maxAgeSeconds: number;
}

const raw = object({
  url: string({
    trim: true,
    pattern: { regex: /^https?:\/\/[^\s/?#]+\S*$/i, rule: 'must be an http:// or https:// URL' },
  }),
  secret: secrets,
  includeReply: optional(boolean),
  maxAgeSeconds: optional(number({ integer: true, min: 1 })),
});

/** `onComplete`: the URL, the `whsec_` secret or list of them, `includeReply`, `maxAgeSeconds`, defaulted. */
export const onCompleteSchema: Schema<OnComplete> = (value, at, report) => {
  const checked = raw(value, at, report);
  if (checked === undefined) return undefined;
  const before = report.issues.length;
  if (!URL.canParse(checked.url)) report.issues.push({ path: join(at, 'url'), message: 'must be a URL' });
  const list = Array.isArray((value as Record<string, unknown>)['secret']);
  checked.secret.forEach((secret, i) => {
    const problem = standardSecretProblem(secret);
    if (problem !== null) {
      report.issues.push({ path: list ? join(join(at, 'secret'), i) : join(at, 'secret'), message: problem });
    }
  });
  if (report.issues.length > before) return undefined;
  return {
    url: checked.url,
    secrets: checked.secret,
    includeReply: checked.includeReply ?? false,
    maxAgeSeconds: checked.maxAgeSeconds ?? CALLBACK_MAX_AGE_SECONDS,
  };
};
