import { test } from 'node:test';
import assert from 'node:assert/strict';
import { type Answer, answering, json, picked, type QueuedFake, type Seen, withQueue } from './_fake-server.ts';
import { createTelegramAdapter } from '../lib/delivery/telegram.ts';
import { addHttpAdapterTests } from './_adapter-contract.ts';

const TOKEN = '123456789:AAHfake-Token_for_specs0123456789abc';

function error(status: number, description: string, parameters?: Record<string, unknown>): Answer {
  return {
    status,
    body: { ok: false, error_code: status, description, ...(parameters === undefined ? {} : { parameters }) },
  };
}

// Chats the fake Bot API knows, keyed as a request may name them.
const CHATS = new Map<string, { id: number; type: string; blocked?: boolean; migratedTo?: number }>([
  ['123456789', { id: 123456789, type: 'private' }],
  ['-123456789', { id: -123456789, type: 'group' }],
  ['-1001234567890', { id: -1001234567890, type: 'supergroup' }],
  ['@news_channel', { id: -1009876543210, type: 'channel' }],
  ['555000555', { id: 555000555, type: 'private', blocked: true }],
  ['-4242', { id: -4242, type: 'group', migratedTo: -1000000004242 }],
  ['-1000000004242', { id: -1000000004242, type: 'supergroup' }],
]);

// Behaves as the Bot API's sendMessage does for a JSON body (tdlib/telegram-bot-api, apis.md §1).
function botApi(seen: Seen, messageId: () => number): Answer {
  const match = /^\/bot([^/]+)\/([A-Za-z]+)$/.exec(seen.path);
  if (match === null) return error(404, 'Not Found');
  if (match[1] !== TOKEN) return error(401, 'Unauthorized');
  if (match[2]!.toLowerCase() !== 'sendmessage') return error(404, 'Not Found');
  if (!String(seen.headers['content-type']).startsWith('application/json')) {
    return error(400, 'Bad Request: fake reads JSON only');
  }
  const body = seen.body as { chat_id?: unknown; text?: unknown };
  const text = typeof body.text === 'string' ? body.text : '';
  if (text.trim() === '') return error(400, 'Bad Request: message text is empty');
  if ([...text].length > 4096) return error(400, 'Bad Request: message is too long');
  const chat = CHATS.get(String(body.chat_id));
  if (chat === undefined) return error(400, 'Bad Request: chat not found');
  if (chat.blocked === true) return error(403, 'Forbidden: bot was blocked by the user');
  if (chat.migratedTo !== undefined) {
    return error(400, 'Bad Request: group chat was upgraded to a supergroup chat', {
      migrate_to_chat_id: chat.migratedTo,
    });
  }
  return {
    status: 200,
    body: {
      ok: true,
      result: { message_id: messageId(), date: 1_790_000_000, chat: { id: chat.id, type: chat.type }, text },
    },
  };
}

function withFake(run: (fake: QueuedFake) => Promise<void>): Promise<void> {
  let nextId = 41;
  return withQueue((seen) => botApi(seen, () => ++nextId), run);
}

addHttpAdapterTests('telegram', {
  name: 'Telegram',
  channel: 'telegram',
  maxLength: 4096,
  recipients: {
    good: [
      '123456789',
      '-123456789',
      '-1001234567890',
      '9007199254740991',
      '@news_channel',
      '@abcd',
      '@A_32_characters_long_username_x',
    ],
    bad: [
      'general',
      '',
      'abc',
      '0',
      '-0',
      '0123',
      '12.5',
      '+123',
      ' 123',
      '123 ',
      '9007199254740993',
      '-10012345678901234',
      '@abc',
      '@1abc',
      '@_abc',
      '@has space',
      '@toolong_username_over_thirty_two_c',
      'https://t.me/news',
    ],
    expected: 'a numeric chat id or @channelusername',
  },
  make: (apiBase, fetch) =>
    createTelegramAdapter({ botToken: TOKEN, apiBase, ...(fetch === undefined ? {} : { fetch }) }),
  url: { option: 'apiBase' },
  platform: () => answering((seen) => botApi(seen, () => 42)),
  refuse: (res, status, text, headers) => json(res, status, error(status, text).body, headers),
  says: (status, text) => `Telegram ${status}: ${text}`,
  unreachable: 'Telegram request failed: ',
  secret: { value: TOKEN, mask: '<token>' },
});

