import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import {
  deliveryId,
  describeRefusal,
  loadSchemes,
  signRequest,
  verifySignature,
} from '../lib/guard/signatures/verify.ts';
import { SCHEMES, type Signature } from '../lib/guard/signatures/config.ts';
import type { Verdict } from '../lib/guard/signatures/scheme.ts';
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
  {
    title: 'standard-webhooks',
    signer: 'standard-webhooks',
    signature: { scheme: 'standard-webhooks' },
    secret: WHSEC,
    other: WHSEC_2,
    header: 'webhook-signature',
    body: JSON_BODY,
    timestamp: 'webhook-timestamp',
  },
  {
    title: 'standard-webhooks with svix-* headers',
    signer: 'svix',
    signature: { scheme: 'standard-webhooks' },
    secret: WHSEC,
    other: WHSEC_2,
    header: 'svix-signature',
    body: JSON_BODY,
    timestamp: 'svix-timestamp',
  },
  {
    title: 'github',
    signer: 'github',
    signature: { scheme: 'github' },
    secret: 'gh-secret',
    other: 'gh-other',
    header: 'X-Hub-Signature-256',
    body: JSON.stringify(githubExample('push')),
  },
  {
    title: 'meta',
    signer: 'meta',
    signature: { scheme: 'meta', verifyToken: 'v' },
    secret: 'app-secret',
    other: 'app-other',
    header: 'X-Hub-Signature-256',
    body: JSON_BODY,
  },
  {
    title: 'stripe',
    signer: 'stripe',
    signature: { scheme: 'stripe' },
    secret: 'whsec_stripe_one',
    other: 'whsec_stripe_two',
    header: 'Stripe-Signature',
    body: JSON_BODY,
    timestamp: 'Stripe-Signature',
  },
  {
    title: 'slack',
    signer: 'slack',
    signature: { scheme: 'slack' },
    secret: 'slack-secret',
    other: 'slack-other',
    header: 'X-Slack-Signature',
    body: JSON_BODY,
    timestamp: 'X-Slack-Request-Timestamp',
  },
  {
    title: 'shopify',
    signer: 'shopify',
    signature: { scheme: 'shopify' },
    secret: 'shpss_one',
    other: 'shpss_two',
    header: 'X-Shopify-Hmac-Sha256',
    body: JSON_BODY,
  },
  {
    title: 'twilio',
    signer: 'twilio',
    signature: { scheme: 'twilio', url: TWILIO_URL },
    secret: 'twilio-auth-token',
    other: 'twilio-other-token',
    header: 'X-Twilio-Signature',
    body: 'MessageSid=SM1&From=%2B15551234567&To=%2B15557654321&Body=Gr%C3%BC%C3%9Fe+aus+Berlin&NumMedia=0',
  },
  {
    title: 'gitlab',
    signer: 'gitlab',
    signature: { scheme: 'gitlab' },
    secret: 'gl-token',
    other: 'gl-other',
    header: 'X-Gitlab-Token',
    body: JSON_BODY,
    bodyFree: true,
  },
  {
    title: 'hmac (generic)',
    signer: 'hmac',
    signature: { scheme: 'hmac', header: 'X-Signature', algorithm: 'sha512', encoding: 'hex', prefix: 'sha512=' },
    secret: 'generic-one',
    other: 'generic-two',
    header: 'X-Signature',
    body: JSON_BODY,
  },
  {
    title: 'token',
    signer: 'token',
    signature: { scheme: 'token' },
    secret: 'path-token',
    other: 'path-other',
    header: 'Authorization',
    body: JSON_BODY,
    bodyFree: true,
  },
];

function config(c: Case, secrets: string[]): Signature {
  return { ...c.signature, secrets, toleranceSeconds: TOLERANCE };
}

async function signed(c: Case, options: { secret?: string; at?: number; body?: string } = {}) {
  const body = options.body ?? c.body;
  const headers = await SIGNERS[c.signer]!({
    secret: options.secret ?? c.secret,
    body,
    nowSeconds: options.at ?? NOW_S,
    id: 'delivery-1',
    url: TWILIO_URL,
  });
  return {
    headers: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v])),
    body: Buffer.from(body, 'utf8'),
    query: '',
  };
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
      assert.deepEqual(verifySignature(config(c, [c.other, c.secret]), await signed(c, { secret }), NOW_MS), {
        ok: true,
      });
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
        assert.deepEqual(verifySignature(config(c, [c.secret]), await signed(c, { at: NOW_S + offset }), NOW_MS), {
          ok: true,
        });
      }
    });
  }

  test(`signRequest() ${c.title}: what the test sender signs verifies`, () => {
    const signature = config(c, [c.secret]);
    const headers = signRequest(signature, Buffer.from(c.body), NOW_MS, 'id-1');
    assert.deepEqual(verifySignature(signature, { headers, body: Buffer.from(c.body), query: '' }, NOW_MS), {
      ok: true,
    });
  });
}

