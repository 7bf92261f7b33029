import assert from 'node:assert/strict';
import { test } from 'node:test';
import { deliveryId, describeRefusal, signRequest, verifySignature, type Signature, type Verdict } from '../lib/guard/signature.ts';
import { githubExample, SIGNERS, WHSEC, WHSEC_2 } from './_signers.ts';

const NOW_S = 1_700_000_000;
const NOW_MS = NOW_S * 1000 + 456;
const TOLERANCE = 300;
const TWILIO_URL = 'https://hooks.example.com/hooks/sms';

interface Case {
  title: string;
  signer: string;
  signature: Omit<Signature, 'secrets' | 'toleranceSeconds'>;
  secret: string;
  other: string;
  /** The header a missing or wrong signature is reported under. */
  header: string;
  body: string;
  timestamp?: string;
  /** Schemes whose credential does not depend on the body (gitlab, token). */
  bodyFree?: boolean;
}

const JSON_BODY = JSON.stringify({ id: 'evt_1', type: 'invoice.paid', text: 'grüße, 東京' });
const CASES: Case[] = [
  { title: 'standard-webhooks', signer: 'standard-webhooks', signature: { scheme: 'standard-webhooks' }, secret: WHSEC, other: WHSEC_2, header: 'webhook-signature', body: JSON_BODY, timestamp: 'webhook-timestamp' },
  { title: 'standard-webhooks with svix-* headers', signer: 'svix', signature: { scheme: 'standard-webhooks' }, secret: WHSEC, other: WHSEC_2, header: 'svix-signature', body: JSON_BODY, timestamp: 'svix-timestamp' },
  { title: 'github', signer: 'github', signature: { scheme: 'github' }, secret: 'gh-secret', other: 'gh-other', header: 'X-Hub-Signature-256', body: JSON.stringify(githubExample('push')) },
  { title: 'meta', signer: 'meta', signature: { scheme: 'meta', verifyToken: 'v' }, secret: 'app-secret', other: 'app-other', header: 'X-Hub-Signature-256', body: JSON_BODY },
  { title: 'stripe', signer: 'stripe', signature: { scheme: 'stripe' }, secret: 'whsec_stripe_one', other: 'whsec_stripe_two', header: 'Stripe-Signature', body: JSON_BODY, timestamp: 'Stripe-Signature' },
  { title: 'slack', signer: 'slack', signature: { scheme: 'slack' }, secret: 'slack-secret', other: 'slack-other', header: 'X-Slack-Signature', body: JSON_BODY, timestamp: 'X-Slack-Request-Timestamp' },
  { title: 'shopify', signer: 'shopify', signature: { scheme: 'shopify' }, secret: 'shpss_one', other: 'shpss_two', header: 'X-Shopify-Hmac-Sha256', body: JSON_BODY },
  {
    title: 'twilio',
    signer: 'twilio',
    signature: { scheme: 'twilio', url: TWILIO_URL },
    secret: 'twilio-auth-token',
    other: 'twilio-other-token',
    header: 'X-Twilio-Signature',
    body: 'MessageSid=SM1&From=%2B15551234567&To=%2B15557654321&Body=Gr%C3%BC%C3%9Fe+aus+Berlin&NumMedia=0',
  },
  { title: 'gitlab', signer: 'gitlab', signature: { scheme: 'gitlab' }, secret: 'gl-token', other: 'gl-other', header: 'X-Gitlab-Token', body: JSON_BODY, bodyFree: true },
  {
    title: 'hmac (generic)',
    signer: 'hmac',
    signature: { scheme: 'hmac', header: 'X-Signature', algorithm: 'sha512', encoding: 'hex', prefix: 'sha512=' },
    secret: 'generic-one',
    other: 'generic-two',
    header: 'X-Signature',
    body: JSON_BODY,
  },
  { title: 'token', signer: 'token', signature: { scheme: 'token' }, secret: 'path-token', other: 'path-other', header: 'Authorization', body: JSON_BODY, bodyFree: true },
];

function config(c: Case, secrets: string[]): Signature {
  return { ...c.signature, secrets, toleranceSeconds: TOLERANCE };
}

async function signed(c: Case, options: { secret?: string; at?: number; body?: string } = {}) {
  const body = options.body ?? c.body;
  const headers = await SIGNERS[c.signer]!({ secret: options.secret ?? c.secret, body, nowSeconds: options.at ?? NOW_S, id: 'delivery-1', url: TWILIO_URL });
  return { headers: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v])), body: Buffer.from(body, 'utf8'), query: '' };
}

