// The signing schemes and the shape of a path's signature settings: read by the mapping schema
// (hooks) and by the verifiers (guard), so they live here, below both.

/** The signing schemes a mapping's `signature` may name. */
export const SCHEMES = ['standard-webhooks', 'github', 'meta', 'stripe', 'slack', 'shopify', 'twilio', 'gitlab', 'hmac', 'token'] as const;

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
