import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isCredentialHeader, TOKEN_HEADERS, visibleHeaders } from '../lib/credentials.ts';
import { extractToken } from '../lib/guard/token.ts';

test('isCredentialHeader() names the token headers, API keys, signatures, cookies and *-Token/*-Secret/*-Signature/*-Key headers', () => {
  const credentials = [
    ...TOKEN_HEADERS, 'Proxy-Authorization', 'Cookie', 'Set-Cookie', 'X-Session-Cookie', 'X-Api-Key', 'api-key',
    'X-Hub-Signature', 'X-Hub-Signature-256', 'Stripe-Signature', 'X-Slack-Signature', 'webhook-signature', 'svix-signature',
    'X-Shopify-Hmac-Sha256', 'X-Twilio-Signature', 'X-Gitlab-Token', 'X-Gog-Token', 'X-Auth-Token', 'X-Client-Secret', 'X-Amz-Security-Token', 'X-Signing-Key',
  ];
  for (const name of credentials) assert.equal(isCredentialHeader(name), true, name);
  const plain = ['Content-Type', 'User-Agent', 'X-GitHub-Event', 'X-GitHub-Delivery', 'Idempotency-Key', 'webhook-id', 'webhook-timestamp', 'X-Request-Id', 'X-Tokenizer-Version', 'X-Keyboard'];
  for (const name of plain) assert.equal(isCredentialHeader(name), false, name);
});

test('visibleHeaders() hides credential headers unless allowed by name, and joins repeated values', () => {
  const headers = { 'x-api-key': 'k-123', 'x-hub-signature-256': 'sha256=ab', cookie: 'a=b', 'x-github-event': 'push', accept: ['a', 'b'], gone: undefined };
  assert.deepEqual(visibleHeaders(headers), { 'x-github-event': 'push', accept: 'a, b' });
  assert.deepEqual(visibleHeaders(headers, new Set(['x-hub-signature-256'])), { 'x-hub-signature-256': 'sha256=ab', 'x-github-event': 'push', accept: 'a, b' });
});

test('extractToken() reads exactly the token headers of the shared list, in order', () => {
  assert.deepEqual([...TOKEN_HEADERS], ['authorization', 'x-gateway-token', 'x-openclaw-token']);
  assert.equal(extractToken({ 'x-openclaw-token': 'c', 'x-gateway-token': 'b' }), 'b');
  assert.equal(extractToken({ 'x-openclaw-token': 'c' }), 'c');
});
