// The config of a signed hook: the schemes a mapping's `signature` may name, the settings a
// verifier reads, and the schema that checks them (hooks' mapping schema and guard's verifiers
// both read this file).

import { type Issue, join, literal, number, object, optional, type Schema, string, typeName } from '../../schema.ts';

/** The signing schemes a mapping's `signature` may name. */
export const SCHEMES = [
  'standard-webhooks',
  'github',
  'meta',
  'stripe',
  'slack',
  'shopify',
  'twilio',
  'gitlab',
  'hmac',
  'token',
] as const;

export type SchemeName = (typeof SCHEMES)[number];

/** The digests a signing scheme may use. */
export type Algorithm = 'sha1' | 'sha256' | 'sha512';

/** How a digest is written in a header. */
export type Encoding = 'hex' | 'base64';

/** The prefix of a Standard Webhooks secret; the rest is the key, in base64. */
export const STANDARD_SECRET_PREFIX = 'whsec_';

/** A path's signature settings, validated and with defaults applied. */
export interface Signature {
  scheme: SchemeName;
  /** Any one of them verifies (secret rotation); the first is the one a test sender signs with. */
  secrets: readonly string[];
  /** How far a signed timestamp may be from our clock, either way (schemes with a timestamp). */
  toleranceSeconds: number;
  /** twilio: the public URL the provider calls, which it signs. */
  url?: string;
  /** meta: what the subscription handshake must present as `hub.verify_token`. */
  verifyToken?: string;
  /** hmac: the header carrying the signature, and how it is computed and written. */
  header?: string;
  algorithm?: Algorithm;
  encoding?: Encoding;
  prefix?: string;
  /**
   * Schemes whose signature covers no delivery id: a body already seen on the path within this many
   * seconds is the same delivery, whatever id its headers give. Off when absent.
   */
  dedupeBodySeconds?: number;
}

/** The longest `dedupeBodySeconds`: 30 days. */
export const MAX_DEDUPE_BODY_SECONDS = 2_592_000;

/** How far a signed timestamp may drift when `toleranceSeconds` is not set: the providers' own default. */
export const DEFAULT_TOLERANCE_SECONDS = 300;

/** A string, or a non-empty list of them: the list is for rotation (any one verifies, each one signs). */
export const secrets: Schema<string[]> = (value, at, report) => {
  const list = typeof value === 'string' ? [value] : value;
  if (!Array.isArray(list)) {
    report.issues.push({
      path: at,
      message: `must be a string or a non-empty list of strings, got ${typeName(value)}`,
    });
    return undefined;
  }
  if (list.length === 0) report.issues.push({ path: at, message: 'must list at least one secret' });
  const before = report.issues.length;
  list.forEach((item, i) => {
    const where = typeof value === 'string' ? at : join(at, i);
    if (typeof item !== 'string' || item.trim() === '') {
      report.issues.push({ path: where, message: 'must be a non-empty string' });
    }
  });
  return report.issues.length === before ? (list as string[]).map((s) => s.trim()) : undefined;
};

const raw = object({
  scheme: literal(...SCHEMES),
  secret: secrets,
  toleranceSeconds: optional(number({ integer: true, min: 1 })),
  url: optional(
    string({
      trim: true,
      pattern: {
        regex: /^https?:\/\/[^\s/]+\S*$/i,
        rule: 'must be the public http:// or https:// URL the provider calls',
      },
    }),
  ),
  verifyToken: optional(string({ trim: true, nonEmpty: true })),
  header: optional(
    string({ trim: true, pattern: { regex: /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, rule: 'must be an HTTP header name' } }),
  ),
  algorithm: optional(literal('sha256', 'sha1', 'sha512')),
  encoding: optional(literal('hex', 'base64')),
  prefix: optional(string()),
  dedupeBodySeconds: optional(number({ integer: true, min: 1, max: MAX_DEDUPE_BODY_SECONDS })),
});

// The schemes whose signature covers a delivery id (Standard Webhooks' header, Stripe's and Slack's
// event id, Meta's payload): that id already names the delivery, and a body hash could only merge
// two deliveries it tells apart.
const SIGNED_ID: readonly SchemeName[] = ['standard-webhooks', 'stripe', 'slack', 'meta'];

