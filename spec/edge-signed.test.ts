import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { createTelemetry } from '../lib/edge/telemetry.ts';
import { JOURNAL_FILE } from '../lib/store/journal/lines.ts';
import { post, type Reply, send } from './_http.ts';
import { githubExample, SIGNERS, WHSEC, WHSEC_2 } from './_signers.ts';
import { type AppHarness, startApp } from './_app.ts';
import twilio from 'twilio';
import { tempDir } from './_dir.ts';

const TOKEN = 'spec-signed-token-0a1b2c3d4e5f6789';
const GATEWAY = 'spec-gateway-token-9f8e7d6c5b4a3210';
const NOW_S = 1_800_000_000;
const TWILIO_URL = 'https://hooks.example.com/hooks/twilio';

interface Scheme {
  /** The hook path and the signer's name. */
  path: string;
  signature: Record<string, unknown>;
  secret: string;
  other: string;
  body: string;
  /** The header a refusal names. */
  header: string;
  /** Whether the provider sends a delivery id that makes its retries idempotent. */
  delivery: boolean;
}

const EVENT = JSON.stringify({
  id: 'evt_1Q2w3E4r',
  object: 'event',
  type: 'invoice.paid',
  data: { object: { status: 'paid' } },
});
const SCHEMES: Scheme[] = [
  {
    path: 'standard-webhooks',
    signature: { scheme: 'standard-webhooks', secret: WHSEC, toleranceSeconds: 300 },
    secret: WHSEC,
    other: WHSEC_2,
    body: EVENT,
    header: 'webhook-signature',
    delivery: true,
  },
  {
    path: 'svix',
    signature: { scheme: 'standard-webhooks', secret: WHSEC },
    secret: WHSEC,
    other: WHSEC_2,
    body: EVENT,
    header: 'svix-signature',
    delivery: true,
  },
  {
    path: 'github',
    signature: { scheme: 'github', secret: 'gh-secret' },
    secret: 'gh-secret',
    other: 'gh-wrong',
    body: JSON.stringify(githubExample('push')),
    header: 'X-Hub-Signature-256',
    delivery: true,
  },
  {
    path: 'meta',
    signature: { scheme: 'meta', secret: 'app-secret', verifyToken: 'meta-verify-1' },
    secret: 'app-secret',
    other: 'app-wrong',
    body: EVENT,
    header: 'X-Hub-Signature-256',
    delivery: false,
  },
  {
    path: 'stripe',
    signature: { scheme: 'stripe', secret: 'whsec_stripe' },
    secret: 'whsec_stripe',
    other: 'whsec_wrong',
    body: EVENT,
    header: 'Stripe-Signature',
    delivery: true,
  },
  {
    path: 'slack',
    signature: { scheme: 'slack', secret: 'slack-secret' },
    secret: 'slack-secret',
    other: 'slack-wrong',
    body: EVENT,
    header: 'X-Slack-Signature',
    delivery: false,
  },
  {
    path: 'shopify',
    signature: { scheme: 'shopify', secret: 'shpss' },
    secret: 'shpss',
    other: 'shpss-wrong',
    body: EVENT,
    header: 'X-Shopify-Hmac-Sha256',
    delivery: true,
  },
  {
    path: 'twilio',
    signature: { scheme: 'twilio', secret: 'tw-token', url: TWILIO_URL },
    secret: 'tw-token',
    other: 'tw-wrong',
    body: 'MessageSid=SM1&From=%2B15551234567&Body=Hello',
    header: 'X-Twilio-Signature',
    delivery: true,
  },
  {
    path: 'gitlab',
    signature: { scheme: 'gitlab', secret: 'gl-token' },
    secret: 'gl-token',
    other: 'gl-wrong',
    body: EVENT,
    header: 'X-Gitlab-Token',
    delivery: true,
  },
  {
    path: 'hmac',
    signature: { scheme: 'hmac', secret: 'generic', header: 'X-Signature', algorithm: 'sha512', prefix: 'sha512=' },
    secret: 'generic',
    other: 'generic-wrong',
    body: EVENT,
    header: 'X-Signature',
    delivery: false,
  },
  {
    path: 'token',
    signature: { scheme: 'token', secret: 'path-token' },
    secret: 'path-token',
    other: 'path-wrong',
    body: EVENT,
    header: 'Authorization',
    delivery: false,
  },
];