// A config's loading imports the schemes it names; these specs call the verifiers without one.
before(() => loadSchemes(SCHEMES));

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
  request.headers['webhook-signature'] = `v1a,AAAA v1,${Buffer.alloc(32).toString('base64')} ${
    request.headers['webhook-signature']
  }`;
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
  const headers = await SIGNERS['twilio']!({
    secret: c.secret,
    body,
    nowSeconds: NOW_S,
    id: 'x',
    url: `${TWILIO_URL}?tenant=7`,
  });
  const request = { headers, body: Buffer.from(body), query: 'tenant=7' };
  assert.deepEqual(verifySignature(config(c, [c.secret]), request, NOW_MS), { ok: true });
  refused(verifySignature(config(c, [c.secret]), { ...request, query: 'tenant=8' }, NOW_MS), 'X-Twilio-Signature');
});

test('verifySignature() twilio: a URL signed with the default port written out also passes', async () => {
  const c = CASES.find((x) => x.title === 'twilio')!;
  const headers = await SIGNERS['twilio']!({
    secret: c.secret,
    body: c.body,
    nowSeconds: NOW_S,
    id: 'x',
    url: 'https://hooks.example.com:443/hooks/sms',
  });
  assert.deepEqual(verifySignature(config(c, [c.secret]), { headers, body: Buffer.from(c.body), query: '' }, NOW_MS), {
    ok: true,
  });
});

test('verifySignature() twilio: a JSON body is checked against bodySHA256 in the signed URL', async () => {
  const c = CASES.find((x) => x.title === 'twilio')!;
  const body = '{"hello":"world"}';
  const { createHash } = await import('node:crypto');
  const url = `${TWILIO_URL}?bodySHA256=${createHash('sha256').update(body).digest('hex')}`;
  const { default: twilio } = await import('twilio');
  const headers = {
    'content-type': 'application/json',
    'x-twilio-signature': twilio.getExpectedTwilioSignature(c.secret, url, {}),
  };
  const signature = config(c, [c.secret]);
  signature.url = url;
  assert.deepEqual(verifySignature(signature, { headers, body: Buffer.from(body), query: '' }, NOW_MS), { ok: true });
  refused(
    verifySignature(signature, { headers, body: Buffer.from('{"hello":"world!"}'), query: '' }, NOW_MS),
    'X-Twilio-Signature',
  );
});