// Options that only one scheme reads: set on another, they would silently do nothing.
const OWNER: Readonly<Record<string, SchemeName>> = {
  url: 'twilio',
  verifyToken: 'meta',
  header: 'hmac',
  algorithm: 'hmac',
  encoding: 'hmac',
  prefix: 'hmac',
};
const REQUIRED: Readonly<Partial<Record<SchemeName, readonly string[]>>> = {
  twilio: ['url'],
  meta: ['verifyToken'],
  hmac: ['header'],
};

/** A mapping's `signature`: the scheme, its secret(s) and the options that scheme needs, with key paths. */
export const signatureSchema: Schema<Signature> = (value, at, report) => {
  const checked = raw(value, at, report);
  if (checked === undefined) return undefined;
  const before = report.issues.length;
  const { scheme, secret, toleranceSeconds, dedupeBodySeconds, ...options } = checked;
  if (dedupeBodySeconds !== undefined && SIGNED_ID.includes(scheme)) {
    report.issues.push({
      path: join(at, 'dedupeBodySeconds'),
      message: `is not read by scheme "${scheme}": its signature covers the delivery's id, which is the dedupe key`,
    });
  }
  for (const key of Object.keys(options)) {
    if (OWNER[key] !== scheme) {
      report.issues.push({ path: join(at, key), message: `is only read by scheme "${OWNER[key]}"` });
    }
  }
  for (const key of REQUIRED[scheme] ?? []) {
    if (!Object.hasOwn(options, key)) {
      report.issues.push({ path: join(at, key), message: `is required for scheme "${scheme}"` });
    }
  }
  if (scheme === 'standard-webhooks') {
    const list = Array.isArray((value as Record<string, unknown>)['secret']);
    secret.forEach((s, i) => {
      const problem = standardSecretProblem(s);
      if (problem !== null) {
        report.issues.push({ path: list ? join(join(at, 'secret'), i) : join(at, 'secret'), message: problem });
      }
    });
  }
  if (report.issues.length > before) return undefined;
  return {
    scheme,
    secrets: secret,
    toleranceSeconds: toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS,
    ...options,
    ...(dedupeBodySeconds === undefined ? {} : { dedupeBodySeconds }),
  };
};

/** Why a secret is not the specification's ("whsec_" and the key in base64, 24 to 64 bytes long), or `null`. */
export function standardSecretProblem(secret: string): string | null {
  const rule =
    `must be "${STANDARD_SECRET_PREFIX}" followed by the base64 of a 24 to 64 byte key (as the provider shows it)`;
  if (!secret.startsWith(STANDARD_SECRET_PREFIX)) return rule;
  const encoded = secret.slice(STANDARD_SECRET_PREFIX.length);
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded) || encoded.length % 4 !== 0) return rule;
  const bytes = Buffer.from(encoded, 'base64').length;
  return bytes >= 24 && bytes <= 64 ? null : `${rule}; this key is ${bytes} bytes`;
}

/** What the signature rules need to know of a mapping. */
interface Signed {
  match: { path?: string };
  signature?: Signature;
}

/**
 * The rules across mappings: a signature needs a `match.path`, every mapping of a path carries the
 * same signature, and a per-path token is not the hook token. `at(i)` is mapping i's key path.
 */
export function checkSignatures(
  mappings: readonly Signed[],
  at: (index: number) => string,
  hookToken: string | null,
): Issue[] {
  const issues: Issue[] = [];
  const first = new Map<string, number>();
  mappings.forEach((mapping, i) => {
    const { signature, match } = mapping;
    if (signature !== undefined && match.path === undefined) {
      issues.push({
        path: `${at(i)}.match.path`,
        message: 'is required on a mapping with a signature (the signature guards that path)',
      });
    }
    if (signature?.scheme === 'token' && hookToken !== null && signature.secrets.includes(hookToken)) {
      issues.push({
        path: `${at(i)}.signature.secret`,
        message: 'must differ from hooks.token (a per-path token opens that path only)',
      });
    }
    if (match.path === undefined) return;
    const j = first.get(match.path);
    if (j === undefined) {
      first.set(match.path, i);
      return;
    }
    if (JSON.stringify(mappings[j]!.signature ?? null) !== JSON.stringify(signature ?? null)) {
      issues.push({
        path: `${at(i)}.signature`,
        message: `must be the same as ${at(j)}.signature: all mappings of path "${match.path}" carry one signature`,
      });
    }
  });
  return issues;
}
