import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { test, type TestContext } from 'node:test';
import { fakeJson, type FakeServer, json as sendJson, type Seen as JsonSeen } from './_fake-server.ts';
import { createAnthropicProvider, THINKING_BUDGETS } from '../lib/runtime/providers/anthropic.ts';
import type { TurnRequest } from '../lib/runtime/providers/provider.ts';
import { anthropicMessage as message, turnRequest } from './_turn.ts';
import { addHttpProviderTests } from './_provider-contract.ts';

const KEY = 'sk-ant-test-0123456789abcdef';

type Seen = JsonSeen<Record<string, unknown>>;

// A real Messages API server on 127.0.0.1 for test `t`: it records each request, then lets `answer` reply.
function fakeAnthropic(t: TestContext, answer: (seen: Seen, res: ServerResponse) => void): Promise<FakeServer<Seen>> {
  return fakeJson(t, answer);
}

// Every answer of the real API carries its request id.
function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  sendJson(res, status, body, { 'request-id': 'req_1', ...headers });
}

function apiError(type: string, text: string): unknown {
  return { type: 'error', error: { type, message: text }, request_id: 'req_1' };
}

// Answers like the real API: 401 without the key, 400 for a missing field or a thinking budget out of range.
function strict(reply: (seen: Seen, res: ServerResponse) => void) {
  return (seen: Seen, res: ServerResponse) => {
    if (seen.method !== 'POST' || seen.path !== '/v1/messages') {
      return json(res, 404, apiError('not_found_error', 'Not found'));
    }
    if (seen.headers['x-api-key'] !== KEY) return json(res, 401, apiError('authentication_error', 'invalid x-api-key'));
    if (seen.headers['anthropic-version'] === undefined) {
      return json(res, 400, apiError('invalid_request_error', 'anthropic-version: header is required'));
    }
    const { model, max_tokens, messages, thinking } = seen.body;
    if (
      typeof model !== 'string' || typeof max_tokens !== 'number' || !Array.isArray(messages) || messages.length === 0
    ) {
      return json(res, 400, apiError('invalid_request_error', 'model, max_tokens and messages are required'));
    }
    if (thinking !== undefined) {
      const budget = (thinking as { budget_tokens?: unknown }).budget_tokens;
      if (typeof budget !== 'number' || budget < 1024 || budget >= max_tokens) {
        return json(
          res,
          400,
          apiError('invalid_request_error', 'thinking.budget_tokens: must be >= 1024 and less than max_tokens'),
        );
      }
    }
    reply(seen, res);
  };
}

function turn(overrides: Partial<TurnRequest> = {}): TurnRequest {
  return turnRequest('claude-test', { ...overrides });
}

// What `count` turns in a row against the fake at `url` answer, in order.
async function completeEach(url: string, count: number): Promise<unknown[]> {
  const provider = createAnthropicProvider({ baseUrl: url, apiKey: KEY });
  const results = [];
  for (let i = 0; i < count; i++) results.push(await provider.complete(turn()));
  return results;
}

// The API's error types for the statuses the contract asks about.
const errorType = (
  status: number,
) => (status >= 500 ? 'api_error' : status === 401 ? 'authentication_error' : 'invalid_request_error');

addHttpProviderTests('createAnthropicProvider()', {
  make: (options) => createAnthropicProvider(options),
  key: KEY,
  refuse: (res, status, text, headers) => json(res, status, apiError(errorType(status), text), headers),
  says: (status, text) => `HTTP ${status} ${errorType(status)}: ${text}`,
});

test('createAnthropicProvider() posts model, max_tokens, system and messages with x-api-key and anthropic-version', async (t) => {
  const fake = await fakeAnthropic(
    t,
    strict((_seen, res) => json(res, 200, message([{ type: 'text', text: 'Hi there' }]))),
  );
  const provider = createAnthropicProvider({
    baseUrl: fake.url,
    apiKey: KEY,
    headers: { 'anthropic-beta': 'test-beta' },
  });
  const history = [
    { role: 'user' as const, content: 'Earlier question' },
    { role: 'assistant' as const, content: 'Earlier answer' },
  ];
  assert.deepEqual(await provider.complete(turn({ history })), { ok: true, value: 'Hi there' });
  const [seen] = fake.seen;
  assert.equal(seen?.headers['anthropic-version'], '2023-06-01');
  assert.equal(seen?.headers['content-type'], 'application/json');
  assert.equal(seen?.headers['anthropic-beta'], 'test-beta');
  assert.deepEqual(seen?.body, {
    model: 'claude-test',
    max_tokens: 4096,
    system: 'You are terse.',
    messages: [
      { role: 'user', content: 'Earlier question' },
      { role: 'assistant', content: 'Earlier answer' },
      { role: 'user', content: 'Say hi' },
    ],
  });
});

