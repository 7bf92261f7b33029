import { test } from 'node:test';
import assert from 'node:assert/strict';
import { keptHeaders, keptQuery } from '../lib/edge/ledger-note.ts';

test('keptHeaders() redacts bearer credentials and keeps a header named __proto__ as data, never as the prototype', () => {
  const headers = JSON.parse(
    '{"__proto__":"p","authorization":"Bearer t","x-hub-signature-256":"sha256=ab","x-gitlab-token":"g"}',
  ) as Record<string, string>;
  const kept = keptHeaders(headers);
  assert.equal(Object.getPrototypeOf(kept), Object.prototype);
  assert.deepEqual(Object.entries(kept), [['__proto__', 'p'], ['authorization', '[redacted]'], [
    'x-hub-signature-256',
    'sha256=ab',
  ], ['x-gitlab-token', '[redacted]']]);
  assert.equal(
    JSON.stringify(kept),
    '{"__proto__":"p","authorization":"[redacted]","x-hub-signature-256":"sha256=ab","x-gitlab-token":"[redacted]"}',
  );
});

test('keptHeaders() redacts every credential header by the one rule, and keeps the signatures computed over the body', () => {
  const redacted = [
    'authorization',
    'proxy-authorization',
    'cookie',
    'x-api-key',
    'api-key',
    'x-gateway-token',
    'x-openclaw-token',
    'x-gitlab-token',
    'x-webhook-secret',
    'x-telegram-bot-api-secret-token',
    'x-db-password',
    'x-service-key',
    'x-my-hmac',
    'i-twilio-idempotency-token',
    'x-authorization',
    'x-serverless-authorization',
    'x-forwarded-authorization',
    'x-credentials',
    'x-api-credential',
    'x-passphrase',
  ];
  const kept = [
    'x-hub-signature-256',
    'x-hub-signature',
    'stripe-signature',
    'webhook-signature',
    'svix-signature',
    'x-slack-signature',
    'x-shopify-hmac-sha256',
    'x-twilio-signature',
    'x-slack-request-timestamp',
    'webhook-id',
    'idempotency-key',
    'content-type',
    'x-github-delivery',
  ];
  const headers = Object.fromEntries([...redacted, ...kept].map((name) => [name, `value of ${name}`]));
  const out = keptHeaders(headers);
  for (const name of redacted) assert.equal(out[name], '[redacted]', name);
  for (const name of kept) assert.equal(out[name], `value of ${name}`, name);
  assert.equal(
    keptHeaders({ 'x-my-hmac': 'abc' }, 'x-my-hmac')['x-my-hmac'],
    'abc',
    "an hmac path's configured header",
  );
});

test('keptQuery() redacts the values of credential-like names by the header rule (_ read as -), and keeps the others and their order', () => {
  const raw =
    'a=1&secret=s1&api_key=k1&client_secret=c1&password=p1&key=k2&auth=a1&access_token=t1&hub.verify_token=v1&X-Authorization=b1&page=2&idempotency_key=i1';
  const kept = new URLSearchParams(keptQuery(new URLSearchParams(raw), raw));
  const redacted = [
    'secret',
    'api_key',
    'client_secret',
    'password',
    'key',
    'auth',
    'access_token',
    'hub.verify_token',
    'X-Authorization',
  ];
  for (const name of redacted) assert.equal(kept.get(name), '[redacted]', name);
  assert.deepEqual([kept.get('a'), kept.get('page'), kept.get('idempotency_key')], ['1', '2', 'i1']);
  assert.deepEqual([...kept.keys()], [...new URLSearchParams(raw).keys()]);
  assert.equal(
    keptQuery(new URLSearchParams('a=1&page=2'), 'a=1&page=2'),
    'a=1&page=2',
    'a query without one is kept as it came',
  );
  assert.equal(keptQuery(new URLSearchParams(''), ''), undefined);
});
