import { test } from 'node:test';
import assert from 'node:assert/strict';
import { type Answer, answering, json, picked, type QueuedFake, type Seen, withQueue } from './_fake-server.ts';
import { createSlackAdapter } from '../lib/delivery/slack.ts';
import { addHttpAdapterTests } from './_adapter-contract.ts';

const TOKEN = 'xoxb-1234567890-0987654321-FAKEfakeFAKEfake';

function failure(error: string, status = 200, headers: Record<string, string> = {}): Answer {
  return { status, headers, body: { ok: false, error } };
}

// Conversations the fake workspace knows: what a request names → the resolved channel, or the error it gets.
const CONVERSATIONS = new Map<string, string | { error: string }>([
  ['C1234567890', 'C1234567890'],
  ['G024BE91L', 'G024BE91L'],
  // A user id posts to the app's direct message with that user.
  ['U0123456789', 'D0987654321'],
  ['C0ARCHIVED1', { error: 'is_archived' }],
  ['C0NOTMEMBER', { error: 'not_in_channel' }],
]);

// Behaves as chat.postMessage does (Slack Web API, apis.md §3): failures are HTTP 200 with ok:false.
function slackApi(seen: Seen, ts: () => string): Answer {
  if (seen.path !== '/api/chat.postMessage' || seen.method !== 'POST') return failure('unknown_method');
  const auth = seen.headers['authorization'];
  if (auth === undefined) return failure('not_authed');
  if (auth !== `Bearer ${TOKEN}`) return failure('invalid_auth');
  const type = String(seen.headers['content-type']);
  if (!type.startsWith('application/json')) return failure('invalid_post_type');
  const warning = /charset=utf-8/i.test(type)
    ? {}
    : { warning: 'missing_charset', response_metadata: { warnings: ['missing_charset'] } };
  const { channel, text } = seen.body as { channel?: unknown; text?: unknown };
  if (typeof text !== 'string' || text.trim() === '') return failure('no_text');
  const resolved = CONVERSATIONS.get(String(channel));
  if (resolved === undefined) return failure('channel_not_found');
  if (typeof resolved !== 'string') return failure(resolved.error);
  const stamp = ts();
  return {
    status: 200,
    body: {
      ok: true,
      channel: resolved,
      ts: stamp,
      message: { type: 'message', text, user: 'U0BOT00001', bot_id: 'B0BOT00001', ts: stamp },
      ...warning,
    },
  };
}

function withFake(run: (fake: QueuedFake) => Promise<void>): Promise<void> {
  let micros = 246;
  return withQueue((seen) => slackApi(seen, () => `1503435956.${String(++micros).padStart(6, '0')}`), run);
}

addHttpAdapterTests('slack', {
  name: 'Slack',
  channel: 'slack',
  maxLength: 4000,
  recipients: {
    good: ['C1234567890', 'C024BE91L', 'G024BE91L', 'D024BE91L', 'U0123456789', 'W0123456789', 'C0123456789ABCDEF'],
    bad: [
      '#general',
      '',
      'general',
      '@someone',
      '<#C1234567890>',
      'c1234567890',
      'C123',
      'X1234567890',
      'C12345 67890',
      ' C1234567890',
      'T0123456789',
    ],
    expected: 'a channel id (C…, G…, D…) or a user id (U…, W…)',
  },
  make: (apiBase, fetch) => createSlackAdapter({ botToken: TOKEN, apiBase, ...(fetch === undefined ? {} : { fetch }) }),
  url: { option: 'apiBase' },
  path: '/api',
  platform: () => answering((seen) => slackApi(seen, () => '1503435956.000247')),
  refuse: (res, status, text, headers) => json(res, status, failure(text).body, headers),
  says: (status, text) => `Slack ${status}: ${text}`,
  unreachable: 'Slack request failed: ',
  secret: { value: TOKEN, mask: '<token>' },
});

test('slack.send() posts JSON {channel, text} with Bearer auth to /chat.postMessage and returns the ts', async () => {
  await withFake(async (fake) => {
    const adapter = createSlackAdapter({ botToken: TOKEN, apiBase: `${fake.url}/api` });
    assert.deepEqual(await adapter.send('C1234567890', 'Build *green*'), {
      ok: true,
      value: { messageIds: ['1503435956.000247'] },
    });
    const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json; charset=utf-8' };
    assert.deepEqual(fake.seen.map((seen) => picked(seen, Object.keys(headers))), [
      {
        method: 'POST',
        path: '/api/chat.postMessage',
        headers,
        body: { channel: 'C1234567890', text: 'Build *green*' },
      },
    ]);
  });
});