function mappings(): Record<string, unknown>[] {
  return [
    ...SCHEMES.map((s) => ({
      id: s.path,
      match: { path: s.path },
      signature: { ...s.signature },
      action: 'wake',
      wakeMode: 'next-heartbeat',
      textTemplate: `signed ${s.path}`,
    })),
    // Two mappings on one filtered path: pushes and pull requests are taken, anything else is ignored.
    ...['push', 'pull_request'].map((event) => ({
      match: { path: 'filtered' },
      signature: { scheme: 'github', secret: 'gh-secret' },
      filter: { headers: { 'x-github-event': event } },
      action: 'wake',
      wakeMode: 'next-heartbeat',
      textTemplate: `${event} {{repository.full_name}}`,
    })),
    {
      match: { path: 'plain' },
      filter: { payload: { kind: 'wanted' } },
      action: 'wake',
      wakeMode: 'next-heartbeat',
      textTemplate: 'plain',
    },
  ];
}

interface Harness extends AppHarness {
  /** Stops listening and closes the store, so the next harness can open the same state directory. */
  close(): Promise<void>;
}

function stateDir(t: TestContext): Promise<string> {
  return tempDir(t, 'server-signed-spec-');
}

async function start(
  t: TestContext,
  dir: string,
  extra: Record<string, unknown> = {},
  now?: () => number,
): Promise<Harness> {
  const h = await startApp(t, {
    raw: { hooks: { mappings: mappings(), ...extra }, gateway: { auth: { token: GATEWAY } } },
    token: TOKEN,
    dir,
    idempotencyTtlMs: 3_600_000,
    ...(now === undefined ? {} : { now }),
    with: ({ store, app }) => ({
      clock: () => NOW_S * 1000,
      telemetry: createTelemetry({ store, limiter: () => app().limiterStats(), queueDepth: () => 0 }),
    }),
  });
  let closed: Promise<void> | undefined;
  return { ...h, close: () => (closed ??= h.stop().then(() => h.store.close())) };
}

async function deliver(
  h: Harness,
  s: Scheme,
  options: {
    secret?: string;
    id?: string;
    at?: number;
    body?: string;
    path?: string;
    headers?: Record<string, string>;
  } = {},
): Promise<Reply> {
  const body = options.body ?? s.body;
  const headers = await SIGNERS[s.path]!({
    secret: options.secret ?? s.secret,
    body,
    nowSeconds: options.at ?? NOW_S,
    id: options.id ?? 'delivery-1',
    url: TWILIO_URL,
  });
  return post(h.url, `/hooks/${options.path ?? s.path}`, {
    headers: { 'content-type': 'application/json', ...headers, ...options.headers },
    body,
  });
}

function recorded(h: Harness): number {
  return h.store.events().length + h.store.runs().length;
}

function unauthorized(reply: Reply, header: string): void {
  assert.equal(reply.status, 401, reply.text);
  assert.equal(reply.body['code'], 'ERR_UNAUTHORIZED');
  assert.match(String(reply.body['error']), new RegExp(`^invalid signature: ${header} `, 'i'));
}

