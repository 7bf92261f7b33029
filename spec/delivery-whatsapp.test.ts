import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { test } from 'node:test';
import { fake, type Handler, json } from './_fake-server.ts';
import { createWhatsAppAdapter } from '../lib/delivery/whatsapp.ts';
import { addHttpAdapterTests } from './_adapter-contract.ts';

const PHONE_NUMBER_ID = '106540352242922';
const TOKEN = 'EAAGm0PX4ZCpsBA-secret+token/with=odd&chars';
const FRIEND = '+16505551234';
const THROUGHPUT = '+15550130429';
const PAIR_LIMIT = '+15550131056';
const WINDOW_CLOSED = '+15550131047';
const TRANSIENT = '+15550000002';

function graphError(
  res: ServerResponse,
  status: number,
  code: number,
  message: string,
  extra: Record<string, unknown> = {},
): void {
  json(res, status, { error: { message, type: 'OAuthException', code, fbtrace_id: 'AbCdEf123', ...extra } });
}

// The Cloud API's POST /{version}/{phone-number-id}/messages for text, with its Graph error shapes.
const graph: Handler = (req, res) => {
  if (req.method !== 'POST' || req.url !== `/v21.0/${PHONE_NUMBER_ID}/messages`) {
    return graphError(
      res,
      400,
      100,
      `Unsupported post request. Object with ID '${req.url.split('/')[2]}' does not exist`,
      { type: 'GraphMethodException', error_subcode: 33 },
    );
  }
  if (req.headers.authorization !== `Bearer ${TOKEN}`) {
    return graphError(res, 401, 190, 'Invalid OAuth access token - Cannot parse access token');
  }
  if (!String(req.headers['content-type']).startsWith('application/json')) {
    return graphError(res, 400, 100, '(#100) Invalid parameter');
  }
  const body = JSON.parse(req.body) as Record<string, unknown>;
  if (body['messaging_product'] !== 'whatsapp') {
    return graphError(res, 400, 100, '(#100) The parameter messaging_product is required.');
  }
  const to = body['to'];
  const text = body['text'] as Record<string, unknown> | undefined;
  if (
    typeof to !== 'string' || body['type'] !== 'text' || typeof text?.['body'] !== 'string' || text['body'] === '' ||
    text['body'].length > 4096
  ) {
    return graphError(res, 400, 100, '(#100) Invalid parameter');
  }
  const digits = to.replace(/^\+/, '');
  if (`+${digits}` === THROUGHPUT) {
    return graphError(res, 400, 130429, '(#130429) Rate limit hit', {
      error_data: { messaging_product: 'whatsapp', details: 'Cloud API message throughput has been reached.' },
    });
  }
  if (`+${digits}` === PAIR_LIMIT) {
    return graphError(res, 400, 131056, '(#131056) (Business Account, Consumer Account) pair rate limit hit', {
      error_data: {
        messaging_product: 'whatsapp',
        details:
          'Too many messages sent from the sender phone number to the same recipient phone number in a short period of time.',
      },
    });
  }
  if (`+${digits}` === WINDOW_CLOSED) {
    return graphError(res, 400, 131047, '(#131047) Re-engagement message', {
      error_data: {
        messaging_product: 'whatsapp',
        details:
          'Message failed to send because more than 24 hours have passed since the customer last replied to this number.',
      },
    });
  }
  if (`+${digits}` === TRANSIENT) {
    return graphError(res, 500, 2, 'Service temporarily unavailable', { is_transient: true });
  }
  json(res, 200, {
    messaging_product: 'whatsapp',
    contacts: [{ input: to, wa_id: digits }],
    messages: [{ id: 'wamid.HBgLMTY1MDUwNzY1MjAVAgARGBI5QTNDQTVCM0Q0Q0Q2RTY3RTcA' }],
  });
};

