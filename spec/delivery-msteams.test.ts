import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { test, type TestContext } from 'node:test';
import { closedUrl, fake, type Handler, json as sendJson, type Received } from './_fake-server.ts';
import { createTeamsAdapter, type TeamsOptions } from '../lib/delivery/msteams.ts';
import { addHttpAdapterTests } from './_adapter-contract.ts';

const APP_ID = '00000000-1111-2222-3333-444444444444';
const APP_PASSWORD = 'Xy8Q~secret.value+with/odd=chars&more';
// Conversations: a personal chat and a channel thread that take messages, and three the connector refuses.
const TO = {
  personal: 'a:1pL6i0oY3C0K8oAj8_personal-chat',
  thread: '19:abcdef0123456789@thread.tacv2;messageid=1700000000000',
  blocked: '19:blocked@thread.v2',
  unknown: '19:unknown@thread.tacv2',
  busy: 'a:busy',
} as const;
const SIZE_CAP = 100;

// Entra and the connector both name the charset.
function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  sendJson(res, status, body, { 'content-type': 'application/json; charset=utf-8', ...headers });
}

interface Platform {
  url: string;
  seen: Received[];
  tokenCalls: () => Received[];
  activityCalls: () => Received[];
  state: {
    /** Live tokens; the connector answers any other with 401. */
    live: Set<string>;
    /** `expires_in` of the next tokens issued, in seconds. */
    lifetime: number;
    /** The connector refuses every token, as for a bot whose registration is gone. */
    denyAll: boolean;
  };
}

// Microsoft Entra's token endpoint and the Bot Connector on one server, in their own shapes.
function teams(): { handler: Handler; state: Platform['state'] } {
  let issued = 0;
  const state = { live: new Set<string>(), lifetime: 3599, denyAll: false };
  const handler: Handler = (req, res) => {
    if (req.url === '/botframework.com/oauth2/v2.0/token') {
      if (req.method !== 'POST' || req.headers['content-type'] !== 'application/x-www-form-urlencoded') {
        return json(res, 400, {
          error: 'invalid_request',
          error_description: 'AADSTS900144: The request body must contain the following parameter: grant_type.',
        });
      }
      const form = Object.fromEntries(new URLSearchParams(req.body));
      if (form['grant_type'] !== 'client_credentials' || form['scope'] !== 'https://api.botframework.com/.default') {
        return json(res, 400, {
          error: 'invalid_request',
          error_description: 'AADSTS70011: The provided request must include a valid scope.',
        });
      }
      if (form['client_id'] !== APP_ID) {
        return json(res, 400, {
          error: 'unauthorized_client',
          error_description: `AADSTS700016: Application with identifier '${
            form['client_id']
          }' was not found in the directory 'Bot Framework'.\r\nTrace ID: 1f2e\r\nCorrelation ID: 3d4c\r\nTimestamp: 2025-01-01 00:00:00Z`,
          error_codes: [700016],
        });
      }
      if (form['client_secret'] !== APP_PASSWORD) {
        return json(res, 401, {
          error: 'invalid_client',
          error_description:
            'AADSTS7000215: Invalid client secret provided. Ensure the secret being sent in the request is the client secret value, not the client secret ID.\r\nTrace ID: 5a6b\r\nCorrelation ID: 7c8d\r\nTimestamp: 2025-01-01 00:00:00Z',
          error_codes: [7000215],
          timestamp: '2025-01-01 00:00:00Z',
          trace_id: '5a6b',
          correlation_id: '7c8d',
        });
      }
      const token = `eyJ0eXAiOiJKV1Qi.token-${++issued}`;
      state.live.add(token);
      return json(res, 200, {
        token_type: 'Bearer',
        expires_in: state.lifetime,
        ext_expires_in: state.lifetime,
        access_token: token,
      });
    }
    const match = /^\/teams\/v3\/conversations\/([^/]+)\/activities$/.exec(req.url);
    if (req.method !== 'POST' || match === null) {
      return json(res, 404, { error: { code: 'NotFound', message: 'Resource not found' } });
    }
    const bearer = /^Bearer (.+)$/.exec(String(req.headers.authorization))?.[1];
    if (bearer === undefined || !state.live.has(bearer) || state.denyAll) {
      return json(res, 401, { message: 'Authorization has been denied for this request.' });
    }
    const activity = JSON.parse(req.body) as Record<string, unknown>;
    if (
      !String(req.headers['content-type']).startsWith('application/json') || activity['type'] !== 'message' ||
      typeof activity['text'] !== 'string' || activity['text'] === ''
    ) {
      return json(res, 400, { error: { code: 'BadArgument', message: 'Activity must be a message with text' } });
    }
    if (activity['text'].length > SIZE_CAP) {
      return json(res, 413, { error: { code: 'MessageSizeTooBig', message: 'Message size too big' } });
    }
    const conversation = decodeURIComponent(match[1] ?? '');
    if (conversation === TO.blocked) {
      return json(res, 403, {
        error: { code: 'ConversationBlockedByUser', message: 'User blocked the conversation with the bot.' },
      });
    }
    if (conversation === TO.unknown) {
      return json(res, 404, { error: { code: 'ConversationNotFound', message: 'Conversation not found.' } });
    }
    if (conversation === TO.busy) {
      return json(res, 412, { error: { code: 'PreconditionFailed', message: 'Conversation is being updated' } });
    }
    json(res, 201, { id: '1:1a2b3c4d5e6f' });
  };
  return { handler, state };
}