for (const s of SCHEMES) {
  test(`POST ${s.path}: the provider's signature is accepted without the hook token; a wrong secret is 401 naming ${s.header}`, async (t) => {
    const h = await start(t, await stateDir(t));
    const good = await deliver(h, s);
    assert.equal(good.status, 200, good.text);
    assert.deepEqual(good.body, { ok: true, mode: 'next-heartbeat', eventOutcome: 'queued' });
    assert.match(h.store.events()[0]!.text, new RegExp(`signed ${s.path}`));
    const bad = await deliver(h, s, { secret: s.other, id: 'delivery-2' });
    unauthorized(bad, s.header);
    assert.ok(!bad.text.includes(s.secret) && !bad.text.includes(s.other), 'the answer must not carry a secret');
    assert.equal(recorded(h), 1);
  });

  test(`POST ${s.path}: the hook token alone does not open the signed path`, async (t) => {
    const h = await start(t, await stateDir(t));
    const reply = await post(h.url, `/hooks/${s.path}`, {
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: s.body,
    });
    assert.equal(reply.status, 401, reply.text);
    assert.match(String(reply.body['error']), /^invalid signature: /);
    assert.equal(recorded(h), 0);
  });

  if (s.delivery) {
    test(`POST ${s.path}: a retry of one delivery takes effect once, also across a restart`, async (t) => {
      const dir = await stateDir(t);
      const first = await start(t, dir);
      const a = await deliver(first, s, { id: 'retry-1', at: NOW_S - 60 });
      assert.equal(a.status, 200, a.text);
      const b = await deliver(first, s, { id: 'retry-1' });
      assert.equal(b.status, 200, b.text);
      assert.equal(b.headers['idempotent-replayed'], 'true');
      assert.equal(recorded(first), 1);
      await first.close();
      const second = await start(t, dir);
      const c = await deliver(second, s, { id: 'retry-1', at: NOW_S - 5 });
      assert.equal(c.status, 200, c.text);
      assert.equal(c.headers['idempotent-replayed'], 'true');
      assert.deepEqual(c.body, a.body);
      assert.equal(recorded(second), 1);
      // Another delivery of the same content is a new event.
      const d = await deliver(second, s, {
        id: 'retry-2',
        ...(s.path === 'stripe' ? { body: s.body.replace('evt_1Q2w3E4r', 'evt_other') } : {}),
      });
      assert.equal(d.status, 200, d.text);
      assert.equal(d.headers['idempotent-replayed'], undefined);
      assert.equal(recorded(second), 2);
    });
  }
}

test('POST a signed path: an old or a future timestamp is 401 naming the timestamp header (the clock is injected)', async (t) => {
  const h = await start(t, await stateDir(t));
  const slack = SCHEMES.find((s) => s.path === 'slack')!;
  for (const at of [NOW_S - 301, NOW_S + 301]) {
    unauthorized(await deliver(h, slack, { at }), 'X-Slack-Request-Timestamp');
  }
  const standard = SCHEMES[0]!;
  for (const at of [NOW_S - 301, NOW_S + 301]) unauthorized(await deliver(h, standard, { at }), 'webhook-timestamp');
  assert.equal(recorded(h), 0);
});

test('POST a signed path: a missing signature is 401 naming the header, counted by the failure limiter (429 + Retry-After once locked)', async (t) => {
  const h = await start(t, await stateDir(t), {
    authRateLimit: { maxFailures: 3, windowSeconds: 60, lockoutSeconds: 60 },
  });
  const github = SCHEMES.find((s) => s.path === 'github')!;
  for (let i = 0; i < 3; i++) {
    const reply = await post(h.url, '/hooks/github', {
      headers: { 'content-type': 'application/json' },
      body: github.body,
    });
    unauthorized(reply, 'X-Hub-Signature-256');
    assert.match(String(reply.body['error']), /X-Hub-Signature-256 is missing/);
  }
  const locked = await deliver(h, github, { secret: github.other });
  assert.equal(locked.status, 429, locked.text);
  assert.ok(Number(locked.headers['retry-after']) > 0);
});

test('POST a signed path: a body over hooks.maxBodyBytes is 413 before any verification', async (t) => {
  const h = await start(t, await stateDir(t), { maxBodyBytes: 64 });
  const github = SCHEMES.find((s) => s.path === 'github')!;
  const reply = await deliver(h, github);
  assert.equal(reply.status, 413, reply.text);
});