addHttpAdapterTests('whatsappAdapter', {
  name: 'WhatsApp',
  channel: 'whatsapp',
  maxLength: 4096,
  recipients: {
    good: [FRIEND, '16505551234', '+4915112345678'],
    bad: [
      '555-1234',
      '+1 650 555 1234',
      '(650) 555-1234',
      '+0650555123',
      '123456',
      '+1234567890123456',
      'group:abc',
      '',
    ],
    expected: 'a phone number in E.164 (7 to 15 digits, with or without +)',
  },
  make: (apiBase, fetch) =>
    createWhatsAppAdapter({
      phoneNumberId: PHONE_NUMBER_ID,
      accessToken: TOKEN,
      apiBase,
      ...(fetch === undefined ? {} : { fetch }),
    }),
  url: { option: 'apiBase' },
  path: '/v21.0',
  platform: () => graph,
  refuse: (res, status, text, headers) =>
    json(
      res,
      status,
      { error: { message: text, type: 'OAuthException', code: 100, fbtrace_id: 'AbCdEf123' } },
      headers,
    ),
  says: (status, text) => `WhatsApp error 100 (HTTP ${status}): ${text} [fbtrace_id AbCdEf123]`,
  unreachable: 'Cannot reach the WhatsApp Cloud API: ',
  secret: { value: TOKEN, mask: '[redacted]' },
});

test('createWhatsAppAdapter() refuses a phoneNumberId that is not digits, an empty accessToken and an apiBase without its scheme, without echoing the token', () => {
  assert.throws(() => createWhatsAppAdapter({ phoneNumberId: '+1 650 555', accessToken: TOKEN }), {
    name: 'TypeError',
    message: /^Invalid option phoneNumberId: /,
  });
  assert.throws(() => createWhatsAppAdapter({ phoneNumberId: PHONE_NUMBER_ID, accessToken: ' ' }), {
    name: 'TypeError',
    message: /^Invalid option accessToken: /,
  });
  assert.throws(
    () => createWhatsAppAdapter({ phoneNumberId: PHONE_NUMBER_ID, accessToken: TOKEN, apiBase: 'graph.facebook.com' }),
    (error: Error) => {
      assert.match(error.message, /^Invalid option apiBase: /);
      assert.ok(!error.message.includes(TOKEN));
      return true;
    },
  );
});

test('whatsappAdapter.send() posts a text message with Bearer auth, digits-only to and preview_url off, and returns messages[].id', async (t) => {
  const api = await fake(t, graph);
  const adapter = createWhatsAppAdapter({
    phoneNumberId: PHONE_NUMBER_ID,
    accessToken: TOKEN,
    apiBase: `${api.url}/v21.0/`,
  });
  const result = await adapter.send(FRIEND, 'Your build finished');
  assert.deepEqual(result, {
    ok: true,
    value: { messageIds: ['wamid.HBgLMTY1MDUwNzY1MjAVAgARGBI5QTNDQTVCM0Q0Q0Q2RTY3RTcA'] },
  });
  const [seen] = api.seen;
  assert.equal(seen?.method, 'POST');
  assert.equal(seen?.url, `/v21.0/${PHONE_NUMBER_ID}/messages`);
  assert.equal(seen?.headers.authorization, `Bearer ${TOKEN}`);
  assert.equal(seen?.headers['content-type'], 'application/json');
  assert.deepEqual(JSON.parse(seen?.body ?? ''), {
    messaging_product: 'whatsapp',
    recipient_type: 'individual',
    to: '16505551234',
    type: 'text',
    text: { body: 'Your build finished', preview_url: false },
  });
  assert.deepEqual(await adapter.send('16505551234', 'again'), result);
  assert.equal(JSON.parse(api.seen[1]?.body ?? '').to, '16505551234');
});

test('whatsappAdapter.send() retries the rate-limit codes 130429 and 131056 and a transient 5xx', async (t) => {
  const api = await fake(t, graph);
  const adapter = createWhatsAppAdapter({
    phoneNumberId: PHONE_NUMBER_ID,
    accessToken: TOKEN,
    apiBase: `${api.url}/v21.0`,
  });
  const failures: [to: string, message: string | RegExp][] = [
    [
      THROUGHPUT,
      'WhatsApp error 130429 (HTTP 400): (#130429) Rate limit hit (Cloud API message throughput has been reached.) [fbtrace_id AbCdEf123]',
    ],
    [PAIR_LIMIT, /^WhatsApp error 131056 \(HTTP 400\): /],
    [TRANSIENT, 'WhatsApp error 2 (HTTP 500): Service temporarily unavailable [fbtrace_id AbCdEf123]'],
  ];
  for (const [to, message] of failures) {
    const result = await adapter.send(to, 'hi');
    if (typeof message === 'string') assert.deepEqual(result, { ok: false, retryable: true, message }, to);
    else {
      assert.equal(!result.ok && result.retryable, true, to);
      assert.match(!result.ok ? result.message : '', message);
    }
  }
});