// The answer the adapter gives for a failure that retrying would not fix.
function permanent(message: string): { ok: false; retryable: false; message: string } {
  return { ok: false, retryable: false, message };
}

test('telegram.send() posts JSON {chat_id, text} to /bot<token>/sendMessage and returns the message_id', async () => {
  await withFake(async (fake) => {
    const adapter = createTelegramAdapter({ botToken: TOKEN, apiBase: fake.url });
    const text = 'Build finished: 3 passed, *no* failures_ [x](y)';
    assert.deepEqual(await adapter.send('123456789', text), { ok: true, value: { messageIds: ['42'] } });
    // No authorization header: the token is in the path. A numeric id goes as a JSON number, and no
    // parse_mode, so Markdown characters are never refused.
    assert.deepEqual(fake.seen.map((seen) => picked(seen, ['content-type', 'authorization'])), [
      {
        method: 'POST',
        path: `/bot${TOKEN}/sendMessage`,
        headers: { 'content-type': 'application/json', authorization: undefined },
        body: { chat_id: 123456789, text },
      },
    ]);
  });
});

test('telegram.send() names a channel by its @username as a string and a supergroup by its -100 id', async () => {
  await withFake(async (fake) => {
    const adapter = createTelegramAdapter({ botToken: TOKEN, apiBase: `${fake.url}/` });
    assert.deepEqual(await adapter.send('@news_channel', 'hello'), { ok: true, value: { messageIds: ['42'] } });
    assert.deepEqual(await adapter.send('-1001234567890', 'again'), { ok: true, value: { messageIds: ['43'] } });
    assert.deepEqual(fake.seen.map((s) => [s.path, s.body]), [
      [`/bot${TOKEN}/sendMessage`, { chat_id: '@news_channel', text: 'hello' }],
      [`/bot${TOKEN}/sendMessage`, { chat_id: -1001234567890, text: 'again' }],
    ]);
  });
});

test('telegram.send() sends a full 4096-unit message as it is', async () => {
  await withFake(async (fake) => {
    const adapter = createTelegramAdapter({ botToken: TOKEN, apiBase: fake.url });
    const text = 'é'.repeat(4096);
    assert.equal((await adapter.send('123456789', text)).ok, true);
    assert.deepEqual(fake.seen[0]!.body, { chat_id: 123456789, text });
  });
});

test('telegram.send() on 429 is retryable after parameters.retry_after seconds', async () => {
  await withFake(async (fake) => {
    const adapter = createTelegramAdapter({ botToken: TOKEN, apiBase: fake.url });
    fake.queue.push({
      ...error(429, 'Too Many Requests: retry after 7', { retry_after: 7 }),
      headers: { 'retry-after': '7' },
    });
    assert.deepEqual(await adapter.send('123456789', 'hi'), {
      ok: false,
      retryable: true,
      message: 'Telegram 429: Too Many Requests: retry after 7',
      retryAfterMs: 7000,
    });
  });
});

test('telegram.send() on ok:false is a permanent failure carrying the description', async () => {
  await withFake(async (fake) => {
    const adapter = createTelegramAdapter({ botToken: TOKEN, apiBase: fake.url });
    assert.deepEqual(
      await adapter.send('555000555', 'hi'),
      permanent('Telegram 403: Forbidden: bot was blocked by the user'),
    );
    assert.deepEqual(await adapter.send('987654321', 'hi'), {
      ok: false,
      retryable: false,
      message: 'Telegram 400: Bad Request: chat not found',
    });
  });
});