test('POST a filtered path: an event no mapping wants is 200 ignored, records nothing, and is counted in /metrics', async (t) => {
  const h = await start(t, await stateDir(t));
  const github = SCHEMES.find((s) => s.path === 'github')!;
  const issues = JSON.stringify(githubExample('issues'));
  const ignored = await deliver(h, github, {
    path: 'filtered',
    body: issues,
    headers: { 'x-github-event': 'issues' },
    id: 'ign-1',
  });
  assert.equal(ignored.status, 200, ignored.text);
  assert.deepEqual(ignored.body, { ok: true, ignored: true });
  assert.equal(recorded(h), 0);
  assert.equal(h.store.stats().idempotencyKeys, 0);
  const pr = await deliver(h, github, {
    path: 'filtered',
    body: JSON.stringify(githubExample('pull_request')),
    headers: { 'x-github-event': 'pull_request' },
    id: 'pr-1',
  });
  assert.equal(pr.status, 200, pr.text);
  assert.match(h.store.events()[0]!.text, /pull_request /);
  // The signature still comes first: an unwanted event with a bad signature is 401, not 200.
  unauthorized(
    await deliver(h, github, {
      path: 'filtered',
      secret: github.other,
      body: issues,
      headers: { 'x-github-event': 'issues' },
    }),
    'X-Hub-Signature-256',
  );
  const metrics = await send(h.url, '/metrics', { headers: { authorization: `Bearer ${GATEWAY}` } });
  assert.match(metrics.text, /^hooks_ignored_total\{hook="filtered"\} 1$/m);
});

test('POST a token path with a filter: the hook token opens it, and an unwanted payload is 200 ignored', async (t) => {
  const h = await start(t, await stateDir(t));
  const auth = { authorization: `Bearer ${TOKEN}` };
  const ignored = await post(h.url, '/hooks/plain', { headers: auth, body: { kind: 'other' } });
  assert.deepEqual([ignored.status, ignored.body], [200, { ok: true, ignored: true }]);
  assert.equal(recorded(h), 0);
  const taken = await post(h.url, '/hooks/plain', { headers: auth, body: { kind: 'wanted' } });
  assert.equal(taken.status, 200, taken.text);
  assert.equal(recorded(h), 1);
  const unknown = await post(h.url, '/hooks/nothing-here', { headers: auth, body: { kind: 'wanted' } });
  assert.equal(unknown.status, 404);
});

test('POST slack: url_verification is answered with its challenge after the signature verified, and records nothing', async (t) => {
  const h = await start(t, await stateDir(t));
  const slack = SCHEMES.find((s) => s.path === 'slack')!;
  const body = JSON.stringify({
    token: 'legacy',
    challenge: '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P',
    type: 'url_verification',
  });
  const reply = await deliver(h, slack, { body });
  assert.deepEqual([reply.status, reply.body], [200, {
    challenge: '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P',
  }]);
  unauthorized(await deliver(h, slack, { body, secret: slack.other }), 'X-Slack-Signature');
  assert.equal(recorded(h), 0);
});

test('GET meta: the subscription handshake echoes hub.challenge as text for the right verify token, else 403', async (t) => {
  const h = await start(t, await stateDir(t));
  const ok = await send(
    h.url,
    '/hooks/meta?hub.mode=subscribe&hub.verify_token=meta-verify-1&hub.challenge=1158201444',
  );
  assert.equal(ok.status, 200, ok.text);
  assert.equal(ok.text, '1158201444');
  assert.match(String(ok.headers['content-type']), /^text\/plain/);
  const wrong = await send(h.url, '/hooks/meta?hub.mode=subscribe&hub.verify_token=nope&hub.challenge=1');
  assert.equal(wrong.status, 403, wrong.text);
  assert.match(String(wrong.body['error']), /hub\.verify_token/);
  const mode = await send(h.url, '/hooks/meta?hub.mode=unsubscribe&hub.verify_token=meta-verify-1&hub.challenge=1');
  assert.equal(mode.status, 403);
  const noChallenge = await send(h.url, '/hooks/meta?hub.mode=subscribe&hub.verify_token=meta-verify-1');
  assert.equal(noChallenge.status, 400);
  // Only the meta path answers a GET; the token-in-URL rule still holds.
  assert.equal(
    (await send(h.url, '/hooks/github?hub.mode=subscribe&hub.verify_token=meta-verify-1&hub.challenge=1')).status,
    405,
  );
  assert.equal((await send(h.url, '/hooks/meta?token=x')).status, 400);
  assert.equal(recorded(h), 0);
});