function refused(verdict: Verdict, header: string): void {
  assert.equal(verdict.ok, false, 'expected a refusal');
  if (!verdict.ok) assert.equal(verdict.header.toLowerCase(), header.toLowerCase());
}

for (const c of CASES) {
  test(`verifySignature() ${c.title}: the provider's own signature passes`, async () => {
    assert.deepEqual(verifySignature(config(c, [c.secret]), await signed(c), NOW_MS), { ok: true });
  });

  test(`verifySignature() ${c.title}: a wrong secret is refused, naming ${c.header}`, async () => {
    refused(verifySignature(config(c, [c.secret]), await signed(c, { secret: c.other }), NOW_MS), c.header);
  });

  test(`verifySignature() ${c.title}: a rotated secret list passes with either secret`, async () => {
    for (const secret of [c.secret, c.other]) {
      assert.deepEqual(verifySignature(config(c, [c.other, c.secret]), await signed(c, { secret }), NOW_MS), { ok: true });
    }
  });

  test(`verifySignature() ${c.title}: a missing ${c.header} is refused by name`, async () => {
    const request = await signed(c);
    delete request.headers[c.header.toLowerCase()];
    refused(verifySignature(config(c, [c.secret]), request, NOW_MS), c.header);
  });

  if (c.bodyFree !== true) {
    test(`verifySignature() ${c.title}: one changed byte of the body is refused`, async () => {
      const request = await signed(c);
      request.body[request.body.length - 3]! ^= 0x01;
      refused(verifySignature(config(c, [c.secret]), request, NOW_MS), c.header);
    });
  }

  if (c.timestamp !== undefined) {
    const at = c.timestamp;
    test(`verifySignature() ${c.title}: a timestamp older or newer than the tolerance is refused, naming ${at}`, async () => {
      for (const offset of [-TOLERANCE - 1, TOLERANCE + 1]) {
        refused(verifySignature(config(c, [c.secret]), await signed(c, { at: NOW_S + offset }), NOW_MS), at);
      }
      for (const offset of [-TOLERANCE, TOLERANCE]) {
        assert.deepEqual(verifySignature(config(c, [c.secret]), await signed(c, { at: NOW_S + offset }), NOW_MS), { ok: true });
      }
    });
  }

  test(`signRequest() ${c.title}: what the test sender signs verifies`, () => {
    const signature = config(c, [c.secret]);
    const headers = signRequest(signature, Buffer.from(c.body), NOW_MS, 'id-1');
    assert.deepEqual(verifySignature(signature, { headers, body: Buffer.from(c.body), query: '' }, NOW_MS), { ok: true });
  });
}

test('verifySignature() refuses a timestamp that is not whole seconds, naming the header', async () => {
  const c = CASES[0]!;
  const request = await signed(c);
  request.headers['webhook-timestamp'] = '1700000000.5';
  refused(verifySignature(config(c, [c.secret]), request, NOW_MS), 'webhook-timestamp');
  const slack = CASES.find((x) => x.title === 'slack')!;
  const other = await signed(slack);
  other.headers['x-slack-request-timestamp'] = 'soon';
  refused(verifySignature(config(slack, [slack.secret]), other, NOW_MS), 'X-Slack-Request-Timestamp');
});

test('verifySignature() standard-webhooks: any v1 entry of the list may match; other versions are skipped', async () => {
  const c = CASES[0]!;
  const request = await signed(c);
  request.headers['webhook-signature'] = `v1a,AAAA v1,${Buffer.alloc(32).toString('base64')} ${request.headers['webhook-signature']}`;
  assert.deepEqual(verifySignature(config(c, [c.secret]), request, NOW_MS), { ok: true });
  request.headers['webhook-signature'] = 'v1a,AAAA';
  refused(verifySignature(config(c, [c.secret]), request, NOW_MS), 'webhook-signature');
});

test('verifySignature() stripe: any v1 may match; a header without t= or v1= is refused', async () => {
  const c = CASES.find((x) => x.title === 'stripe')!;
  const request = await signed(c);
  const value = request.headers['stripe-signature']!;
  request.headers['stripe-signature'] = `${value},v1=${'0'.repeat(64)},v0=abc`;
  assert.deepEqual(verifySignature(config(c, [c.secret]), request, NOW_MS), { ok: true });
  for (const broken of [value.replace(/t=\d+,?/, ''), value.replace(/,?v1=[0-9a-f]+/, '')]) {
    request.headers['stripe-signature'] = broken;
    refused(verifySignature(config(c, [c.secret]), request, NOW_MS), 'Stripe-Signature');
  }
});