async function platform(t: TestContext): Promise<Platform> {
  const { handler, state } = teams();
  const server = await fake(t, handler);
  return {
    ...server,
    tokenCalls: () => server.seen.filter((s) => s.url.includes('/oauth2/')),
    activityCalls: () => server.seen.filter((s) => s.url.includes('/v3/')),
    state,
  };
}

function options(p: { url: string }, extra: Partial<TeamsOptions> = {}): TeamsOptions {
  return {
    appId: APP_ID,
    appPassword: APP_PASSWORD,
    serviceUrl: `${p.url}/teams/`,
    tokenUrl: `${p.url}/botframework.com/oauth2/v2.0/token`,
    ...extra,
  };
}

function clock(start = 1_700_000_000_000): { now: () => number; set: (ms: number) => void } {
  let time = start;
  return { now: () => time, set: (ms) => (time = ms) };
}

// The Bot Connector's error codes for the statuses the contract asks about.
const CODES: Record<number, string> = { 429: 'Throttled', 503: 'ServiceUnavailable' };

addHttpAdapterTests('teamsAdapter', {
  name: 'Teams',
  channel: 'msteams',
  maxLength: 20_000,
  recipients: {
    good: [TO.personal, TO.thread, '19:meeting_abc@thread.v2', TO.blocked],
    bad: ['general', '', '19:', 'a:has space', ':x'],
    expected: 'a conversation id such as a:1pL6… or 19:…@thread.tacv2',
  },
  // The token endpoint beside the connector, as the fake serves both.
  make: (serviceUrl, fetch) =>
    createTeamsAdapter({
      ...options({ url: serviceUrl.replace(/\/teams\/$/, '') }),
      serviceUrl,
      now: clock().now,
      ...(fetch === undefined ? {} : { fetch }),
    }),
  url: { option: 'serviceUrl' },
  path: '/teams/',
  platform: () => teams().handler,
  isMessage: (req) => req.url.includes('/v3/'),
  refuse: (res, status, text, headers) =>
    json(res, status, { error: { code: CODES[status] ?? 'BadArgument', message: text } }, headers),
  says: (status, text) => `Teams answered ${status} ${CODES[status] ?? 'BadArgument'}: ${text}`,
  unreachable: 'Cannot reach the Bot Framework token endpoint: ',
  secret: { value: APP_PASSWORD, mask: '[redacted]' },
});

test('createTeamsAdapter() validates appId, appPassword, tenantId, serviceUrl, tokenUrl and now without echoing the password', () => {
  const good: TeamsOptions = {
    appId: APP_ID,
    appPassword: APP_PASSWORD,
    serviceUrl: 'https://smba.trafficmanager.net/teams/',
  };
  assert.throws(() => createTeamsAdapter({ ...good, appId: ' ' }), {
    name: 'TypeError',
    message: /^Invalid option appId: /,
  });
  assert.throws(() => createTeamsAdapter({ ...good, appPassword: '' }), {
    name: 'TypeError',
    message: /^Invalid option appPassword: /,
  });
  assert.throws(() => createTeamsAdapter({ ...good, tenantId: 'contoso/../x' }), {
    name: 'TypeError',
    message: /^Invalid option tenantId: /,
  });
  assert.throws(() => createTeamsAdapter({ ...good, serviceUrl: 'smba.trafficmanager.net' }), (error: Error) => {
    assert.match(error.message, /^Invalid option serviceUrl: /);
    assert.ok(!error.message.includes(APP_PASSWORD));
    return true;
  });
  assert.throws(() => createTeamsAdapter({ ...good, tokenUrl: 'not a url' }), {
    name: 'TypeError',
    message: /^Invalid option tokenUrl: /,
  });
  assert.throws(() => createTeamsAdapter({ ...good, now: 0 as unknown as () => number }), {
    name: 'TypeError',
    message: 'Invalid option now: must be a function',
  });
});