test('GET a hook path without any meta mapping is 405 as before', async (t) => {
  const h = await startApp(t, {
    raw: { hooks: { mappings: [{ match: { path: 'x' }, action: 'wake', textTemplate: 'x' }] } },
    token: TOKEN,
  });
  const reply = await send(h.url, '/hooks/x?hub.mode=subscribe');
  assert.equal(reply.status, 405);
  assert.equal(reply.headers['allow'], 'POST');
});

test('POST gitlab: the X-Gitlab-Token secret is not shown to templates', async (t) => {
  const mappings = [{
    match: { path: 'gl' },
    signature: { scheme: 'gitlab', secret: 'gl-secret-77' },
    action: 'wake',
    textTemplate: 'token={{headers.x-gitlab-token}} event={{headers.x-gitlab-event}}',
    allowUnsafeExternalContent: true,
  }];
  const h = await startApp(t, { raw: { hooks: { mappings } }, token: TOKEN });
  const reply = await post(h.url, '/hooks/gl', {
    headers: { 'x-gitlab-token': 'gl-secret-77', 'x-gitlab-event': 'Push Hook' },
    body: { object_kind: 'push' },
  });
  assert.equal(reply.status, 200, reply.text);
  assert.equal(h.store.events()[0]!.text, 'token= event=Push Hook');
});

// A replay of a captured delivery may carry any headers the signature does not cover.
const FRESH_KEYS = [
  { 'idempotency-key': 'replay-1' },
  { 'idempotency-key': 'replay-2' },
  { 'x-openclaw-idempotency-key': 'replay-3' },
  { 'idempotency-key': 'replay-4', 'x-openclaw-idempotency-key': 'replay-5' },
];

test('POST standard-webhooks: one delivery replayed with fresh Idempotency-Key headers takes effect once (the signed webhook-id is the key)', async (t) => {
  const h = await start(t, await stateDir(t));
  const s = SCHEMES.find((x) => x.path === 'standard-webhooks')!;
  // Signed once by the standardwebhooks package, then sent five times with different keys.
  const headers = await SIGNERS['standard-webhooks']!({
    secret: s.secret,
    body: s.body,
    nowSeconds: NOW_S,
    id: 'msg_2mjRLiWUaVbhJgkhoy6B8sgpyjS',
  });
  const replies: Reply[] = [];
  for (const extra of [{}, ...FRESH_KEYS]) {
    replies.push(
      await post(h.url, '/hooks/standard-webhooks', {
        headers: { 'content-type': 'application/json', ...headers, ...extra },
        body: s.body,
      }),
    );
  }
  assert.deepEqual(replies.map((r) => r.status), [200, 200, 200, 200, 200]);
  assert.deepEqual(replies.map((r) => r.headers['idempotent-replayed']), [undefined, 'true', 'true', 'true', 'true']);
  assert.equal(recorded(h), 1);
  assert.equal(h.store.stats().idempotencyKeys, 1);
});

test('POST stripe: one event replayed with fresh Idempotency-Key headers takes effect once (the signed event id is the key)', async (t) => {
  const h = await start(t, await stateDir(t));
  const s = SCHEMES.find((x) => x.path === 'stripe')!;
  for (const extra of [{}, ...FRESH_KEYS]) assert.equal((await deliver(h, s, { headers: extra })).status, 200);
  assert.equal(recorded(h), 1);
});

