// A credential's fingerprint: what the request ledger keeps of the token a request came with, so
// that a replay can tell whether that token is still configured. Keyed (HMAC-SHA256 under a random
// key of the state directory's, never a plain hash: a hook token may be a short word, and a plain
// hash of it is found by trying words), cut to 64 bits (enough to tell configured tokens apart,
// never enough to carry the token), and prefixed with the key's own short id, so a fingerprint
// made under a key since replaced is told apart from a token since rotated.

import { createHmac } from 'node:crypto';

/** Makes and reads fingerprints under one key. */
export interface Fingerprints {
  /** The key's short id (6 hex digits): which key a fingerprint was made under. */
  readonly keyId: string;
  /** `credential`'s fingerprint: `<keyId>:<16 hex digits>`. */
  of(credential: string): string;
  /** Whether `fingerprint` was made under this key. */
  mine(fingerprint: string): boolean;
}

/** A fingerprint as the ledger keeps it. */
export const FINGERPRINT = /^[0-9a-f]{6}:[0-9a-f]{16}$/;

/** The fingerprints under `key` (at least 32 bytes). */
export function fingerprints(key: Buffer): Fingerprints {
  if (key.length < 32) {
    throw new RangeError(`Cannot make fingerprints: the key must be at least 32 bytes, got ${key.length}`);
  }
  // Each input names what it is, so a credential never hashes to the key's id.
  const keyId = _hmac(key, 'key-id\0').slice(0, 6);
  const prefix = `${keyId}:`;
  return {
    keyId,
    of: (credential) => `${prefix}${_hmac(key, `credential\0${credential}`).slice(0, 16)}`,
    mine: (fingerprint) => fingerprint.startsWith(prefix),
  };
}

function _hmac(key: Buffer, text: string): string {
  return createHmac('sha256', key).update(text).digest('hex');
}
