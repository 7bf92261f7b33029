import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { FINGERPRINT, fingerprints } from '../lib/guard/fingerprint.ts';

test('fingerprints().of() is the same for a credential under the same key, and names the key', () => {
  const key = randomBytes(32);
  const a = fingerprints(key);
  const b = fingerprints(Buffer.from(key));
  assert.equal(a.of('hook-token'), b.of('hook-token'));
  assert.match(a.of('hook-token'), FINGERPRINT);
  assert.ok(a.of('hook-token').startsWith(`${a.keyId}:`));
  assert.notEqual(a.of('hook-token'), a.of('hook-token2'));
  assert.notEqual(a.of(''), a.of(' '));
});

test('fingerprints(): another key gives another fingerprint of the same credential, and mine() tells them apart', () => {
  const a = fingerprints(randomBytes(32));
  const b = fingerprints(randomBytes(32));
  assert.notEqual(a.of('hook-token'), b.of('hook-token'));
  assert.notEqual(a.keyId, b.keyId);
  assert.equal(a.mine(a.of('x')), true);
  assert.equal(a.mine(b.of('x')), false);
});

test('fingerprints(): keyed, not a plain hash, and nothing of the credential in it', () => {
  const a = fingerprints(Buffer.alloc(32, 1));
  // A fixed key gives a fixed value: HMAC-SHA256, cut to 64 bits.
  assert.equal(a.of('secret'), fingerprints(Buffer.alloc(32, 1)).of('secret'));
  assert.notEqual(a.of('secret'), fingerprints(Buffer.alloc(32, 2)).of('secret'));
  assert.ok(!a.of('abcdef').includes('abcdef'));
  for (
    const plain of [
      createHash('sha256').update('secret').digest('hex'),
      createHash('sha256').update('credential\0secret').digest('hex'),
    ]
  ) {
    assert.ok(!plain.startsWith(a.of('secret').slice(7)), 'a plain SHA-256 of the credential');
  }
});

test('fingerprints() refuses a key shorter than 32 bytes', () => {
  assert.throws(
    () => fingerprints(Buffer.alloc(16)),
    /^RangeError: Cannot make fingerprints: the key must be at least 32 bytes, got 16$/,
  );
});