test('telegram.send() trusts error_code when something in between answered 200 with ok:false', async () => {
  await withFake(async (fake) => {
    const adapter = createTelegramAdapter({ botToken: TOKEN, apiBase: fake.url });
    fake.queue.push({
      status: 200,
      body: {
        ok: false,
        error_code: 429,
        description: 'Too Many Requests: retry after 2',
        parameters: { retry_after: 2 },
      },
    });
    fake.queue.push({ status: 200, body: { ok: false, error_code: 400, description: 'Bad Request: chat not found' } });
    fake.queue.push({ status: 200, body: 'not json' });
    assert.deepEqual(await adapter.send('123456789', 'a'), {
      ok: false,
      retryable: true,
      message: 'Telegram 429: Too Many Requests: retry after 2',
      retryAfterMs: 2000,
    });
    assert.deepEqual(await adapter.send('123456789', 'b'), {
      ok: false,
      retryable: false,
      message: 'Telegram 400: Bad Request: chat not found',
    });
    assert.deepEqual(await adapter.send('123456789', 'c'), {
      ok: false,
      retryable: false,
      message: 'Telegram 200: not json',
    });
  });
});

test('telegram.send() follows migrate_to_chat_id once when a group became a supergroup', async () => {
  await withFake(async (fake) => {
    const adapter = createTelegramAdapter({ botToken: TOKEN, apiBase: fake.url });
    assert.deepEqual(await adapter.send('-4242', 'hi'), { ok: true, value: { messageIds: ['42'] } });
    assert.deepEqual(fake.seen.map((s) => s.body), [{ chat_id: -4242, text: 'hi' }, {
      chat_id: -1000000004242,
      text: 'hi',
    }]);
  });
});

test('telegram.send() does not pass on an HTML error page', async () => {
  await withFake(async (fake) => {
    const adapter = createTelegramAdapter({ botToken: TOKEN, apiBase: fake.url });
    fake.queue.push({
      status: 502,
      headers: { 'content-type': 'text/html' },
      body: '<html><body>Bad Gateway</body></html>',
    });
    assert.deepEqual(await adapter.send('123456789', 'hi'), {
      ok: false,
      retryable: true,
      message: 'Telegram 502: no error description',
    });
  });
});

test('telegram.send() clips a long description after scrubbing, never leaving part of the token or of a surrogate pair', async () => {
  await withFake(async (fake) => {
    const adapter = createTelegramAdapter({ botToken: TOKEN, apiBase: fake.url });
    fake.queue.push(error(400, `Bad Request: ${'x'.repeat(360)}${TOKEN}${'y'.repeat(500)}`));
    fake.queue.push(error(400, `Bad Request: ${'x'.repeat(362)}${'😀'.repeat(50)}`));
    const first = await adapter.send('123456789', 'hi');
    assert.ok(!first.ok);
    assert.equal(first.message, `Telegram 400: Bad Request: ${'x'.repeat(360)}<token>${'y'.repeat(6)}…`);
    const second = await adapter.send('123456789', 'hi');
    assert.ok(!second.ok);
    assert.equal(second.message, `Telegram 400: Bad Request: ${'x'.repeat(362)}${'😀'.repeat(5)}…`);
  });
});

test('telegram.send() with a wrong token fails permanently and names neither token', async () => {
  await withFake(async (fake) => {
    const other = '987654321:ZZZ-other_token';
    const adapter = createTelegramAdapter({ botToken: other, apiBase: fake.url });
    const attempt = await adapter.send('123456789', 'hi');
    assert.deepEqual(attempt, { ok: false, retryable: false, message: 'Telegram 401: Unauthorized' });
    assert.equal(fake.seen[0]!.path, `/bot${other}/sendMessage`);
  });
});

test('createTelegramAdapter() rejects a malformed token and an apiBase that is not http(s)', () => {
  assert.throws(() => createTelegramAdapter({ botToken: '' }), {
    name: 'TypeError',
    message: /^Invalid option botToken: /,
  });
  assert.throws(() => createTelegramAdapter({ botToken: '123:abc/def' }), /Invalid option botToken/);
  assert.throws(() => createTelegramAdapter({ botToken: '123:abc def' }), /Invalid option botToken/);
  assert.throws(
    () => createTelegramAdapter({ botToken: TOKEN, apiBase: 'ftp://example.test' }),
    /Invalid option apiBase/,
  );
});