test('POST slack: an event_callback retried by Slack (re-signed, X-Slack-Retry-Num: 1) takes effect once, keyed by its signed event_id', async (t) => {
  const h = await start(t, await stateDir(t));
  const s = SCHEMES.find((x) => x.path === 'slack')!;
  const event = (id: string) =>
    JSON.stringify({
      token: 'legacy',
      team_id: 'T123ABC456',
      api_app_id: 'A123ABC456',
      type: 'event_callback',
      event_id: id,
      event_time: NOW_S - 70,
      event: {
        type: 'app_mention',
        user: 'U123',
        text: '<@U0LAN0Z89> is it everything a river should be?',
        ts: '1515449522.000016',
        channel: 'C123ABC456',
      },
    });
  const first = await deliver(h, s, { body: event('Ev08MFMKH6'), at: NOW_S - 65 });
  assert.equal(first.status, 200, first.text);
  const retry = await deliver(h, s, {
    body: event('Ev08MFMKH6'),
    headers: { 'x-slack-retry-num': '1', 'x-slack-retry-reason': 'http_timeout', 'idempotency-key': 'other' },
  });
  assert.equal(retry.status, 200, retry.text);
  assert.equal(retry.headers['idempotent-replayed'], 'true');
  assert.equal(recorded(h), 1);
  assert.equal((await deliver(h, s, { body: event('Ev08MFMKH7') })).status, 200);
  assert.equal(recorded(h), 2);
});

test('POST meta: a captured delivery replayed with fresh Idempotency-Key headers takes effect once (keyed by what its signed payload reports)', async (t) => {
  const h = await start(t, await stateDir(t));
  const s = SCHEMES.find((x) => x.path === 'meta')!;
  const message = (id: string) =>
    JSON.stringify({
      object: 'whatsapp_business_account',
      entry: [{
        id: '102290129340398',
        changes: [{
          field: 'messages',
          value: {
            messaging_product: 'whatsapp',
            messages: [{ from: '16505551234', id, timestamp: '1749416383', type: 'text', text: { body: 'hi' } }],
          },
        }],
      }],
    });
  for (const extra of [{}, ...FRESH_KEYS]) {
    assert.equal((await deliver(h, s, { body: message('wamid.A'), headers: extra })).status, 200);
  }
  assert.equal(recorded(h), 1);
  assert.equal((await deliver(h, s, { body: message('wamid.B') })).status, 200);
  assert.equal(recorded(h), 2);
});

test('POST github: without signature.dedupeBodySeconds a captured delivery replayed under a new X-GitHub-Delivery is a new event; with it, the same body within the window is one', async (t) => {
  const s = SCHEMES.find((x) => x.path === 'github')!;
  const plain = await start(t, await stateDir(t));
  for (const id of ['d-1', 'd-2']) assert.equal((await deliver(plain, s, { id })).status, 200);
  assert.equal(recorded(plain), 2);
  await plain.close();

  let now = NOW_S * 1000;
  const dir = await stateDir(t);
  const raw = {
    hooks: {
      mappings: [{
        match: { path: 'github' },
        signature: { scheme: 'github', secret: s.secret, dedupeBodySeconds: 600 },
        action: 'wake',
        wakeMode: 'next-heartbeat',
        textTemplate: 'push',
      }],
    },
  };
  const h = await startApp(t, { raw, token: TOKEN, dir, now: () => now, with: () => ({ clock: () => NOW_S * 1000 }) });
  const replies: Reply[] = [];
  for (const [id, extra] of [['d-1', {}], ['d-2', { 'idempotency-key': 'k-2' }], ['d-3', {}]] as const) {
    replies.push(await deliver(h as Harness, s, { id, headers: extra }));
  }
  assert.deepEqual(replies.map((r) => [r.status, r.headers['idempotent-replayed']]), [[200, undefined], [200, 'true'], [
    200,
    'true',
  ]]);
  assert.equal(h.store.events().length, 1);
  // The journal holds the key's expiry, not the window it came from.
  const journal = await readFile(join(h.state, JOURNAL_FILE), 'utf8');
  assert.match(journal, new RegExp(`"expiresAt":${NOW_S * 1000 + 600_000}\\b`));
  assert.doesNotMatch(journal, /ttlMs/);
  // Another body is another delivery.
  assert.equal(
    (await deliver(h as Harness, s, { id: 'd-4', body: JSON.stringify(githubExample('push', 1)) }))
      .headers['idempotent-replayed'],
    undefined,
  );
  assert.equal(h.store.events().length, 2);
  // Past the window the same body is taken again (identical bodies can be legitimate).
  now += 601_000;
  assert.equal((await deliver(h as Harness, s, { id: 'd-5' })).headers['idempotent-replayed'], undefined);
  assert.equal(h.store.events().length, 3);
});