test('createAnthropicProvider() maps each thinking level to a budget the API accepts, with max_tokens above it', async (t) => {
  const fake = await fakeAnthropic(t, strict((_seen, res) => json(res, 200, message([{ type: 'text', text: 'ok' }]))));
  const provider = createAnthropicProvider({ baseUrl: fake.url, apiKey: KEY, maxTokens: 2000 });
  for (const thinking of ['off', 'minimal', 'low', 'medium', 'high', 'xhigh'] as const) {
    assert.deepEqual(await provider.complete(turn({ thinking })), { ok: true, value: 'ok' }, thinking);
  }
  assert.deepEqual(
    fake.seen.map((s) => [s.body.max_tokens, s.body.thinking]),
    [
      [2000, undefined],
      [3024, { type: 'enabled', budget_tokens: 1024 }],
      [4048, { type: 'enabled', budget_tokens: 2048 }],
      [10192, { type: 'enabled', budget_tokens: 8192 }],
      [18384, { type: 'enabled', budget_tokens: 16384 }],
      [26576, { type: 'enabled', budget_tokens: 24576 }],
    ],
  );
  assert.ok(Object.values(THINKING_BUDGETS).every((budget) => budget + 4096 <= 32000));
});

test('createAnthropicProvider() takes the text blocks after thinking blocks, joined in order', async (t) => {
  const content = [
    { type: 'thinking', thinking: 'Let me think.', signature: 'sig' },
    { type: 'redacted_thinking', data: 'opaque' },
    { type: 'text', text: 'Part one, ' },
    { type: 'text', text: 'part two.' },
  ];
  const fake = await fakeAnthropic(t, strict((_seen, res) => json(res, 200, message(content))));
  const result = await createAnthropicProvider({ baseUrl: fake.url, apiKey: KEY }).complete(turn({ thinking: 'low' }));
  assert.deepEqual(result, { ok: true, value: 'Part one, part two.' });
});

test('createAnthropicProvider() omits an empty system, sends no key when none is set, and uses the given version', async (t) => {
  const fake = await fakeAnthropic(t, (_seen, res) => json(res, 200, message([{ type: 'text', text: 'local' }])));
  const provider = createAnthropicProvider({
    baseUrl: `${fake.url}/`,
    version: '2024-01-01',
    fetch: (...args) => globalThis.fetch(...args),
  });
  assert.deepEqual(await provider.complete(turn({ system: '' })), { ok: true, value: 'local' });
  const [seen] = fake.seen;
  assert.equal(seen?.path, '/v1/messages');
  assert.equal(seen?.headers['x-api-key'], undefined);
  assert.equal(seen?.headers['anthropic-version'], '2024-01-01');
  assert.equal('system' in (seen?.body ?? {}), false);
});

test('createAnthropicProvider() fails permanently when the reply has no text block or is not JSON', async (t) => {
  const bodies = [
    JSON.stringify(message([{ type: 'thinking', thinking: 'hmm', signature: 's' }], 'max_tokens')),
    JSON.stringify({ content: [] }),
    'not json',
  ];
  const fake = await fakeAnthropic(
    t,
    strict((_seen, res) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(bodies[fake.seen.length - 1])
    ),
  );
  assert.deepEqual(await completeEach(fake.url, bodies.length), [
    { ok: false, retryable: false, message: 'Malformed response: no text block (stop_reason max_tokens)' },
    { ok: false, retryable: false, message: 'Malformed response: no text block' },
    { ok: false, retryable: false, message: 'Malformed response: not json' },
  ]);
});

test('createAnthropicProvider() makes a 429 with retry-after retryable and honours the wait', async (t) => {
  const fake = await fakeAnthropic(
    t,
    strict((_seen, res) =>
      json(res, 429, apiError('rate_limit_error', 'Number of request tokens has exceeded your per-minute rate limit'), {
        'retry-after': '3',
      })
    ),
  );
  const result = await createAnthropicProvider({ baseUrl: fake.url, apiKey: KEY }).complete(turn());
  assert.deepEqual(result, {
    ok: false,
    retryable: true,
    message: 'HTTP 429 rate_limit_error: Number of request tokens has exceeded your per-minute rate limit',
    retryAfterMs: 3000,
  });
});

test('createAnthropicProvider() does not retry a 429 without retry-after (the spend cap)', async (t) => {
  const fake = await fakeAnthropic(
    t,
    strict((_seen, res) =>
      json(res, 429, apiError('rate_limit_error', 'You have reached your specified API usage limits'))
    ),
  );
  const result = await createAnthropicProvider({ baseUrl: fake.url, apiKey: KEY }).complete(turn());
  assert.deepEqual(result, {
    ok: false,
    retryable: false,
    message: 'HTTP 429 rate_limit_error: You have reached your specified API usage limits',
  });
});

test('createAnthropicProvider() makes 529 overloaded retryable', async (t) => {
  const fake = await fakeAnthropic(
    t,
    strict((_seen, res) => json(res, 529, apiError('overloaded_error', 'Overloaded'))),
  );
  assert.deepEqual(await completeEach(fake.url, 1), [{
    ok: false,
    retryable: true,
    message: 'HTTP 529 overloaded_error: Overloaded',
  }]);
});
test('createAnthropicProvider() rejects a maxTokens that is not a positive integer', () => {
  assert.throws(() => createAnthropicProvider({ baseUrl: 'http://127.0.0.1', maxTokens: 0 }), {
    name: 'RangeError',
    message: 'Cannot use maxTokens: 0 is not a positive integer',
  });
});