test('teamsAdapter.send() gets a client-credentials token, then posts a message activity with it and returns the activity id', async (t) => {
  const p = await platform(t);
  const adapter = createTeamsAdapter(options(p, { now: clock().now }));
  assert.deepEqual(await adapter.send(TO.thread, 'Deploy finished'), {
    ok: true,
    value: { messageIds: ['1:1a2b3c4d5e6f'] },
  });
  const [token, activity] = p.seen;
  assert.equal(token?.method, 'POST');
  assert.equal(token?.url, '/botframework.com/oauth2/v2.0/token');
  assert.equal(token?.headers['content-type'], 'application/x-www-form-urlencoded');
  assert.deepEqual(Object.fromEntries(new URLSearchParams(token?.body)), {
    grant_type: 'client_credentials',
    client_id: APP_ID,
    client_secret: APP_PASSWORD,
    scope: 'https://api.botframework.com/.default',
  });
  assert.equal(activity?.method, 'POST');
  assert.equal(activity?.url, `/teams/v3/conversations/${encodeURIComponent(TO.thread)}/activities`);
  assert.equal(
    activity?.url,
    '/teams/v3/conversations/19%3Aabcdef0123456789%40thread.tacv2%3Bmessageid%3D1700000000000/activities',
  );
  assert.equal(activity?.headers.authorization, 'Bearer eyJ0eXAiOiJKV1Qi.token-1');
  assert.equal(activity?.headers['content-type'], 'application/json');
  assert.deepEqual(JSON.parse(activity?.body ?? ''), { type: 'message', text: 'Deploy finished' });
});

test('teamsAdapter.send() reuses the token until five minutes before expires_in, then fetches a new one', async (t) => {
  const p = await platform(t);
  const time = clock(1_000_000);
  const adapter = createTeamsAdapter(options(p, { now: time.now }));
  await adapter.send(TO.personal, 'one');
  time.set(1_000_000 + 3_599_000 - 300_000 - 1);
  await adapter.send(TO.personal, 'two');
  assert.equal(p.tokenCalls().length, 1);
  time.set(1_000_000 + 3_599_000 - 300_000);
  assert.deepEqual(await adapter.send(TO.personal, 'three'), { ok: true, value: { messageIds: ['1:1a2b3c4d5e6f'] } });
  assert.equal(p.tokenCalls().length, 2);
  assert.deepEqual(p.activityCalls().map((s) => s.headers.authorization), [
    'Bearer eyJ0eXAiOiJKV1Qi.token-1',
    'Bearer eyJ0eXAiOiJKV1Qi.token-1',
    'Bearer eyJ0eXAiOiJKV1Qi.token-2',
  ]);
});

test('teamsAdapter.send() keeps a short-lived token for half its lifetime, and one with no lifetime for no time at all', async (t) => {
  const p = await platform(t);
  const time = clock(0);
  const adapter = createTeamsAdapter(options(p, { now: time.now }));
  p.state.lifetime = 60;
  await adapter.send(TO.personal, 'one');
  time.set(29_999);
  await adapter.send(TO.personal, 'two');
  assert.equal(p.tokenCalls().length, 1);
  time.set(30_000);
  p.state.lifetime = 0;
  await adapter.send(TO.personal, 'three');
  await adapter.send(TO.personal, 'four');
  assert.equal(p.tokenCalls().length, 3);
});

test('teamsAdapter.send() shares one token request among concurrent sends', async (t) => {
  const p = await platform(t);
  const adapter = createTeamsAdapter(options(p, { now: clock().now }));
  const results = await Promise.all([
    adapter.send(TO.personal, 'a'),
    adapter.send(TO.personal, 'b'),
    adapter.send(TO.thread, 'c'),
  ]);
  assert.ok(results.every((r) => r.ok));
  assert.equal(p.tokenCalls().length, 1);
  assert.equal(p.activityCalls().length, 3);
});

