import { test } from 'node:test';
import assert from 'node:assert/strict';
import { type Answer, answering, json, picked, type QueuedFake, type Seen, withQueue } from './_fake-server.ts';
import { createMattermostAdapter } from '../lib/delivery/mattermost.ts';
import { addHttpAdapterTests } from './_adapter-contract.ts';

const TOKEN = 'h5w9kqz1fjbq7n3xcd8y4tsoge';
const CHANNEL = 'nhze199c4j87ped4wannrjdt9c';
const READ_ONLY = 'q3x8bj4ttbgzjpmsr8bt5nhq7e';

function appError(status: number, id: string, message: string): Answer {
  return {
    status,
    body: { id, message, detailed_error: '', request_id: 'r6bkq9dh1jfz8cc5e4w7xa3n1o', status_code: status },
  };
}

const LIMITED: Answer = {
  status: 429,
  headers: {
    'content-type': 'text/plain; charset=utf-8',
    'retry-after': '1',
    'x-ratelimit-limit': '10',
    'x-ratelimit-remaining': '0',
    'x-ratelimit-reset': '1',
  },
  body: 'limit exceeded\n',
};

// Behaves as POST /api/v4/posts does (Mattermost REST v4, apis.md §4), with the server's MaxPostSize in code points.
function mattermostApi(seen: Seen, maxPostSize: number, postId: () => string): Answer {
  if (seen.path !== '/api/v4/posts' || seen.method !== 'POST') {
    return appError(404, 'api.context.404.app_error', 'Sorry, we could not find the page.');
  }
  if (seen.headers['authorization'] !== `Bearer ${TOKEN}`) {
    return appError(401, 'api.context.session_expired.app_error', 'Invalid or expired session, please login again.');
  }
  if (seen.headers['content-type'] !== 'application/json') {
    return appError(400, 'api.context.invalid_body_param.app_error', 'Invalid or missing post in request body.');
  }
  const { channel_id: channel, message } = seen.body as { channel_id?: unknown; message?: unknown };
  if (typeof channel !== 'string' || channel === '' || typeof message !== 'string' || message === '') {
    return appError(400, 'api.context.invalid_body_param.app_error', 'Invalid or missing post in request body.');
  }
  if (channel === READ_ONLY) {
    return appError(403, 'api.context.permissions.app_error', 'You do not have the appropriate permissions.');
  }
  if (channel !== CHANNEL) {
    return appError(404, 'app.channel.get.existing.app_error', 'Unable to find the existing channel.');
  }
  if ([...message].length > maxPostSize) {
    return appError(400, 'model.post.is_valid.message_length.app_error', 'Invalid Message property for post.');
  }
  return {
    status: 201,
    body: {
      id: postId(),
      create_at: 1_790_000_000_000,
      update_at: 1_790_000_000_000,
      user_id: 'bot0000000000000000000000a',
      channel_id: channel,
      root_id: '',
      message,
      type: '',
      props: {},
      pending_post_id: '',
    },
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

addHttpAdapterTests('mattermost', {
  name: 'Mattermost',
  channel: 'mattermost',
  maxLength: 16383,
  recipients: {
    good: [CHANNEL, '0'.repeat(26)],
    bad: [
      'town-square',
      '',
      '~town-square',
      CHANNEL.slice(1),
      `${CHANNEL}x`,
      CHANNEL.toUpperCase(),
      ` ${CHANNEL.slice(1)}`,
      'nhze199c4j87ped4wannrjdt9_',
    ],
    expected: 'a channel id of 26 lowercase letters and digits',
  },
  make: (serverUrl, fetch) =>
    createMattermostAdapter({ serverUrl, token: TOKEN, ...(fetch === undefined ? {} : { fetch }) }),
  url: { option: 'serverUrl' },
  platform: () => answering((seen) => mattermostApi(seen, 16383, () => 'post0000000000000000000001')),
  refuse: (res, status, text, headers) => json(res, status, appError(status, 'some.app_error', text).body, headers),
  says: (status, text) => `Mattermost ${status}: ${text} (some.app_error)`,
  unreachable: 'Mattermost request failed: ',
  secret: { value: TOKEN, mask: '<token>' },
});

test('mattermost.send() posts JSON {channel_id, message} with Bearer auth to /api/v4/posts and returns the post id', async () => {
  await withFake(async (fake) => {
    const adapter = createMattermostAdapter({ serverUrl: fake.url, token: TOKEN });
    const text = '### Report\n- one\n- two & <three>';
    assert.deepEqual(await adapter.send(CHANNEL, text), {
      ok: true,
      value: { messageIds: ['post0000000000000000000001'] },
    });
    assert.deepEqual(fake.seen.map((seen) => picked(seen, ['authorization', 'content-type'])), [
      {
        method: 'POST',
        path: '/api/v4/posts',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: { channel_id: CHANNEL, message: text },
      },
    ]);
  });
});

test('mattermost.send() keeps a serverUrl path and drops its trailing slash', async () => {
  await withFake(async (fake) => {
    const adapter = createMattermostAdapter({ serverUrl: `${fake.url}/`, token: TOKEN });
    assert.equal((await adapter.send(CHANNEL, 'hi')).ok, true);
    const nested = createMattermostAdapter({ serverUrl: `${fake.url}/mm`, token: TOKEN });
    assert.deepEqual(await nested.send(CHANNEL, 'hi'), {
      ok: false,
      retryable: false,
      message: 'Mattermost 404: Sorry, we could not find the page. (api.context.404.app_error)',
    });
    assert.deepEqual(fake.seen.map((s) => s.path), ['/api/v4/posts', '/mm/api/v4/posts']);
  });
});

test('mattermost.send() sends a message at a 4000 maxLength to an older server', async () => {
  await withFake(async (fake) => {
    const adapter = createMattermostAdapter({ serverUrl: fake.url, token: TOKEN, maxLength: 4000 });
    assert.equal(adapter.maxLength, 4000);
    assert.equal((await adapter.send(CHANNEL, 'ö'.repeat(4000))).ok, true);
    await assert.rejects(adapter.send(CHANNEL, 'ö'.repeat(4001)), {
      name: 'RangeError',
      message: 'Cannot send text: 4001 characters exceed the Mattermost limit of 4000',
    });
  }, 4000);
});

test('mattermost.send() on an AppError fails permanently with its message and id', async () => {
  await withFake(async (fake) => {
    const adapter = createMattermostAdapter({ serverUrl: fake.url, token: TOKEN });
    assert.deepEqual(
      await adapter.send(READ_ONLY, 'hi'),
      permanent('Mattermost 403: You do not have the appropriate permissions. (api.context.permissions.app_error)'),
    );
    assert.deepEqual(
      await adapter.send('zzzzzzzzzzzzzzzzzzzzzzzzzz', 'hi'),
      permanent('Mattermost 404: Unable to find the existing channel. (app.channel.get.existing.app_error)'),
    );
  });
});

test('mattermost.send() reports a post over the server limit as the server words it', async () => {
  await withFake(async (fake) => {
    const adapter = createMattermostAdapter({ serverUrl: fake.url, token: TOKEN });
    assert.deepEqual(await adapter.send(CHANNEL, 'y'.repeat(16383)), {
      ok: true,
      value: { messageIds: ['post0000000000000000000001'] },
    });
  }, 16383);
  await withFake(async (fake) => {
    // A server configured smaller than the adapter was told.
    const adapter = createMattermostAdapter({ serverUrl: fake.url, token: TOKEN });
    assert.deepEqual(
      await adapter.send(CHANNEL, 'y'.repeat(101)),
      permanent('Mattermost 400: Invalid Message property for post. (model.post.is_valid.message_length.app_error)'),
    );
  }, 100);
});

test('mattermost.send() on 429 reads the plain-text body and waits Retry-After seconds', async () => {
  await withFake(async (fake) => {
    const adapter = createMattermostAdapter({ serverUrl: fake.url, token: TOKEN });
    fake.queue.push(LIMITED);
    assert.deepEqual(await adapter.send(CHANNEL, 'hi'), {
      ok: false,
      retryable: true,
      message: 'Mattermost 429: limit exceeded',
      retryAfterMs: 1000,
    });
  });
});

test('mattermost.send() on 5xx is retryable, with or without an AppError body', async () => {
  await withFake(async (fake) => {
    const adapter = createMattermostAdapter({ serverUrl: fake.url, token: TOKEN });
    fake.queue.push(appError(500, '', 'We encountered an error.'));
    fake.queue.push({
      status: 502,
      headers: { 'content-type': 'text/html' },
      body: '<html><h1>502 Bad Gateway</h1></html>',
    });
    assert.deepEqual(await adapter.send(CHANNEL, 'a'), {
      ok: false,
      retryable: true,
      message: 'Mattermost 500: We encountered an error.',
    });
    assert.deepEqual(await adapter.send(CHANNEL, 'b'), {
      ok: false,
      retryable: true,
      message: 'Mattermost 502: no error description',
    });
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
    assert.deepEqual(
      await adapter.send(CHANNEL, 'hi'),
      permanent(
        'Mattermost 401: Invalid or expired session, please login again. (api.context.session_expired.app_error)',
      ),
    );
    assert.equal(fake.seen[0]!.headers['authorization'], `Bearer ${other}`);
  });
});

test('createMattermostAdapter() rejects a token that would break its header, a serverUrl without its scheme and a maxLength below 2', () => {
  assert.throws(() => createMattermostAdapter({ serverUrl: 'https://chat.example.test', token: '' }), {
    name: 'TypeError',
    message: /^Invalid option token: /,
  });
  assert.throws(
    () => createMattermostAdapter({ serverUrl: 'https://chat.example.test', token: 'a\nb' }),
    /Invalid option token/,
  );
  assert.throws(() => createMattermostAdapter({ serverUrl: 'chat.example.test', token: TOKEN }), {
    name: 'TypeError',
    message: 'Invalid option serverUrl: must be an http(s) URL, got "chat.example.test"',
  });
  assert.throws(() => createMattermostAdapter({ serverUrl: 'https://chat.example.test', token: TOKEN, maxLength: 1 }), {
    name: 'RangeError',
    message: 'Invalid option maxLength: must be an integer of at least 2, got 1',
  });
});
