import { test } from 'node:test';
import assert from 'node:assert/strict';
import { closedUrl, withQueue, type Answer, type QueuedFake, type Seen } from './_fake-server.ts';
import { createMattermostAdapter } from '../lib/delivery/mattermost.ts';

const TOKEN = 'h5w9kqz1fjbq7n3xcd8y4tsoge';
const CHANNEL = 'nhze199c4j87ped4wannrjdt9c';
const READ_ONLY = 'q3x8bj4ttbgzjpmsr8bt5nhq7e';

function appError(status: number, id: string, message: string): Answer {
  return { status, body: { id, message, detailed_error: '', request_id: 'r6bkq9dh1jfz8cc5e4w7xa3n1o', status_code: status } };
}

const LIMITED: Answer = {
  status: 429,
  headers: { 'content-type': 'text/plain; charset=utf-8', 'retry-after': '1', 'x-ratelimit-limit': '10', 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': '1' },
  body: 'limit exceeded\n',
};

// Behaves as POST /api/v4/posts does (Mattermost REST v4, apis.md §4), with the server's MaxPostSize in code points.
function mattermostApi(seen: Seen, maxPostSize: number, postId: () => string): Answer {
  if (seen.path !== '/api/v4/posts' || seen.method !== 'POST') return appError(404, 'api.context.404.app_error', 'Sorry, we could not find the page.');
  if (seen.headers['authorization'] !== `Bearer ${TOKEN}`) {
    return appError(401, 'api.context.session_expired.app_error', 'Invalid or expired session, please login again.');
  }
  if (seen.headers['content-type'] !== 'application/json') return appError(400, 'api.context.invalid_body_param.app_error', 'Invalid or missing post in request body.');
  const { channel_id: channel, message } = seen.body as { channel_id?: unknown; message?: unknown };
  if (typeof channel !== 'string' || channel === '' || typeof message !== 'string' || message === '') {
    return appError(400, 'api.context.invalid_body_param.app_error', 'Invalid or missing post in request body.');
  }
  if (channel === READ_ONLY) return appError(403, 'api.context.permissions.app_error', 'You do not have the appropriate permissions.');
  if (channel !== CHANNEL) return appError(404, 'app.channel.get.existing.app_error', 'Unable to find the existing channel.');
  if ([...message].length > maxPostSize) {
    return appError(400, 'model.post.is_valid.message_length.app_error', 'Invalid Message property for post.');
  }
  return {
    status: 201,
    body: { id: postId(), create_at: 1_790_000_000_000, update_at: 1_790_000_000_000, user_id: 'bot0000000000000000000000a', channel_id: channel, root_id: '', message, type: '', props: {}, pending_post_id: '' },
  };
}

function withFake(run: (fake: QueuedFake) => Promise<void>, maxPostSize = 16383): Promise<void> {
  let nextId = 0;
  return withQueue((seen) => mattermostApi(seen, maxPostSize, () => `post${String(++nextId).padStart(22, '0')}`), run);
}

// The answer the adapter gives for a failure that retrying would not fix.
function permanent(message: string): { ok: false; retryable: false; message: string } {
  return { ok: false, retryable: false, message };
}

test('mattermost.checkRecipient() accepts a 26-character lowercase id', () => {
  const adapter = createMattermostAdapter({ serverUrl: 'https://chat.example.test', token: TOKEN });
  assert.equal(adapter.checkRecipient(CHANNEL), null);
  assert.equal(adapter.checkRecipient('0'.repeat(26)), null);
});

test('mattermost.checkRecipient() rejects channel names, wrong lengths and upper case with the reason', () => {
  const adapter = createMattermostAdapter({ serverUrl: 'https://chat.example.test', token: TOKEN });
  const bad = ['', 'town-square', '~town-square', CHANNEL.slice(1), `${CHANNEL}x`, CHANNEL.toUpperCase(), ` ${CHANNEL.slice(1)}`, 'nhze199c4j87ped4wannrjdt9_'];
  for (const to of bad) {
    assert.match(adapter.checkRecipient(to) ?? '', /^Invalid Mattermost recipient: expected a channel id of 26 lowercase letters and digits, got /, to);
  }
  assert.equal(adapter.checkRecipient('town-square'), 'Invalid Mattermost recipient: expected a channel id of 26 lowercase letters and digits, got "town-square"');
});

test('mattermost adapter names its channel and defaults to the 16383-character MaxPostSize', () => {
  const adapter = createMattermostAdapter({ serverUrl: 'https://chat.example.test', token: TOKEN });
  assert.equal(adapter.channel, 'mattermost');
  assert.equal(adapter.maxLength, 16383);
  assert.equal(createMattermostAdapter({ serverUrl: 'https://chat.example.test', token: TOKEN, maxLength: 4000 }).maxLength, 4000);
});

test('mattermost.send() posts JSON {channel_id, message} with Bearer auth to /api/v4/posts and returns the post id', async () => {
  await withFake(async (fake) => {
    const adapter = createMattermostAdapter({ serverUrl: fake.url, token: TOKEN });
    const text = '### Report\n- one\n- two & <three>';
    assert.deepEqual(await adapter.send(CHANNEL, text), { ok: true, value: { messageIds: ['post0000000000000000000001'] } });
    assert.equal(fake.seen.length, 1);
    const [seen] = fake.seen;
    assert.equal(seen!.method, 'POST');
    assert.equal(seen!.path, '/api/v4/posts');
    assert.equal(seen!.headers['authorization'], `Bearer ${TOKEN}`);
    assert.equal(seen!.headers['content-type'], 'application/json');
    assert.deepEqual(seen!.body, { channel_id: CHANNEL, message: text });
  });
});

test('mattermost.send() keeps a serverUrl path and drops its trailing slash', async () => {
  await withFake(async (fake) => {
    const adapter = createMattermostAdapter({ serverUrl: `${fake.url}/`, token: TOKEN });
    assert.equal((await adapter.send(CHANNEL, 'hi')).ok, true);
    const nested = createMattermostAdapter({ serverUrl: `${fake.url}/mm`, token: TOKEN });
    assert.deepEqual(await nested.send(CHANNEL, 'hi'), { ok: false, retryable: false, message: 'Mattermost 404: Sorry, we could not find the page. (api.context.404.app_error)' });
    assert.deepEqual(fake.seen.map((s) => s.path), ['/api/v4/posts', '/mm/api/v4/posts']);
  });
});

test('mattermost.send() sends a message at a 4000 maxLength to an older server', async () => {
  await withFake(async (fake) => {
    const adapter = createMattermostAdapter({ serverUrl: fake.url, token: TOKEN, maxLength: 4000 });
    assert.equal((await adapter.send(CHANNEL, 'ö'.repeat(4000))).ok, true);
    await assert.rejects(adapter.send(CHANNEL, 'ö'.repeat(4001)), { name: 'RangeError', message: 'Cannot send text: 4001 characters exceed the Mattermost limit of 4000' });
  }, 4000);
});

test('mattermost.send() on an AppError fails permanently with its message and id', async () => {
  await withFake(async (fake) => {
    const adapter = createMattermostAdapter({ serverUrl: fake.url, token: TOKEN });
    assert.deepEqual(await adapter.send(READ_ONLY, 'hi'), permanent('Mattermost 403: You do not have the appropriate permissions. (api.context.permissions.app_error)'));
    assert.deepEqual(await adapter.send('zzzzzzzzzzzzzzzzzzzzzzzzzz', 'hi'), permanent('Mattermost 404: Unable to find the existing channel. (app.channel.get.existing.app_error)'));
  });
});

test('mattermost.send() reports a post over the server limit as the server words it', async () => {
  await withFake(async (fake) => {
    const adapter = createMattermostAdapter({ serverUrl: fake.url, token: TOKEN });
    assert.deepEqual(await adapter.send(CHANNEL, 'y'.repeat(16383)), { ok: true, value: { messageIds: ['post0000000000000000000001'] } });
  }, 16383);
  await withFake(async (fake) => {
    // A server configured smaller than the adapter was told.
    const adapter = createMattermostAdapter({ serverUrl: fake.url, token: TOKEN });
    assert.deepEqual(await adapter.send(CHANNEL, 'y'.repeat(101)), permanent('Mattermost 400: Invalid Message property for post. (model.post.is_valid.message_length.app_error)'));
  }, 100);
});

test('mattermost.send() on 429 reads the plain-text body and waits Retry-After seconds', async () => {
  await withFake(async (fake) => {
    const adapter = createMattermostAdapter({ serverUrl: fake.url, token: TOKEN });
    fake.queue.push(LIMITED);
    assert.deepEqual(await adapter.send(CHANNEL, 'hi'), { ok: false, retryable: true, message: 'Mattermost 429: limit exceeded', retryAfterMs: 1000 });
  });
});

test('mattermost.send() on 5xx is retryable, with or without an AppError body', async () => {
  await withFake(async (fake) => {
    const adapter = createMattermostAdapter({ serverUrl: fake.url, token: TOKEN });
    fake.queue.push(appError(500, '', 'We encountered an error.'));
    fake.queue.push({ status: 502, headers: { 'content-type': 'text/html' }, body: '<html><h1>502 Bad Gateway</h1></html>' });
    assert.deepEqual(await adapter.send(CHANNEL, 'a'), { ok: false, retryable: true, message: 'Mattermost 500: We encountered an error.' });
    assert.deepEqual(await adapter.send(CHANNEL, 'b'), { ok: false, retryable: true, message: 'Mattermost 502: no error description' });
  });
});

test('mattermost.send() answers an empty id list when a 201 body has no id', async () => {
  await withFake(async (fake) => {
    const adapter = createMattermostAdapter({ serverUrl: fake.url, token: TOKEN });
    fake.queue.push({ status: 201, body: { channel_id: CHANNEL } });
    assert.deepEqual(await adapter.send(CHANNEL, 'hi'), { ok: true, value: { messageIds: [] } });
  });
});

test('mattermost.send() with a wrong token fails permanently and never shows a token', async () => {
  await withFake(async (fake) => {
    const other = 'zzzzzzzzzzzzzzzzzzzzzzzzzz';
    const adapter = createMattermostAdapter({ serverUrl: fake.url, token: other });
    assert.deepEqual(await adapter.send(CHANNEL, 'hi'), permanent('Mattermost 401: Invalid or expired session, please login again. (api.context.session_expired.app_error)'));
    assert.equal(fake.seen[0]!.headers['authorization'], `Bearer ${other}`);
  });
});

test('mattermost.send() scrubs the token from an AppError that echoes it', async () => {
  await withFake(async (fake) => {
    const adapter = createMattermostAdapter({ serverUrl: fake.url, token: TOKEN });
    fake.queue.push(appError(401, 'api.context.session_expired.app_error', `Invalid session token=${TOKEN}`));
    assert.deepEqual(await adapter.send(CHANNEL, 'hi'), permanent('Mattermost 401: Invalid session token=<token> (api.context.session_expired.app_error)'));
  });
});

test('mattermost.send() clips a long AppError after scrubbing, never leaving part of the token', async () => {
  await withFake(async (fake) => {
    const adapter = createMattermostAdapter({ serverUrl: fake.url, token: TOKEN });
    fake.queue.push(appError(400, 'some.app_error', `${'x'.repeat(375)}${TOKEN}${'y'.repeat(100)}`));
    const attempt = await adapter.send(CHANNEL, 'hi');
    assert.ok(!attempt.ok && attempt.message.endsWith('…') && attempt.message.length === 401);
    assert.ok(!attempt.message.includes(TOKEN.slice(0, 6)));
  });
});

test('mattermost.send() on a refused connection is retryable and never shows the token', async () => {
  const adapter = createMattermostAdapter({ serverUrl: await closedUrl(), token: TOKEN });
  const attempt = await adapter.send(CHANNEL, 'hi');
  assert.equal(!attempt.ok && attempt.retryable, true);
  assert.match(!attempt.ok ? attempt.message : '', /^Mattermost request failed: /);
  assert.ok(!attempt.ok && !attempt.message.includes(TOKEN));
});

test('mattermost.send() scrubs the token from a fetch error that quotes the request', async () => {
  const adapter = createMattermostAdapter({
    serverUrl: 'https://chat.example.test',
    token: TOKEN,
    fetch: async (_input, init) => {
      throw new Error(`proxy refused ${JSON.stringify(init?.headers)}`);
    },
  });
  const attempt = await adapter.send(CHANNEL, 'hi');
  assert.ok(!attempt.ok && attempt.retryable && attempt.message.includes('Bearer <token>') && !attempt.message.includes(TOKEN));
});

test('mattermost.send() with an aborted signal fails without a retry', async () => {
  await withFake(async (fake) => {
    const adapter = createMattermostAdapter({ serverUrl: fake.url, token: TOKEN });
    assert.deepEqual(await adapter.send(CHANNEL, 'hi', AbortSignal.abort()), { ok: false, retryable: false, message: 'Mattermost request aborted' });
  });
});

test('mattermost.send() refuses a channel name without a request', async () => {
  await withFake(async (fake) => {
    const adapter = createMattermostAdapter({ serverUrl: fake.url, token: TOKEN });
    const attempt = await adapter.send('town-square', 'hi');
    assert.equal(attempt.ok || attempt.retryable, false);
    assert.equal(fake.seen.length, 0);
  });
});

test('mattermost.send() throws RangeError for empty text or text over maxLength (the caller chunks)', async () => {
  const adapter = createMattermostAdapter({ serverUrl: 'https://chat.example.test', token: TOKEN, fetch: () => Promise.reject(new Error('no request expected')) });
  await assert.rejects(adapter.send(CHANNEL, ''), { name: 'RangeError', message: 'Cannot send text: it is empty' });
  await assert.rejects(adapter.send(CHANNEL, 'x'.repeat(16384)), RangeError);
});

test('createMattermostAdapter() rejects a malformed token, serverUrl, maxLength or fetch', () => {
  assert.throws(() => createMattermostAdapter({ serverUrl: 'https://chat.example.test', token: '' }), { name: 'TypeError', message: /^Invalid option token: / });
  assert.throws(() => createMattermostAdapter({ serverUrl: 'https://chat.example.test', token: 'a\nb' }), /Invalid option token/);
  assert.throws(() => createMattermostAdapter({ serverUrl: 'chat.example.test', token: TOKEN }), {
    name: 'TypeError',
    message: 'Invalid option serverUrl: must be an http(s) URL, got "chat.example.test"',
  });
  assert.throws(() => createMattermostAdapter({ serverUrl: 'https://chat.example.test', token: TOKEN, maxLength: 1 }), {
    name: 'RangeError',
    message: 'Invalid option maxLength: must be an integer of at least 2, got 1',
  });
  assert.throws(() => createMattermostAdapter({ serverUrl: 'https://chat.example.test', token: TOKEN, fetch: 1 as unknown as typeof fetch }), /Invalid option fetch/);
});