test('teamsAdapter.send() answers a 401 by fetching a fresh token and trying once more', async (t) => {
  const p = await platform(t);
  const adapter = createTeamsAdapter(options(p, { now: clock().now }));
  await adapter.send(TO.personal, 'first');
  p.state.live.clear(); // revoked before its stated expiry
  assert.deepEqual(await adapter.send(TO.personal, 'second'), { ok: true, value: { messageIds: ['1:1a2b3c4d5e6f'] } });
  assert.equal(p.tokenCalls().length, 2);
  assert.deepEqual(p.activityCalls().map((s) => s.headers.authorization), [
    'Bearer eyJ0eXAiOiJKV1Qi.token-1',
    'Bearer eyJ0eXAiOiJKV1Qi.token-1',
    'Bearer eyJ0eXAiOiJKV1Qi.token-2',
  ]);
});

test('teamsAdapter.send() fails permanently when the connector refuses the fresh token too, and tries no third time', async (t) => {
  const p = await platform(t);
  const adapter = createTeamsAdapter(options(p, { now: clock().now }));
  p.state.denyAll = true;
  assert.deepEqual(await adapter.send(TO.personal, 'hi'), {
    ok: false,
    retryable: false,
    message: 'Teams answered 401: {"message":"Authorization has been denied for this request."}',
  });
  assert.equal(p.tokenCalls().length, 2);
  assert.equal(p.activityCalls().length, 2);
});

test('teamsAdapter.send() fails permanently on a bad secret or unknown app, with the first line of AADSTS and no secret', async (t) => {
  const p = await platform(t);
  const wrongSecret = createTeamsAdapter(options(p, { appPassword: 'not-the-secret', now: clock().now }));
  const bad = await wrongSecret.send(TO.personal, 'hi');
  assert.deepEqual(bad, {
    ok: false,
    retryable: false,
    message:
      'Bot Framework token request failed with HTTP 401: invalid_client: AADSTS7000215: Invalid client secret provided. Ensure the secret being sent in the request is the client secret value, not the client secret ID.',
  });
  assert.ok(!bad.ok && !bad.message.includes('not-the-secret'));
  const unknown = await createTeamsAdapter(
    options(p, { appId: 'ffffffff-0000-0000-0000-000000000000', now: clock().now }),
  ).send(TO.personal, 'hi');
  assert.equal(!unknown.ok && unknown.retryable, false);
  assert.match(
    !unknown.ok ? unknown.message : '',
    /^Bot Framework token request failed with HTTP 400: unauthorized_client: AADSTS700016: .*'Bot Framework'\.$/,
  );
  assert.equal(p.activityCalls().length, 0);
});

test('teamsAdapter.send() keeps the app password and the token out of messages even when a server echoes them', async (t) => {
  let echo: 'token' | 'connector' = 'token';
  const server = await fake(t, (req, res) => {
    if (echo === 'token') {
      if (req.url.includes('/oauth2/')) {
        return void res.writeHead(503, { 'content-type': 'text/plain' }).end(`overloaded, you sent ${req.body}`);
      }
    }
    if (req.url.includes('/oauth2/')) {
      return json(res, 200, { token_type: 'Bearer', expires_in: 3600, access_token: 'tok+en/secret=' });
    }
    json(res, 400, {
      error: { code: 'BadArgument', message: `bad request from ${String(req.headers.authorization)}` },
    });
  });
  const adapter = createTeamsAdapter(options(server, { now: clock().now }));
  const token = await adapter.send(TO.personal, 'hi');
  assert.equal(!token.ok && token.retryable, true);
  const tokenMessage = !token.ok ? token.message : '';
  assert.ok(
    !tokenMessage.includes(APP_PASSWORD) && !tokenMessage.includes(encodeURIComponent(APP_PASSWORD)),
    tokenMessage,
  );
  assert.match(tokenMessage, /client_secret=\[redacted\]/);
  echo = 'connector';
  assert.deepEqual(await adapter.send(TO.personal, 'hi'), {
    ok: false,
    retryable: false,
    message: 'Teams answered 400 BadArgument: bad request from Bearer [redacted]',
  });
});