test('slack.send() escapes &, < and > so text shows as written and cannot ping the channel', async () => {
  await withFake(async (fake) => {
    const adapter = createSlackAdapter({ botToken: TOKEN, apiBase: `${fake.url}/api/` });
    assert.equal((await adapter.send('G024BE91L', 'a && b <!channel> <https://evil.test|docs> x>y')).ok, true);
    assert.deepEqual(fake.seen[0]!.body, {
      channel: 'G024BE91L',
      text: 'a &amp;&amp; b &lt;!channel&gt; &lt;https://evil.test|docs&gt; x&gt;y',
    });
  });
});

test('slack.send() to a user id posts to the app DM and returns its ts', async () => {
  await withFake(async (fake) => {
    const adapter = createSlackAdapter({ botToken: TOKEN, apiBase: `${fake.url}/api` });
    assert.deepEqual(await adapter.send('U0123456789', 'hi'), {
      ok: true,
      value: { messageIds: ['1503435956.000247'] },
    });
    assert.deepEqual(fake.seen[0]!.body, { channel: 'U0123456789', text: 'hi' });
  });
});

test('slack.send() treats HTTP 200 with ok:false as a permanent failure with the error code', async () => {
  await withFake(async (fake) => {
    const adapter = createSlackAdapter({ botToken: TOKEN, apiBase: `${fake.url}/api` });
    assert.deepEqual(await adapter.send('C9999999999', 'hi'), {
      ok: false,
      retryable: false,
      message: 'Slack: channel_not_found',
    });
    assert.deepEqual(await adapter.send('C0NOTMEMBER', 'hi'), {
      ok: false,
      retryable: false,
      message: 'Slack: not_in_channel',
    });
    assert.deepEqual(await adapter.send('C0ARCHIVED1', 'hi'), {
      ok: false,
      retryable: false,
      message: 'Slack: is_archived',
    });
  });
});

test('slack.send() treats ok:false ratelimited at HTTP 200 as retryable', async () => {
  await withFake(async (fake) => {
    const adapter = createSlackAdapter({ botToken: TOKEN, apiBase: `${fake.url}/api` });
    fake.queue.push(failure('ratelimited'), failure('rate_limited', 200, { 'retry-after': '4' }));
    assert.deepEqual(await adapter.send('C1234567890', 'a'), {
      ok: false,
      retryable: true,
      message: 'Slack: ratelimited',
    });
    assert.deepEqual(await adapter.send('C1234567890', 'b'), {
      ok: false,
      retryable: true,
      message: 'Slack: rate_limited',
      retryAfterMs: 4000,
    });
  });
});

test('slack.send() on 5xx is retryable; an HTML page is not passed on', async () => {
  await withFake(async (fake) => {
    const adapter = createSlackAdapter({ botToken: TOKEN, apiBase: `${fake.url}/api` });
    fake.queue.push({
      status: 503,
      headers: { 'content-type': 'text/html' },
      body: '<html>Service Unavailable</html>',
    });
    assert.deepEqual(await adapter.send('C1234567890', 'hi'), {
      ok: false,
      retryable: true,
      message: 'Slack 503: no error description',
    });
  });
});

test('slack.send() does not take a 200 without ok:true for success, nor retry it', async () => {
  await withFake(async (fake) => {
    const adapter = createSlackAdapter({ botToken: TOKEN, apiBase: `${fake.url}/api` });
    fake.queue.push({ status: 200, headers: { 'content-type': 'text/plain' }, body: 'ok' }, {
      status: 200,
      body: { ok: true },
    });
    assert.deepEqual(await adapter.send('C1234567890', 'a'), { ok: false, retryable: false, message: 'Slack: ok' });
    assert.deepEqual(await adapter.send('C1234567890', 'b'), { ok: true, value: { messageIds: [] } });
  });
});

test('slack.send() with a wrong token fails permanently and never shows a token', async () => {
  await withFake(async (fake) => {
    const other = 'xoxb-other-token';
    const adapter = createSlackAdapter({ botToken: other, apiBase: `${fake.url}/api` });
    assert.deepEqual(await adapter.send('C1234567890', 'hi'), {
      ok: false,
      retryable: false,
      message: 'Slack: invalid_auth',
    });
    assert.equal(fake.seen[0]!.headers['authorization'], `Bearer ${other}`);
  });
});

test('createSlackAdapter() rejects a token with a space, and an apiBase without its scheme', () => {
  assert.throws(() => createSlackAdapter({ botToken: '' }), {
    name: 'TypeError',
    message: /^Invalid option botToken: /,
  });
  assert.throws(() => createSlackAdapter({ botToken: 'xoxb-1 2' }), /Invalid option botToken/);
  assert.throws(() => createSlackAdapter({ botToken: TOKEN, apiBase: 'slack.com/api' }), {
    name: 'TypeError',
    message: 'Invalid option apiBase: must be an http(s) URL, got "slack.com/api"',
  });
});
