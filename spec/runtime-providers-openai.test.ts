import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { test, type TestContext } from 'node:test';
import { fakeJson, type FakeServer, json, type Seen as JsonSeen } from './_fake-server.ts';
import { createOpenAiProvider } from '../lib/runtime/providers/openai.ts';
import type { TurnRequest } from '../lib/runtime/providers/provider.ts';
import { openAiCompletion as completion, turnRequest } from './_turn.ts';
import { addHttpProviderTests } from './_provider-contract.ts';

const KEY = 'sk-test-0123456789abcdef';

type Seen = JsonSeen<Record<string, unknown>>;

// A real OpenAI-compatible server on 127.0.0.1 for test `t`: it records each request, then lets `answer` reply.
async function fakeOpenAi(
  t: TestContext,
  answer: (seen: Seen, res: ServerResponse) => void,
): Promise<FakeServer<Seen>> {
  const server = await fakeJson(t, answer);
  return { ...server, url: `${server.url}/v1` };
}

function apiError(message: string, type: string, code: string | null = null): unknown {
  return { error: { message, type, param: null, code } };
}

// Answers like the real API: 401 without the right Bearer key, 400 without model or messages.
function strict(reply: (seen: Seen, res: ServerResponse) => void) {
  return (seen: Seen, res: ServerResponse) => {
    if (seen.method !== 'POST' || seen.path !== '/v1/chat/completions') {
      return json(res, 404, apiError('Unknown path', 'invalid_request_error'));
    }
    if (seen.headers.authorization !== `Bearer ${KEY}`) {
      return json(res, 401, apiError('Incorrect API key provided', 'invalid_request_error', 'invalid_api_key'));
    }
    if (typeof seen.body.model !== 'string' || !Array.isArray(seen.body.messages) || seen.body.messages.length === 0) {
      return json(res, 400, apiError('model and messages are required', 'invalid_request_error'));
    }
    reply(seen, res);
  };
}

function turn(overrides: Partial<TurnRequest> = {}): TurnRequest {
  return turnRequest('gpt-test', { ...overrides });
}

// Server errors are `server_error`, the rest `invalid_request_error`, as the API types them.
const errorType = (status: number) => (status >= 500 ? 'server_error' : 'invalid_request_error');

addHttpProviderTests('createOpenAiProvider()', {
  make: (options) => createOpenAiProvider(options),
  path: '/v1',
  key: KEY,
  refuse: (res, status, text, headers) => json(res, status, apiError(text, errorType(status)), headers),
  says: (status, text) => `HTTP ${status} ${errorType(status)}: ${text}`,
});

test('createOpenAiProvider() posts model, system, history and prompt with the Bearer key and returns the reply text', async (t) => {
  const fake = await fakeOpenAi(t, strict((_seen, res) => json(res, 200, completion('Hi there'))));
  const provider = createOpenAiProvider({ baseUrl: fake.url, apiKey: KEY, headers: { 'X-Title': 'hooks-ingress' } });
  const history = [
    { role: 'user' as const, content: 'Earlier question' },
    { role: 'assistant' as const, content: 'Earlier answer' },
  ];
  const result = await provider.complete(turn({ history, thinking: 'low' }));
  assert.deepEqual(result, { ok: true, value: 'Hi there' });
  const [seen] = fake.seen;
  assert.equal(seen?.headers['content-type'], 'application/json');
  assert.equal(seen?.headers['x-title'], 'hooks-ingress');
  assert.deepEqual(seen?.body, {
    model: 'gpt-test',
    messages: [
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: 'Earlier question' },
      { role: 'assistant', content: 'Earlier answer' },
      { role: 'user', content: 'Say hi' },
    ],
    reasoning_effort: 'low',
  });
});

test('createOpenAiProvider() maps thinking to reasoning_effort: off and unset omit it, xhigh is sent as documented', async (t) => {
  const fake = await fakeOpenAi(t, strict((_seen, res) => json(res, 200, completion('ok'))));
  const provider = createOpenAiProvider({ baseUrl: fake.url, apiKey: KEY });
  for (const thinking of ['off', undefined, 'minimal', 'medium', 'high', 'xhigh'] as const) {
    assert.equal((await provider.complete(turn(thinking === undefined ? {} : { thinking }))).ok, true);
  }
  assert.deepEqual(
    fake.seen.map((s) => s.body.reasoning_effort),
    [undefined, undefined, 'minimal', 'medium', 'high', 'xhigh'],
  );
  assert.deepEqual(fake.seen.slice(0, 2).map((s) => 'reasoning_effort' in s.body), [false, false]);
});

