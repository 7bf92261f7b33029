import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isCredentialHeader, isSecretKey, TOKEN_HEADERS, visibleHeaders } from '../lib/guard/credentials.ts';
import { buildConfig } from '../lib/config/load.ts';

test('isCredentialHeader() names the token headers, API keys, signatures, cookies and *-Token/*-Secret/*-Signature/*-Key/*-Authorization headers', () => {
  const credentials = [
    ...TOKEN_HEADERS,
    'Proxy-Authorization',
    'Cookie',
    'Set-Cookie',
    'X-Session-Cookie',
    'X-Api-Key',
    'api-key',
    'X-Hub-Signature',
    'X-Hub-Signature-256',
    'Stripe-Signature',
    'X-Slack-Signature',
    'webhook-signature',
    'svix-signature',
    'X-Shopify-Hmac-Sha256',
    'X-Twilio-Signature',
    'X-Gitlab-Token',
    'X-Gog-Token',
    'X-Auth-Token',
    'X-Client-Secret',
    'X-Amz-Security-Token',
    'X-Signing-Key',
    'X-Authorization',
    'X-Serverless-Authorization',
    'X-Forwarded-Authorization',
    'X-Credentials',
    'X-Api-Credential',
    'X-Passphrase',
  ];
  for (const name of credentials) assert.equal(isCredentialHeader(name), true, name);
  const plain = [
    'Content-Type',
    'User-Agent',
    'X-GitHub-Event',
    'X-GitHub-Delivery',
    'Idempotency-Key',
    'webhook-id',
    'webhook-timestamp',
    'X-Request-Id',
    'X-Tokenizer-Version',
    'X-Keyboard',
    'X-Authorization-Scheme',
    'X-Credentials-Hint',
  ];
  for (const name of plain) assert.equal(isCredentialHeader(name), false, name);
});

test('visibleHeaders() hides credential headers unless allowed by name, and joins repeated values', () => {
  const headers = {
    'x-api-key': 'k-123',
    'x-hub-signature-256': 'sha256=ab',
    cookie: 'a=b',
    'x-github-event': 'push',
    accept: ['a', 'b'],
    gone: undefined,
  };
  assert.deepEqual(visibleHeaders(headers), { 'x-github-event': 'push', accept: 'a, b' });
  assert.deepEqual(visibleHeaders(headers, new Set(['x-hub-signature-256'])), {
    'x-hub-signature-256': 'sha256=ab',
    'x-github-event': 'push',
    accept: 'a, b',
  });
});

test('visibleHeaders() never shows the headers the hook token is read from, even when allowed by name', () => {
  const headers = {
    Authorization: 'Bearer hook-token',
    'X-Gateway-Token': 'hook-token',
    'x-openclaw-token': 'hook-token',
    'x-hub-signature-256': 'sha256=ab',
    accept: 'a',
  };
  const allow = new Set(['authorization', 'x-gateway-token', 'x-openclaw-token', 'x-hub-signature-256']);
  assert.deepEqual(visibleHeaders(headers, allow), { 'x-hub-signature-256': 'sha256=ab', accept: 'a' });
});

test('a mapping that allows a token header is refused with its key path; other credential headers may be allowed', async () => {
  const mapping = (allow: string[]) => ({
    hooks: {
      enabled: true,
      token: 'a-token-for-spec',
      mappings: [{ match: { path: 'x' }, messageTemplate: 'm', allowCredentialHeaders: allow }],
    },
  });
  const built = await buildConfig(
    mapping(['X-Hub-Signature-256', 'Authorization', ' x-gateway-token ', 'X-OpenClaw-Token']),
    { file: null, env: {}, dir: '/etc/hooks-ingress' },
  );
  assert.deepEqual(built.ok ? [] : built.problems, [
    'hooks.mappings[0].allowCredentialHeaders[1]: may not name Authorization: the hook token is read from it, and templates and transforms never see it',
    'hooks.mappings[0].allowCredentialHeaders[2]: may not name x-gateway-token: the hook token is read from it, and templates and transforms never see it',
    'hooks.mappings[0].allowCredentialHeaders[3]: may not name X-OpenClaw-Token: the hook token is read from it, and templates and transforms never see it',
  ]);
  assert.equal(
    (await buildConfig(mapping(['X-Hub-Signature-256', 'Proxy-Authorization']), {
      file: null,
      env: {},
      dir: '/etc/hooks-ingress',
    })).ok,
    true,
  );
});

test('isSecretKey() names every key of the config that holds a secret, and not the URLs and names beside them', () => {
  for (
    const key of [
      'token',
      'hookToken',
      'botToken',
      'verifyToken',
      'accessToken',
      'secret',
      'secrets',
      'clientSecret',
      'apiKey',
      'appPassword',
      'Authorization',
      'X-Api-Key',
    ]
  ) {
    assert.equal(isSecretKey(key), true, key);
  }
  for (const key of ['tokenUrl', 'tokenFile', 'url', 'baseUrl', 'defaultTo', 'scheme', 'header', 'X-Request-Id']) {
    assert.equal(isSecretKey(key), false, key);
  }
});
