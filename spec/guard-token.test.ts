import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TOKEN_HEADERS } from '../lib/guard/credentials.ts';
import { extractToken, generateToken, tokenDigest, tokenMatches, tokensMatch } from '../lib/guard/token.ts';

test('extractToken() reads Authorization: Bearer with the scheme in any case', () => {
  for (const scheme of ['Bearer', 'bearer', 'BEARER', 'bEaReR']) {
    assert.equal(extractToken({ authorization: `${scheme} s3cret` }), 's3cret', scheme);
  }
});

test('extractToken() allows spaces or tabs after the scheme and trims the token', () => {
  assert.equal(extractToken({ authorization: 'Bearer    s3cret  ' }), 's3cret');
  assert.equal(extractToken({ authorization: 'Bearer\ts3cret' }), 's3cret');
  assert.equal(extractToken({ authorization: '  Bearer s3cret' }), 's3cret');
});

test('extractToken() falls back to x-gateway-token, then x-openclaw-token', () => {
  assert.equal(extractToken({ 'x-gateway-token': 'gw' }), 'gw');
  assert.equal(extractToken({ 'x-openclaw-token': 'oc' }), 'oc');
  assert.equal(extractToken({ 'x-gateway-token': ' gw ' }), 'gw');
});

test('extractToken() prefers Authorization, then x-gateway-token, then x-openclaw-token', () => {
  assert.equal(extractToken({ authorization: 'Bearer a', 'x-gateway-token': 'b', 'x-openclaw-token': 'c' }), 'a');
  assert.equal(extractToken({ 'x-gateway-token': 'b', 'x-openclaw-token': 'c' }), 'b');
});

test('extractToken() skips an Authorization header that carries no bearer token', () => {
  assert.equal(extractToken({ authorization: 'Basic dXNlcjpwYXNz', 'x-gateway-token': 'gw' }), 'gw');
  assert.equal(extractToken({ authorization: 'Bearer', 'x-openclaw-token': 'oc' }), 'oc');
  assert.equal(extractToken({ authorization: 'Bearer   ' }), null);
  assert.equal(extractToken({ authorization: 'Bearers3cret' }), null);
  assert.equal(extractToken({ authorization: 's3cret' }), null);
});

test('extractToken() skips empty token headers', () => {
  assert.equal(extractToken({ 'x-gateway-token': '', 'x-openclaw-token': 'oc' }), 'oc');
  assert.equal(extractToken({ 'x-gateway-token': '  ', 'x-openclaw-token': ' ' }), null);
  assert.equal(extractToken({ authorization: '' }), null);
});

test('extractToken() takes the first value of a repeated token header', () => {
  assert.equal(extractToken({ 'x-gateway-token': ['first', 'second'] } as Record<string, string | string[]>), 'first');
  assert.equal(extractToken({ 'x-openclaw-token': [] as string[] } as Record<string, string | string[]>), null);
});

test('extractToken() returns null when no header carries a token', () => {
  assert.equal(extractToken({}), null);
  assert.equal(extractToken({ 'content-type': 'application/json', cookie: 'token=x' }), null);
});

test('extractToken() reads exactly the token headers of the shared list, in order', () => {
  assert.deepEqual([...TOKEN_HEADERS], ['authorization', 'x-gateway-token', 'x-openclaw-token']);
  assert.equal(extractToken({ 'x-openclaw-token': 'c', 'x-gateway-token': 'b' }), 'b');
  assert.equal(extractToken({ 'x-openclaw-token': 'c' }), 'c');
});

test('tokensMatch() is true only for identical tokens', () => {
  assert.equal(tokensMatch('s3cret', 's3cret'), true);
  assert.equal(tokensMatch('s3cret', 's3creT'), false);
  assert.equal(tokensMatch('s3cret', 's3cret '), false);
  assert.equal(tokensMatch('', 's3cret'), false);
  assert.equal(tokensMatch('', ''), true);
  assert.equal(tokensMatch('ключ', 'ключ'), true);
});

test('tokensMatch() handles tokens of any length without throwing', () => {
  assert.equal(tokensMatch('a', 'a'.repeat(10_000)), false);
  assert.equal(tokensMatch('a'.repeat(10_000), 'a'.repeat(10_000)), true);
});

test('generateToken() returns 32 random bytes as URL-safe base64 without padding', () => {
  const token = generateToken();
  assert.match(token, /^[A-Za-z0-9_-]{43}$/);
  assert.equal(Buffer.from(token, 'base64url').length, 32);
  assert.equal(encodeURIComponent(token), token);
});

test('generateToken() returns a different token each time', () => {
  const tokens = new Set(Array.from({ length: 200 }, generateToken));
  assert.equal(tokens.size, 200);
});

test('tokenMatches() compares a presented token with a digest made once, for tokens of any length', () => {
  const expected = tokenDigest('s3cret-token');
  assert.equal(tokenMatches('s3cret-token', expected), true);
  for (const wrong of ['', 's3cret-toke', 's3cret-token ', 'S3cret-token', 'x'.repeat(10_000)]) {
    assert.equal(tokenMatches(wrong, expected), false, JSON.stringify(wrong.slice(0, 20)));
  }
  assert.equal(
    expected.length,
    32,
    'a digest is 32 bytes whatever the token length, so timingSafeEqual never sees lengths differ',
  );
  assert.equal(tokenDigest('a').length, tokenDigest('a'.repeat(1000)).length);
});