test('createOpenAiProvider() sends no Authorization without a key, no empty system message, and tolerates a trailing slash', async (t) => {
  const fake = await fakeOpenAi(t, (_seen, res) => json(res, 200, completion('local')));
  const provider = createOpenAiProvider({ baseUrl: `${fake.url}/`, fetch: (...args) => globalThis.fetch(...args) });
  assert.deepEqual(await provider.complete(turn({ system: '' })), { ok: true, value: 'local' });
  const [seen] = fake.seen;
  assert.equal(seen?.path, '/v1/chat/completions');
  assert.equal(seen?.headers.authorization, undefined);
  assert.deepEqual(seen?.body.messages, [{ role: 'user', content: 'Say hi' }]);
});

test('createOpenAiProvider() joins the text parts of array content', async (t) => {
  const parts = [
    { type: 'text', text: 'Hello, ' },
    { type: 'image_url', image_url: { url: 'data:,' } },
    { type: 'text', text: 'world' },
  ];
  const fake = await fakeOpenAi(t, strict((_seen, res) => json(res, 200, completion(parts))));
  assert.deepEqual(await createOpenAiProvider({ baseUrl: fake.url, apiKey: KEY }).complete(turn()), {
    ok: true,
    value: 'Hello, world',
  });
});

test('createOpenAiProvider() fails permanently on a refusal, a reply without content, and a body that is not JSON', async (t) => {
  const bodies = [
    JSON.stringify({
      ...(completion(null) as object),
      choices: [{ index: 0, message: { role: 'assistant', content: null, refusal: 'I cannot help with that' } }],
    }),
    JSON.stringify({ object: 'chat.completion', choices: [] }),
    JSON.stringify({ error: { message: 'upstream model crashed' } }),
    '<html>gateway</html>',
  ];
  const fake = await fakeOpenAi(
    t,
    strict((_seen, res) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(bodies[fake.seen.length - 1])
    ),
  );
  const provider = createOpenAiProvider({ baseUrl: fake.url, apiKey: KEY });
  const messages = [];
  for (let i = 0; i < bodies.length; i++) {
    const result = await provider.complete(turn());
    assert.equal(result.ok, false);
    if (!result.ok) {
      assert.equal(result.retryable, false);
      messages.push(result.message);
    }
  }
  assert.deepEqual(messages, [
    'Refused: I cannot help with that',
    'Malformed response: no choices[0].message.content',
    'Malformed response: upstream model crashed',
    'Malformed response: <html>gateway</html>',
  ]);
});

test('createOpenAiProvider() makes a 429 with Retry-After retryable and honours the wait', async (t) => {
  const fake = await fakeOpenAi(
    t,
    strict((_seen, res) =>
      json(res, 429, apiError('Rate limit reached for requests', 'requests', 'rate_limit_exceeded'), {
        'retry-after': '2',
      })
    ),
  );
  const result = await createOpenAiProvider({ baseUrl: fake.url, apiKey: KEY }).complete(turn());
  assert.deepEqual(result, {
    ok: false,
    retryable: true,
    message: 'HTTP 429 rate_limit_exceeded: Rate limit reached for requests',
    retryAfterMs: 2000,
  });
});

test('createOpenAiProvider() does not retry a 429 for an exhausted quota', async (t) => {
  const fake = await fakeOpenAi(
    t,
    strict((_seen, res) =>
      json(res, 429, apiError('You exceeded your current quota', 'insufficient_quota', 'insufficient_quota'))
    ),
  );
  const provider = createOpenAiProvider({ baseUrl: fake.url, apiKey: KEY });
  assert.deepEqual(await provider.complete(turn()), {
    ok: false,
    retryable: false,
    message: 'HTTP 429 insufficient_quota: You exceeded your current quota',
  });
});