test('verifySignature() github: a signature without the sha256= prefix is refused', async () => {
  const c = CASES.find((x) => x.title === 'github')!;
  const request = await signed(c);
  request.headers['x-hub-signature-256'] = request.headers['x-hub-signature-256']!.slice('sha256='.length);
  refused(verifySignature(config(c, [c.secret]), request, NOW_MS), 'X-Hub-Signature-256');
});

test('verifySignature() twilio: the query string Twilio called is part of the signed URL, and repeated parameters sort by value', async () => {
  const c = CASES.find((x) => x.title === 'twilio')!;
  const body = 'To=%2B1&MediaUrl=b&MediaUrl=a&Body=hi';
  const headers = await SIGNERS['twilio']!({ secret: c.secret, body, nowSeconds: NOW_S, id: 'x', url: `${TWILIO_URL}?tenant=7` });
  const request = { headers, body: Buffer.from(body), query: 'tenant=7' };
  assert.deepEqual(verifySignature(config(c, [c.secret]), request, NOW_MS), { ok: true });
  refused(verifySignature(config(c, [c.secret]), { ...request, query: 'tenant=8' }, NOW_MS), 'X-Twilio-Signature');
});

test('verifySignature() twilio: a URL signed with the default port written out also passes', async () => {
  const c = CASES.find((x) => x.title === 'twilio')!;
  const headers = await SIGNERS['twilio']!({ secret: c.secret, body: c.body, nowSeconds: NOW_S, id: 'x', url: 'https://hooks.example.com:443/hooks/sms' });
  assert.deepEqual(verifySignature(config(c, [c.secret]), { headers, body: Buffer.from(c.body), query: '' }, NOW_MS), { ok: true });
});

test('verifySignature() twilio: a JSON body is checked against bodySHA256 in the signed URL', async () => {
  const c = CASES.find((x) => x.title === 'twilio')!;
  const body = '{"hello":"world"}';
  const { createHash } = await import('node:crypto');
  const url = `${TWILIO_URL}?bodySHA256=${createHash('sha256').update(body).digest('hex')}`;
  const { default: twilio } = await import('twilio');
  const headers = { 'content-type': 'application/json', 'x-twilio-signature': twilio.getExpectedTwilioSignature(c.secret, url, {}) };
  const signature = config(c, [c.secret]);
  signature.url = url;
  assert.deepEqual(verifySignature(signature, { headers, body: Buffer.from(body), query: '' }, NOW_MS), { ok: true });
  refused(verifySignature(signature, { headers, body: Buffer.from('{"hello":"world!"}'), query: '' }, NOW_MS), 'X-Twilio-Signature');
});

test('deliveryId() takes each provider\'s delivery header, and the event id from a Stripe body', () => {
  const sig = (scheme: Signature['scheme']): Signature => ({ scheme, secrets: ['s'], toleranceSeconds: 300 });
  assert.equal(deliveryId(sig('github'), { 'x-github-delivery': 'gh-1' }, {}), 'gh-1');
  assert.equal(deliveryId(sig('standard-webhooks'), { 'webhook-id': 'msg_1' }, {}), 'msg_1');
  assert.equal(deliveryId(sig('standard-webhooks'), { 'svix-id': 'msg_2' }, {}), 'msg_2');
  assert.equal(deliveryId(sig('shopify'), { 'x-shopify-webhook-id': 'sh-1' }, {}), 'sh-1');
  assert.equal(deliveryId(sig('twilio'), { 'i-twilio-idempotency-token': 'tw-1' }, {}), 'tw-1');
  assert.equal(deliveryId(sig('gitlab'), { 'x-gitlab-event-uuid': 'gl-1' }, {}), 'gl-1');
  assert.equal(deliveryId(sig('stripe'), {}, { id: 'evt_9' }), 'evt_9');
  assert.equal(deliveryId(sig('stripe'), {}, { id: 9 }), null);
  assert.equal(deliveryId(sig('meta'), { 'x-github-delivery': 'x' }, {}), null);
  assert.equal(deliveryId(sig('slack'), {}, {}), null);
});

test('describeRefusal() names the header and the rule, never a secret or an expected value', async () => {
  const c = CASES.find((x) => x.title === 'github')!;
  const verdict = verifySignature(config(c, [c.secret]), await signed(c, { secret: c.other }), NOW_MS);
  assert.equal(verdict.ok, false);
  const text = describeRefusal(verdict as Verdict & { ok: false });
  assert.equal(text, 'invalid signature: X-Hub-Signature-256 does not match the body');
});