test('POST twilio: a JSON body without bodySHA256 in the URL is 401 (no signature covers it); with bodySHA256, signed by the twilio package, it is taken', async (t) => {
  const h = await start(t, await stateDir(t));
  const s = SCHEMES.find((x) => x.path === 'twilio')!;
  const body = JSON.stringify({ MessageSid: 'SM1', Body: 'forged' });
  const urlOnly = twilio.getExpectedTwilioSignature(s.secret, TWILIO_URL, {});
  for (const type of ['application/json', 'text/plain']) {
    const reply = await post(h.url, '/hooks/twilio', {
      headers: { 'content-type': type, 'x-twilio-signature': urlOnly },
      body,
    });
    unauthorized(reply, 'X-Twilio-Signature');
    assert.match(String(reply.body['error']), /bodySHA256/);
  }
  assert.equal(recorded(h), 0);
  const hashed = `${TWILIO_URL}?bodySHA256=${createHash('sha256').update(body).digest('hex')}`;
  const dir = await stateDir(t);
  const raw = {
    hooks: {
      mappings: [{
        match: { path: 'twilio' },
        signature: { scheme: 'twilio', secret: s.secret, url: TWILIO_URL },
        action: 'wake',
        wakeMode: 'next-heartbeat',
        textTemplate: 'sms {{Body}}',
        allowUnsafeExternalContent: true,
      }],
    },
  };
  const json = await startApp(t, { raw, token: TOKEN, dir, with: () => ({ clock: () => NOW_S * 1000 }) });
  const taken = await post(json.url, `/hooks/twilio?bodySHA256=${createHash('sha256').update(body).digest('hex')}`, {
    headers: {
      'content-type': 'application/json',
      'x-twilio-signature': twilio.getExpectedTwilioSignature(s.secret, hashed, {}),
    },
    body,
  });
  assert.equal(taken.status, 200, taken.text);
  assert.equal(json.store.events()[0]!.text, 'sms forged');
});

test('POST twilio: a form-labelled body is read as the form its signature covers, even when it looks like JSON', async (t) => {
  const s = SCHEMES.find((x) => x.path === 'twilio')!;
  const dir = await stateDir(t);
  const raw = {
    hooks: {
      mappings: [{
        match: { path: 'twilio' },
        signature: { scheme: 'twilio', secret: s.secret, url: TWILIO_URL },
        action: 'wake',
        wakeMode: 'next-heartbeat',
        textTemplate: 'sms [{{Body}}]',
        allowUnsafeExternalContent: true,
      }],
    },
  };
  const h = await startApp(t, { raw, token: TOKEN, dir, with: () => ({ clock: () => NOW_S * 1000 }) });
  // Twilio's signature reads `{"Body":"a+b"}` and `{"Body":"a b"}` alike (a form decodes `+`), so neither may be taken as JSON.
  const body = '{"Body":"a+b"}';
  const reply = await post(h.url, '/hooks/twilio', {
    headers: await SIGNERS['twilio']!({ secret: s.secret, body, nowSeconds: NOW_S, id: 'tw-json', url: TWILIO_URL }),
    body,
  });
  assert.equal(reply.status, 200, reply.text);
  assert.equal(h.store.events()[0]!.text, 'sms []');
});