test('whatsappAdapter.send() retries the app and account limits (4, 80007, 131048) whatever the HTTP status', async (t) => {
  let code = 4;
  const api = await fake(t, (_req, res) => graphError(res, 400, code, `(#${code}) Application request limit reached`));
  const adapter = createWhatsAppAdapter({ phoneNumberId: PHONE_NUMBER_ID, accessToken: TOKEN, apiBase: api.url });
  for (code of [4, 80007, 131048]) {
    const result = await adapter.send(FRIEND, 'hi');
    assert.equal(!result.ok && result.retryable, true, String(code));
  }
});

test('whatsappAdapter.send() fails permanently on a closed 24-hour window, a bad token and an unknown phone-number id', async (t) => {
  const api = await fake(t, graph);
  const adapter = (phoneNumberId: string, accessToken: string) =>
    createWhatsAppAdapter({ phoneNumberId, accessToken, apiBase: `${api.url}/v21.0` });
  const failures: [phoneNumberId: string, accessToken: string, to: string, message: string][] = [
    [
      PHONE_NUMBER_ID,
      TOKEN,
      WINDOW_CLOSED,
      'WhatsApp error 131047 (HTTP 400): (#131047) Re-engagement message (Message failed to send because more than 24 hours have passed since the customer last replied to this number.) [fbtrace_id AbCdEf123]',
    ],
    [
      PHONE_NUMBER_ID,
      'expired-token',
      FRIEND,
      'WhatsApp error 190 (HTTP 401): Invalid OAuth access token - Cannot parse access token [fbtrace_id AbCdEf123]',
    ],
    [
      '999',
      TOKEN,
      FRIEND,
      "WhatsApp error 100/33 (HTTP 400): Unsupported post request. Object with ID '999' does not exist [fbtrace_id AbCdEf123]",
    ],
  ];
  for (const [phoneNumberId, accessToken, to, message] of failures) {
    assert.deepEqual(await adapter(phoneNumberId, accessToken).send(to, 'hi'), {
      ok: false,
      retryable: false,
      message,
    });
  }
});

test('whatsappAdapter.send() passes on a body that is not a Graph error, masked, and words a Graph error without a message', async (t) => {
  let mode: 'text' | 'bare' = 'text';
  const api = await fake(t, (req, res) => {
    if (mode === 'text') {
      return void res.writeHead(502, { 'content-type': 'text/html' }).end(
        `<h1>Bad gateway</h1> ${String(req.headers.authorization)}`,
      );
    }
    json(res, 403, { error: { code: 'x' } });
  });
  const adapter = createWhatsAppAdapter({ phoneNumberId: PHONE_NUMBER_ID, accessToken: TOKEN, apiBase: api.url });
  assert.deepEqual(await adapter.send(FRIEND, 'hi'), {
    ok: false,
    retryable: true,
    message: 'WhatsApp answered HTTP 502: <h1>Bad gateway</h1> Bearer [redacted]',
  });
  mode = 'bare';
  assert.deepEqual(await adapter.send(FRIEND, 'hi'), {
    ok: false,
    retryable: false,
    message: 'WhatsApp error (HTTP 403): no message',
  });
});
test('whatsappAdapter.send() honours a Retry-After on 429 and succeeds without ids on a 200 that lists none', async (t) => {
  let limited = true;
  const api = await fake(t, (_req, res) => {
    if (limited) return void res.writeHead(429, { 'retry-after': '3' }).end();
    json(res, 200, { messaging_product: 'whatsapp', contacts: [], messages: [{ message_status: 'accepted' }] });
  });
  const adapter = createWhatsAppAdapter({ phoneNumberId: PHONE_NUMBER_ID, accessToken: TOKEN, apiBase: api.url });
  assert.deepEqual(await adapter.send(FRIEND, 'hi'), {
    ok: false,
    retryable: true,
    message: 'WhatsApp answered HTTP 429',
    retryAfterMs: 3000,
  });
  limited = false;
  assert.deepEqual(await adapter.send(FRIEND, 'hi'), { ok: true, value: { messageIds: [] } });
});