test('teamsAdapter.send() retries 412 and a bare 502, and fails permanently on 403, 404 and 413', async (t) => {
  const p = await platform(t);
  const adapter = createTeamsAdapter(options(p, { now: clock().now }));
  assert.deepEqual(await adapter.send(TO.busy, 'hi'), {
    ok: false,
    retryable: true,
    message: 'Teams answered 412 PreconditionFailed: Conversation is being updated',
  });
  assert.deepEqual(await adapter.send(TO.blocked, 'hi'), {
    ok: false,
    retryable: false,
    message: 'Teams answered 403 ConversationBlockedByUser: User blocked the conversation with the bot.',
  });
  assert.deepEqual(await adapter.send(TO.unknown, 'hi'), {
    ok: false,
    retryable: false,
    message: 'Teams answered 404 ConversationNotFound: Conversation not found.',
  });
  assert.deepEqual(await adapter.send(TO.personal, 'x'.repeat(SIZE_CAP + 1)), {
    ok: false,
    retryable: false,
    message: 'Teams answered 413 MessageSizeTooBig: Message size too big',
  });
  assert.equal(p.tokenCalls().length, 1);

  const down = await fake(t, (req, res) => {
    if (req.url.includes('/oauth2/')) {
      return json(res, 200, { token_type: 'Bearer', expires_in: 3600, access_token: 't' });
    }
    res.writeHead(502).end();
  });
  assert.deepEqual(await createTeamsAdapter(options(down, { now: clock().now })).send(TO.personal, 'hi'), {
    ok: false,
    retryable: true,
    message: 'Teams answered 502',
  });
});

test('teamsAdapter.send() retries a throttled or failing token endpoint, and fails permanently on a 200 without access_token', async (t) => {
  let answer: 'throttled' | 'empty' = 'throttled';
  const server = await fake(t, (_req, res) => {
    if (answer === 'throttled') {
      return json(res, 429, { error: 'temporarily_unavailable', error_description: 'AADSTS50196: Loop detected' }, {
        'retry-after': '5',
      });
    }
    json(res, 200, { token_type: 'Bearer' });
  });
  const adapter = createTeamsAdapter(options(server, { now: clock().now }));
  assert.deepEqual(await adapter.send(TO.personal, 'hi'), {
    ok: false,
    retryable: true,
    message: 'Bot Framework token request failed with HTTP 429: temporarily_unavailable: AADSTS50196: Loop detected',
    retryAfterMs: 5000,
  });
  answer = 'empty';
  assert.deepEqual(await adapter.send(TO.personal, 'hi'), {
    ok: false,
    retryable: false,
    message: 'Bot Framework token request failed with HTTP 200: no access_token',
  });
});

test('teamsAdapter.send() succeeds without ids when the connector answers 200 with no id', async (t) => {
  const server = await fake(t, (req, res) => {
    if (req.url.includes('/oauth2/')) {
      return json(res, 200, { token_type: 'Bearer', expires_in: 3600, access_token: 't' });
    }
    res.writeHead(200).end();
  });
  assert.deepEqual(await createTeamsAdapter(options(server, { now: clock().now })).send(TO.personal, 'hi'), {
    ok: true,
    value: { messageIds: [] },
  });
});

test('teamsAdapter.send() treats an unreachable connector as retryable', async (t) => {
  const nowhere = await closedUrl();
  const p = await platform(t);
  const noConnector = await createTeamsAdapter({ ...options(p), serviceUrl: nowhere }).send(TO.personal, 'hi');
  assert.equal(!noConnector.ok && noConnector.retryable, true);
  assert.match(!noConnector.ok ? noConnector.message : '', /^Cannot reach the Bot Connector: /);
});

test("createTeamsAdapter() asks the multi-tenant token endpoint by default and the tenant's own one for a single-tenant bot", async () => {
  const asked: string[] = [];
  // No network: the fetch only records where it would go and answers as the endpoint would.
  const recording = (async (input: string | URL | Request) => {
    asked.push(String(input));
    return String(input).includes('/oauth2/')
      ? Response.json({ token_type: 'Bearer', expires_in: 3600, access_token: 't' })
      : Response.json({ id: 'm' }, { status: 201 });
  }) as typeof fetch;
  const base = {
    appId: APP_ID,
    appPassword: APP_PASSWORD,
    serviceUrl: 'https://smba.trafficmanager.net/emea/',
    fetch: recording,
  };
  assert.equal((await createTeamsAdapter(base).send(TO.personal, 'hi')).ok, true);
  assert.equal(
    (await createTeamsAdapter({ ...base, tenantId: 'contoso.onmicrosoft.com' }).send(TO.personal, 'hi')).ok,
    true,
  );
  assert.deepEqual(asked, [
    'https://login.microsoftonline.com/botframework.com/oauth2/v2.0/token',
    `https://smba.trafficmanager.net/emea/v3/conversations/${encodeURIComponent(TO.personal)}/activities`,
    'https://login.microsoftonline.com/contoso.onmicrosoft.com/oauth2/v2.0/token',
    `https://smba.trafficmanager.net/emea/v3/conversations/${encodeURIComponent(TO.personal)}/activities`,
  ]);
});
