import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { test } from 'node:test';
import { json, listenJson, type FakeServer, type Seen as JsonSeen } from './_fake-server.ts';
import { createOpenAiProvider } from '../lib/runtime/providers/openai.ts';
import type { TurnRequest } from '../lib/runtime/providers/provider.ts';

const KEY = 'sk-test-0123456789abcdef';

type Seen = JsonSeen<Record<string, unknown>>;

// A real OpenAI-compatible server on 127.0.0.1: it records each request, then lets `answer` reply.
async function fakeOpenAi(answer: (seen: Seen, res: ServerResponse) => void): Promise<FakeServer<Seen>> {
  const server = await listenJson(answer);
  return { ...server, url: `${server.url}/v1` };
}

function completion(content: unknown): unknown {
  return {
    id: 'chatcmpl-1',
    object: 'chat.completion',
    created: 1700000000,
    model: 'gpt-test',
    choices: [{ index: 0, message: { role: 'assistant', content, refusal: null }, finish_reason: 'stop', logprobs: null }],
    usage: { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 },
  };
}

function apiError(message: string, type: string, code: string | null = null): unknown {
  return { error: { message, type, param: null, code } };
}

// Answers like the real API: 401 without the right Bearer key, 400 without model or messages.
function strict(reply: (seen: Seen, res: ServerResponse) => void) {
  return (seen: Seen, res: ServerResponse) => {
    if (seen.method !== 'POST' || seen.path !== '/v1/chat/completions') return json(res, 404, apiError('Unknown path', 'invalid_request_error'));
    if (seen.headers.authorization !== `Bearer ${KEY}`) return json(res, 401, apiError('Incorrect API key provided', 'invalid_request_error', 'invalid_api_key'));
    if (typeof seen.body.model !== 'string' || !Array.isArray(seen.body.messages) || seen.body.messages.length === 0) {
      return json(res, 400, apiError('model and messages are required', 'invalid_request_error'));
    }
    reply(seen, res);
  };
}

function turn(overrides: Partial<TurnRequest> = {}): TurnRequest {
  return {
    model: 'gpt-test',
    system: 'You are terse.',
    history: [],
    prompt: 'Say hi',
    signal: new AbortController().signal,
    run: { runId: 'run-1', sessionKey: 'hook:abc', agentId: 'main' },
    ...overrides,
  };
}

test('createOpenAiProvider() posts model, system, history and prompt with the Bearer key and returns the reply text', async () => {
  const fake = await fakeOpenAi(strict((_seen, res) => json(res, 200, completion('Hi there'))));
  try {
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
  } finally {
    await fake.close();
  }
});

test('createOpenAiProvider() maps thinking to reasoning_effort: off and unset omit it, xhigh is sent as documented', async () => {
  const fake = await fakeOpenAi(strict((_seen, res) => json(res, 200, completion('ok'))));
  try {
    const provider = createOpenAiProvider({ baseUrl: fake.url, apiKey: KEY });
    for (const thinking of ['off', undefined, 'minimal', 'medium', 'high', 'xhigh'] as const) {
      assert.equal((await provider.complete(turn(thinking === undefined ? {} : { thinking }))).ok, true);
    }
    assert.deepEqual(
      fake.seen.map((s) => s.body.reasoning_effort),
      [undefined, undefined, 'minimal', 'medium', 'high', 'xhigh'],
    );
    assert.deepEqual(fake.seen.slice(0, 2).map((s) => 'reasoning_effort' in s.body), [false, false]);
  } finally {
    await fake.close();
  }
});

test('createOpenAiProvider() sends no Authorization without a key, no empty system message, and tolerates a trailing slash', async () => {
  const fake = await fakeOpenAi((_seen, res) => json(res, 200, completion('local')));
  try {
    const provider = createOpenAiProvider({ baseUrl: `${fake.url}/`, fetch: (...args) => globalThis.fetch(...args) });
    assert.deepEqual(await provider.complete(turn({ system: '' })), { ok: true, value: 'local' });
    const [seen] = fake.seen;
    assert.equal(seen?.path, '/v1/chat/completions');
    assert.equal(seen?.headers.authorization, undefined);
    assert.deepEqual(seen?.body.messages, [{ role: 'user', content: 'Say hi' }]);
  } finally {
    await fake.close();
  }
});