test('verifySignature() twilio: a body that is neither form-encoded nor pinned by bodySHA256 is refused (a signature over the URL alone covers none of it)', async () => {
  const c = CASES.find((x) => x.title === 'twilio')!;
  const { default: twilio } = await import('twilio');
  // What Twilio's library signs for a request without parameters: the URL alone.
  const urlOnly = twilio.getExpectedTwilioSignature(c.secret, TWILIO_URL, {});
  for (
    const [type, body] of [['application/json', '{"Body":"transfer everything"}'], ['text/plain', 'anything at all'], [
      undefined,
      '{"Body":"x"}',
    ]] as const
  ) {
    const headers: Record<string, string> = {
      'x-twilio-signature': urlOnly,
      ...(type === undefined ? {} : { 'content-type': type }),
    };
    const verdict = verifySignature(config(c, [c.secret]), { headers, body: Buffer.from(body), query: '' }, NOW_MS);
    refused(verdict, 'X-Twilio-Signature');
    assert.match((verdict as { reason: string }).reason, /does not cover this body.*bodySHA256/);
  }
  // The same signature over an empty form is still what Twilio sends for a form without parameters.
  const form = { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': urlOnly };
  assert.deepEqual(
    verifySignature(config(c, [c.secret]), { headers: form, body: Buffer.alloc(0), query: '' }, NOW_MS),
    { ok: true },
  );
});

test("deliveryId() takes each provider's delivery id, signed where the signature covers it (webhook-id, a Stripe event id, a Slack event_id)", () => {
  const sig = (scheme: Signature['scheme'], extra: Partial<Signature> = {}): Signature => ({
    scheme,
    secrets: ['s'],
    toleranceSeconds: 300,
    ...extra,
  });
  const req = (headers: Record<string, string> = {}, body = '') => ({ headers, body: Buffer.from(body), query: '' });
  assert.deepEqual(deliveryId(sig('github'), req({ 'x-github-delivery': 'gh-1' }), {}), { id: 'gh-1', signed: false });
  assert.deepEqual(deliveryId(sig('standard-webhooks'), req({ 'webhook-id': 'msg_1' }), {}), {
    id: 'msg_1',
    signed: true,
  });
  assert.deepEqual(deliveryId(sig('standard-webhooks'), req({ 'svix-id': 'msg_2' }), {}), {
    id: 'msg_2',
    signed: true,
  });
  // The id the signature was checked with: webhook-id when both are there.
  assert.deepEqual(deliveryId(sig('standard-webhooks'), req({ 'svix-id': 'msg_3', 'webhook-id': 'msg_4' }), {}), {
    id: 'msg_4',
    signed: true,
  });
  assert.deepEqual(deliveryId(sig('shopify'), req({ 'x-shopify-webhook-id': 'sh-1' }), {}), {
    id: 'sh-1',
    signed: false,
  });
  assert.deepEqual(deliveryId(sig('twilio'), req({ 'i-twilio-idempotency-token': 'tw-1' }), {}), {
    id: 'tw-1',
    signed: false,
  });
  assert.deepEqual(deliveryId(sig('gitlab'), req({ 'x-gitlab-event-uuid': 'gl-1' }), {}), {
    id: 'gl-1',
    signed: false,
  });
  assert.deepEqual(deliveryId(sig('stripe'), req(), { id: 'evt_9' }), { id: 'evt_9', signed: true });
  assert.equal(deliveryId(sig('stripe'), req(), { id: 9 }), null);
  assert.deepEqual(deliveryId(sig('slack'), req(), { type: 'event_callback', event_id: 'Ev08MFMKH6' }), {
    id: 'Ev08MFMKH6',
    signed: true,
  });
  assert.equal(deliveryId(sig('slack'), req(), { type: 'url_verification', event_id: 'Ev1' }), null);
  assert.equal(deliveryId(sig('slack'), req(), {}), null);
  assert.equal(deliveryId(sig('hmac'), req({ 'x-github-delivery': 'x' }), {}), null);
  assert.equal(deliveryId(sig('token'), req(), {}), null);
});

test("deliveryId() with dedupeBodySeconds: the body's hash for that long, whatever id a header gives", () => {
  const signature: Signature = { scheme: 'github', secrets: ['s'], toleranceSeconds: 300, dedupeBodySeconds: 600 };
  const a = deliveryId(
    signature,
    { headers: { 'x-github-delivery': 'gh-1' }, body: Buffer.from('{"a":1}'), query: '' },
    { a: 1 },
  );
  const b = deliveryId(
    signature,
    { headers: { 'x-github-delivery': 'gh-2' }, body: Buffer.from('{"a":1}'), query: '' },
    { a: 1 },
  );
  const c = deliveryId(
    signature,
    { headers: { 'x-github-delivery': 'gh-1' }, body: Buffer.from('{"a":2}'), query: '' },
    { a: 2 },
  );
  assert.deepEqual(a, {
    id: 'sha256:015abd7f5cc57a2dd94b7590f04ad8084273905ee33ec5cebeae62276a97f862',
    signed: true,
    windowSeconds: 600,
  });
  assert.deepEqual(b, a);
  assert.notEqual(c?.id, a?.id);
  const none = deliveryId({ ...signature, scheme: 'hmac', header: 'X-Signature' }, {
    headers: {},
    body: Buffer.from('x'),
    query: '',
  }, {});
  assert.equal(none?.signed, true);
});

const WHATSAPP = {
  object: 'whatsapp_business_account',
  entry: [{
    id: '102290129340398',
    changes: [{
      field: 'messages',
      value: {
        messaging_product: 'whatsapp',
        metadata: { phone_number_id: '106540352242922' },
        contacts: [{ wa_id: '16505551234' }],
        messages: [{
          from: '16505551234',
          id: 'wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTRBNjU5OUFFRTAzODEwMTQ0RgA=',
          timestamp: '1749416383',
          type: 'text',
          text: { body: 'Does it come in another color?' },
        }],
      },
    }],
  }],
};

test("deliveryId() meta: a delivery is known by its entries' ids and times and the message and status ids in them", () => {
  const signature: Signature = { scheme: 'meta', secrets: ['s'], toleranceSeconds: 300, verifyToken: 'v' };
  const id = (payload: Record<string, unknown>, body = JSON.stringify(payload)) =>
    deliveryId(signature, { headers: {}, body: Buffer.from(body), query: '' }, payload);
  const first = id(WHATSAPP);
  assert.equal(first?.signed, true);
  assert.match(first!.id, /^meta:[0-9a-f]{64}$/);
  // The same messages written differently (another contact list, other spacing) are the same delivery.
  const rewritten = structuredClone(WHATSAPP);
  (rewritten.entry[0]!.changes[0]!.value as Record<string, unknown>)['contacts'] = [];
  assert.deepEqual(id(rewritten, JSON.stringify(rewritten, null, 2)), first);
  // Another message is another delivery; so is a status change of the same message.
  const other = structuredClone(WHATSAPP);
  other.entry[0]!.changes[0]!.value.messages[0]!.id = 'wamid.other';
  assert.notDeepEqual(id(other), first);
  const status = (s: string) => ({
    object: 'whatsapp_business_account',
    entry: [{
      id: '1',
      changes: [{ field: 'messages', value: { statuses: [{ id: 'wamid.X', status: s, timestamp: '1749416400' }] } }],
    }],
  });
  assert.notDeepEqual(id(status('sent')), id(status('delivered')));
  // Messenger: the entry's id and time and each message's mid.
  const messenger = (mid: string, text: string) => ({
    object: 'page',
    entry: [{
      id: 'PAGE',
      time: 1458692752478,
      messaging: [{ sender: { id: 'U' }, recipient: { id: 'PAGE' }, timestamp: 1458692752478, message: { mid, text } }],
    }],
  });
  assert.deepEqual(id(messenger('mid.1', 'hello')), id(messenger('mid.1', 'hello again')));
  assert.notDeepEqual(id(messenger('mid.1', 'hello')), id(messenger('mid.2', 'hello')));
  // An item without an id of its own is known by all of its text, so two different ones never merge.
  const read = (watermark: number) => ({
    object: 'page',
    entry: [{ id: 'PAGE', time: 1, messaging: [{ sender: { id: 'U' }, read: { watermark } }] }],
  });
  assert.notDeepEqual(id(read(1)), id(read(2)));
  assert.deepEqual(id(read(1)), id(read(1)));
  // Entries, changes and statuses without ids of their own are known by their text; so is an entry with neither changes nor messaging.
  const odd = (entry: Record<string, unknown>) => id({ object: 'page', entry: [entry] });
  assert.notDeepEqual(odd({ id: 'P', changes: ['x'] }), odd({ id: 'P', changes: ['y'] }));
  assert.notDeepEqual(
    odd({ id: 'P', changes: [{ field: 'feed', value: { item: 'comment', comment_id: '1' } }] }),
    odd({ id: 'P', changes: [{ field: 'feed', value: { item: 'comment', comment_id: '2' } }] }),
  );
  assert.notDeepEqual(
    odd({ id: 'P', changes: [{ value: { messages: [{ text: 'a' }], statuses: [{ status: 'read' }] } }] }),
    odd({ id: 'P', changes: [{ value: { messages: [{ text: 'b' }], statuses: [{ status: 'read' }] } }] }),
  );
  assert.notDeepEqual(odd({ id: 'P', time: 1 }), odd({ id: 'P', time: 2 }));
  assert.deepEqual(
    odd({ id: 'P', time: 5, standby: [{ message: { mid: 'm.1', text: 'a' } }] }),
    odd({ id: 'P', time: 5, standby: [{ message: { mid: 'm.1', text: 'b' } }] }),
  );
  assert.match(odd({ changes: [{ value: { messages: [{ id: 'w' }] } }] })!.id, /^meta:/);
  assert.match(id({ entry: ['not an object'] })!.id, /^meta-body:/);
  // A payload of another shape is known by its bytes.
  assert.match(id({ hello: 'x' }, '{"hello":"x"}')!.id, /^meta-body:[0-9a-f]{64}$/);
  assert.notDeepEqual(id({ hello: 'x' }, '{"hello":"x"}'), id({ hello: 'x' }, '{"hello": "x"}'));
});

test('describeRefusal() names the header and the rule, never a secret or an expected value', async () => {
  const c = CASES.find((x) => x.title === 'github')!;
  const verdict = verifySignature(config(c, [c.secret]), await signed(c, { secret: c.other }), NOW_MS);
  assert.equal(verdict.ok, false);
  const text = describeRefusal(verdict as Verdict & { ok: false });
  assert.equal(text, 'invalid signature: X-Hub-Signature-256 does not match the body');
});
