import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { postWebhook, signWebhook, WEBHOOK_ANSWER_BYTES, webhookHeaders } from '../lib/delivery/signed-webhook.ts';
import { closedUrl, fake, json } from './_fake-server.ts';

const whsec = () => `whsec_${randomBytes(32).toString('base64')}`;
const now = () => Math.floor(Date.now() / 1000);

test('webhookHeaders() signs id.timestamp.body as Standard Webhooks does: the standardwebhooks package verifies it', () => {
  const secret = whsec();
  const body = JSON.stringify({ type: 'run.completed', data: { text: 'héllo "quoted" \u2028' } });
  const headers = webhookHeaders([secret], 'msg_1', now(), body);
  assert.deepEqual(Object.keys(headers), ['webhook-id', 'webhook-timestamp', 'webhook-signature']);
  assert.deepEqual(new Webhook(secret).verify(body, headers), JSON.parse(body));
  // The package's own signature is the same one.
  const at = new Date(Number(headers['webhook-timestamp']) * 1000);
  assert.equal(headers['webhook-signature'], new Webhook(secret).sign('msg_1', at, body));
});

test('signWebhook() signs with each secret, so a receiver holding any one of them verifies (rotation)', () => {
  const [a, b] = [whsec(), whsec()];
  const body = '{"ok":true}';
  const headers = webhookHeaders([a, b], 'msg_2', now(), body);
  assert.equal(headers['webhook-signature']!.split(' ').length, 2);
  for (const secret of [a, b]) assert.deepEqual(new Webhook(secret).verify(body, headers), { ok: true });
  assert.throws(() => new Webhook(whsec()).verify(body, headers), /signature/i);
  // The body, the id and the timestamp are each signed.
  assert.throws(() => new Webhook(a).verify('{"ok":false}', headers), /signature/i);
  assert.throws(() => new Webhook(a).verify(body, { ...headers, 'webhook-id': 'msg_3' }), /signature/i);
  assert.notEqual(signWebhook([a], 'msg_2', 1, body), signWebhook([a], 'msg_2', 2, body));
});

test('postWebhook() follows no redirect: a 307 is the answer, with where it pointed', async (t) => {
  const target = await fake(t, (_req, res) => json(res, 200, {}));
  const redirecting = await fake(t, (_req, res) => res.writeHead(307, { location: `${target.url}/x` }).end());
  const answer = await postWebhook(redirecting.url, '{}', {}, {
    fetch,
    signal: AbortSignal.timeout(10_000),
    now: Date.now(),
  });
  assert.deepEqual(answer, { ok: true, status: 307, text: '', location: `${target.url}/x` });
  assert.equal(target.seen.length, 0);
  assert.equal(redirecting.seen[0]!.method, 'POST');
  assert.equal(redirecting.seen[0]!.headers['content-type'], 'application/json');
});

test('postWebhook() reads at most WEBHOOK_ANSWER_BYTES of an answer that never ends, and gives Retry-After', async (t) => {
  const endless = await fake(t, (_req, res) => {
    res.writeHead(503, { 'retry-after': '7' });
    const chunk = 'x'.repeat(16_384);
    const write = () => {
      while (res.write(chunk)) { /* fill the socket */ }
      res.once('drain', write);
    };
    res.on('error', () => undefined);
    write();
  });
  const at = Date.now();
  const answer = await postWebhook(endless.url, '{}', {}, { fetch, signal: AbortSignal.timeout(10_000), now: at });
  assert.equal(answer.ok, true);
  if (!answer.ok) return;
  assert.equal(answer.status, 503);
  assert.equal(answer.retryAfterMs, 7000);
  assert.ok(answer.text.length <= WEBHOOK_ANSWER_BYTES && answer.text.length > 0);
});

test('postWebhook() answers a refused connection as a value, never a throw', async () => {
  const answer = await postWebhook(await closedUrl(), '{}', {}, {
    fetch,
    signal: AbortSignal.timeout(10_000),
    now: Date.now(),
  });
  assert.equal(answer.ok, false);
  assert.equal(!answer.ok && answer.aborted, false);
  assert.match(!answer.ok ? answer.message : '', /fetch failed|ECONNREFUSED|Connection refused/i);
});