test('createOpenAiProvider() joins the text parts of array content', async () => {
  const parts = [
    { type: 'text', text: 'Hello, ' },
    { type: 'image_url', image_url: { url: 'data:,' } },
    { type: 'text', text: 'world' },
  ];
  const fake = await fakeOpenAi(strict((_seen, res) => json(res, 200, completion(parts))));
  try {
    assert.deepEqual(await createOpenAiProvider({ baseUrl: fake.url, apiKey: KEY }).complete(turn()), { ok: true, value: 'Hello, world' });
  } finally {
    await fake.close();
  }
});

test('createOpenAiProvider() fails permanently on a refusal, a reply without content, and a body that is not JSON', async () => {
  const bodies = [
    JSON.stringify({ ...(completion(null) as object), choices: [{ index: 0, message: { role: 'assistant', content: null, refusal: 'I cannot help with that' } }] }),
    JSON.stringify({ object: 'chat.completion', choices: [] }),
    JSON.stringify({ error: { message: 'upstream model crashed' } }),
    '<html>gateway</html>',
  ];
  const fake = await fakeOpenAi(strict((_seen, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(bodies[fake.seen.length - 1])));
  try {
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
  } finally {
    await fake.close();
  }
});

test('createOpenAiProvider() makes a 429 with Retry-After retryable and honours the wait', async () => {
  const fake = await fakeOpenAi(
    strict((_seen, res) => json(res, 429, apiError('Rate limit reached for requests', 'requests', 'rate_limit_exceeded'), { 'retry-after': '2' })),
  );
  try {
    const result = await createOpenAiProvider({ baseUrl: fake.url, apiKey: KEY }).complete(turn());
    assert.deepEqual(result, { ok: false, retryable: true, message: 'HTTP 429 rate_limit_exceeded: Rate limit reached for requests', retryAfterMs: 2000 });
  } finally {
    await fake.close();
  }
});

test('createOpenAiProvider() prefers retry-after-ms, and reads an HTTP-date Retry-After on the injected clock', async () => {
  const now = Date.parse('2025-01-01T00:00:00Z');
  const answers = [{ 'retry-after-ms': '250', 'retry-after': '9' }, { 'retry-after': new Date(now + 5000).toUTCString() }];
  const fake = await fakeOpenAi(strict((_seen, res) => json(res, 429, apiError('Slow down', 'requests'), answers[fake.seen.length - 1])));
  try {
    const provider = createOpenAiProvider({ baseUrl: fake.url, apiKey: KEY, now: () => now });
    const first = await provider.complete(turn());
    const second = await provider.complete(turn());
    assert.equal(!first.ok && first.retryAfterMs, 250);
    assert.equal(!second.ok && second.retryAfterMs, 5000);
  } finally {
    await fake.close();
  }
});

test('createOpenAiProvider() does not retry a 429 for an exhausted quota, nor a 5xx marked x-should-retry: false', async () => {
  const fake = await fakeOpenAi(
    strict((_seen, res) => {
      if (fake.seen.length === 1) return json(res, 429, apiError('You exceeded your current quota', 'insufficient_quota', 'insufficient_quota'));
      json(res, 500, apiError('The server had an error', 'server_error'), { 'x-should-retry': 'false' });
    }),
  );
  try {
    const provider = createOpenAiProvider({ baseUrl: fake.url, apiKey: KEY });
    assert.deepEqual(await provider.complete(turn()), { ok: false, retryable: false, message: 'HTTP 429 insufficient_quota: You exceeded your current quota' });
    assert.deepEqual(await provider.complete(turn()), { ok: false, retryable: false, message: 'HTTP 500 server_error: The server had an error' });
  } finally {
    await fake.close();
  }
});

test('createOpenAiProvider() makes a 500 retryable, and words a non-JSON 5xx from its text or status', async () => {
  const fake = await fakeOpenAi(
    strict((_seen, res) => {
      if (fake.seen.length === 1) return json(res, 500, apiError('The server had an error while processing your request', 'server_error'));
      if (fake.seen.length === 2) return res.writeHead(502, { 'content-type': 'text/html' }).end('<h1>Bad   Gateway</h1>\n');
      res.writeHead(503).end();
    }),
  );
  try {
    const provider = createOpenAiProvider({ baseUrl: fake.url, apiKey: KEY });
    assert.deepEqual(await provider.complete(turn()), { ok: false, retryable: true, message: 'HTTP 500 server_error: The server had an error while processing your request' });
    assert.deepEqual(await provider.complete(turn()), { ok: false, retryable: true, message: 'HTTP 502: <h1>Bad Gateway</h1>' });
    assert.deepEqual(await provider.complete(turn()), { ok: false, retryable: true, message: 'HTTP 503: Service Unavailable' });
  } finally {
    await fake.close();
  }
});

test('createOpenAiProvider() fails a 401 permanently with the provider message and never the key', async () => {
  const fake = await fakeOpenAi((seen, res) => json(res, 401, apiError(`Incorrect API key provided: ${seen.headers.authorization?.slice(7)}.`, 'invalid_request_error', 'invalid_api_key')));
  try {
    const result = await createOpenAiProvider({ baseUrl: fake.url, apiKey: KEY }).complete(turn());
    assert.deepEqual(result, { ok: false, retryable: false, message: 'HTTP 401 invalid_api_key: Incorrect API key provided: [redacted].' });
  } finally {
    await fake.close();
  }
});

test('createOpenAiProvider() trims a long 400 message to one bounded line', async () => {
  const fake = await fakeOpenAi(strict((_seen, res) => json(res, 400, apiError(`Invalid value:\n${'x'.repeat(1000)}`, 'invalid_request_error'))));
  try {
    const result = await createOpenAiProvider({ baseUrl: fake.url, apiKey: KEY }).complete(turn());
    assert.equal(result.ok, false);
    if (result.ok) return;
    assert.equal(result.retryable, false);
    assert.equal(result.message.length, 300);
    assert.match(result.message, /^HTTP 400 invalid_request_error: Invalid value: x+…$/);
  } finally {
    await fake.close();
  }
});

test('createOpenAiProvider() answers aborted when the signal fires while the server never answers', async () => {
  const fake = await fakeOpenAi(() => {});
  try {
    const controller = new AbortController();
    const pending = createOpenAiProvider({ baseUrl: fake.url, apiKey: KEY }).complete(turn({ signal: controller.signal }));
    while (fake.seen.length === 0) await new Promise((resolve) => setImmediate(resolve));
    controller.abort();
    assert.deepEqual(await pending, { ok: false, retryable: false, message: 'aborted' });
  } finally {
    await fake.close();
  }
});

test('createOpenAiProvider() answers aborted when the body stalls after the headers, and for a signal already aborted', async () => {
  // Aborted once the headers and the start of the body are on their way, not on a clock: under
  // load a 50 ms timer could fire before the request even reached the fake.
  const stalled = new AbortController();
  const fake = await fakeOpenAi((_seen, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write('{"choices": [', () => stalled.abort());
  });
  try {
    const provider = createOpenAiProvider({ baseUrl: fake.url, apiKey: KEY });
    assert.deepEqual(await provider.complete(turn({ signal: stalled.signal })), { ok: false, retryable: false, message: 'aborted' });
    assert.deepEqual(await provider.complete(turn({ signal: AbortSignal.abort() })), { ok: false, retryable: false, message: 'aborted' });
    assert.equal(fake.seen.length, 1);
  } finally {
    await fake.close();
  }
});

test('createOpenAiProvider() makes a refused connection a retryable failure', async () => {
  const fake = await fakeOpenAi(() => {});
  await fake.close();
  const result = await createOpenAiProvider({ baseUrl: fake.url, apiKey: KEY }).complete(turn());
  assert.equal(result.ok, false);
  if (result.ok) return;
  assert.equal(result.retryable, true);
  assert.match(result.message, /^Connection failed: /);
});

test('createOpenAiProvider() words a thrown value without a cause', async () => {
  const provider = createOpenAiProvider({ baseUrl: 'http://127.0.0.1:9/v1', fetch: () => Promise.reject(new TypeError(`fetch failed for ${KEY}`)), apiKey: KEY });
  assert.deepEqual(await provider.complete(turn()), { ok: false, retryable: true, message: 'Connection failed: fetch failed for [redacted]' });
  const odd = createOpenAiProvider({ baseUrl: 'http://127.0.0.1:9/v1', fetch: () => Promise.reject('boom') });
  assert.deepEqual(await odd.complete(turn()), { ok: false, retryable: true, message: 'Connection failed: boom' });
});

test('createOpenAiProvider() rejects a base URL that is not http(s)', () => {
  assert.throws(() => createOpenAiProvider({ baseUrl: 'not a url' }), { name: 'TypeError', message: 'Cannot use provider base URL: "not a url" is not a URL' });
  assert.throws(() => createOpenAiProvider({ baseUrl: 'file:///tmp/x' }), { name: 'TypeError', message: 'Cannot use provider base URL: file: is not http: or https:' });
});
