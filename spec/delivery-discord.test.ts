import { test } from 'node:test';
import assert from 'node:assert/strict';
import { type Answer, answering, json, picked, type QueuedFake, type Seen, withQueue } from './_fake-server.ts';
import { createDiscordAdapter } from '../lib/delivery/discord.ts';
import { addHttpAdapterTests } from './_adapter-contract.ts';

const TOKEN = 'MTk4NjIyNDgzNDcxOTI1MjQ4.Cl2FMQ.ZnCjm1XVW7vRze4b7Cq4se7kKWs-fake';
const CHANNEL = '80351110224678912';
// Above 2^53: a JSON number would lose its last digits, so ids must stay strings.
const BIG_CHANNEL = '1234567890123456789';
const NO_ACCESS = '222222222222222222';

function error(status: number, code: number, message: string, extra: Record<string, unknown> = {}): Answer {
  return { status, body: { message, code, ...extra } };
}

function rateLimited(retryAfter: number | undefined, headers: Record<string, string>): Answer {
  return {
    status: 429,
    headers: {
      'x-ratelimit-limit': '5',
      'x-ratelimit-remaining': '0',
      'x-ratelimit-bucket': 'abcd1234',
      'x-ratelimit-scope': 'user',
      ...headers,
    },
    body: {
      message: 'You are being rate limited.',
      ...(retryAfter === undefined ? {} : { retry_after: retryAfter }),
      global: false,
    },
  };
}

// Behaves as Create Message does (discord-api-docs, apis.md §2).
function discordApi(seen: Seen, messageId: () => string): Answer {
  const match = /^\/api\/v10\/channels\/([0-9]+)\/messages$/.exec(seen.path);
  if (match === null || seen.method !== 'POST') return error(404, 0, '404: Not Found');
  if (seen.headers['authorization'] !== `Bot ${TOKEN}`) return error(401, 0, '401: Unauthorized');
  if (!/^DiscordBot \(.+, .+\)$/.test(String(seen.headers['user-agent']))) {
    return error(403, 40333, 'internal network error');
  }
  if (seen.headers['content-type'] !== 'application/json') return error(400, 50035, 'Invalid Form Body');
  const channel = match[1]!;
  if (channel === NO_ACCESS) return error(403, 50013, 'Missing Permissions');
  if (channel !== CHANNEL && channel !== BIG_CHANNEL) return error(404, 10003, 'Unknown Channel');
  const content = (seen.body as { content?: unknown }).content;
  if (typeof content !== 'string' || content.trim() === '') return error(400, 50006, 'Cannot send an empty message');
  if ([...content].length > 2000) {
    return error(400, 50035, 'Invalid Form Body', {
      errors: { content: { _errors: [{ code: 'BASE_TYPE_MAX_LENGTH', message: 'Must be 2000 or fewer in length.' }] } },
    });
  }
  return {
    status: 200,
    headers: { 'x-ratelimit-limit': '5', 'x-ratelimit-remaining': '4', 'x-ratelimit-reset-after': '1.000' },
    body: {
      id: messageId(),
      type: 0,
      channel_id: channel,
      content,
      timestamp: '2026-11-22T10:00:00.000000+00:00',
      author: { id: '11', bot: true },
    },
  };
}

function withFake(run: (fake: QueuedFake) => Promise<void>): Promise<void> {
  let nextId = 1175000000000000000n;
  return withQueue((seen) => discordApi(seen, () => String(++nextId)), run);
}

addHttpAdapterTests('discord', {
  name: 'Discord',
  channel: 'discord',
  maxLength: 2000,
  recipients: {
    good: [CHANNEL, BIG_CHANNEL, '18446744073709551615'],
    bad: [
      '../users/@me',
      '',
      'general',
      '#general',
      '<#80351110224678912>',
      '12345',
      '0',
      '-80351110224678912',
      ' 80351110224678912',
      '8035111022467891a',
      '012345678901234567',
      '18446744073709551616',
      '123456789012345678901',
    ],
    expected: 'a numeric channel id (a snowflake of 17 to 20 digits)',
  },
  make: (apiBase, fetch) =>
    createDiscordAdapter({ botToken: TOKEN, apiBase, ...(fetch === undefined ? {} : { fetch }) }),
  url: { option: 'apiBase' },
  path: '/api/v10',
  platform: () => answering((seen) => discordApi(seen, () => '1175000000000000001')),
  refuse: (res, status, text, headers) => json(res, status, { message: text, code: 0 }, headers),
  says: (status, text) => `Discord ${status}: ${text}`,
  unreachable: 'Discord request failed: ',
  secret: { value: TOKEN, mask: '<token>' },
});

test('discord.send() posts {content} with Bot auth to /channels/{id}/messages and returns the id string', async () => {
  await withFake(async (fake) => {
    const adapter = createDiscordAdapter({ botToken: TOKEN, apiBase: `${fake.url}/api/v10` });
    const text = 'Deploy done. @everyone see <#123> and **bold**';
    assert.deepEqual(await adapter.send(BIG_CHANNEL, text), {
      ok: true,
      value: { messageIds: ['1175000000000000001'] },
    });
    const headers = {
      authorization: `Bot ${TOKEN}`,
      'content-type': 'application/json',
      'user-agent': 'DiscordBot (hooks-ingress, 0.1.0)',
    };
    // Mentions are displayed but never ping.
    const body = { content: text, allowed_mentions: { parse: [] } };
    assert.deepEqual(fake.seen.map((seen) => picked(seen, Object.keys(headers))), [{
      method: 'POST',
      path: `/api/v10/channels/${BIG_CHANNEL}/messages`,
      headers,
      body,
    }]);
  });
});

test('discord.send() accepts an apiBase with a trailing slash and sends a full 2000-unit message', async () => {
  await withFake(async (fake) => {
    const adapter = createDiscordAdapter({ botToken: TOKEN, apiBase: `${fake.url}/api/v10/` });
    const text = 'ü'.repeat(2000);
    assert.deepEqual(await adapter.send(CHANNEL, text), { ok: true, value: { messageIds: ['1175000000000000001'] } });
    assert.equal(fake.seen[0]!.path, `/api/v10/channels/${CHANNEL}/messages`);
  });
});

test('discord.send() answers an empty id list when a 2xx body has no id', async () => {
  await withFake(async (fake) => {
    const adapter = createDiscordAdapter({ botToken: TOKEN, apiBase: `${fake.url}/api/v10` });
    fake.queue.push({ status: 204, body: '' });
    assert.deepEqual(await adapter.send(CHANNEL, 'hi'), { ok: true, value: { messageIds: [] } });
  });
});

test('discord.send() on 429 waits the body retry_after (a float in seconds), else Retry-After, else X-RateLimit-Reset-After', async () => {
  await withFake(async (fake) => {
    const adapter = createDiscordAdapter({ botToken: TOKEN, apiBase: `${fake.url}/api/v10` });
    fake.queue.push(
      rateLimited(64.57, { 'retry-after': '65', 'x-ratelimit-reset-after': '64.570' }),
      rateLimited(undefined, { 'retry-after': '3' }),
      rateLimited(undefined, { 'x-ratelimit-reset-after': '1.5' }),
      rateLimited(undefined, {}),
    );
    const limited = { ok: false, retryable: true, message: 'Discord 429: You are being rate limited.' };
    for (const wait of [64570, 3000, 1500, undefined]) {
      assert.deepEqual(
        await adapter.send(CHANNEL, 'hi'),
        wait === undefined ? limited : { ...limited, retryAfterMs: wait },
      );
    }
  });
});

test('discord.send() on an unknown channel or missing permission fails permanently with message and code', async () => {
  await withFake(async (fake) => {
    const adapter = createDiscordAdapter({ botToken: TOKEN, apiBase: `${fake.url}/api/v10` });
    assert.deepEqual(await adapter.send('99999999999999999', 'hi'), {
      ok: false,
      retryable: false,
      message: 'Discord 404: Unknown Channel (code 10003)',
    });
    assert.deepEqual(await adapter.send(NO_ACCESS, 'hi'), {
      ok: false,
      retryable: false,
      message: 'Discord 403: Missing Permissions (code 50013)',
    });
  });
});

test('discord.send() names the fields of an Invalid Form Body', async () => {
  await withFake(async (fake) => {
    const adapter = createDiscordAdapter({ botToken: TOKEN, apiBase: `${fake.url}/api/v10` });
    fake.queue.push(
      error(400, 50035, 'Invalid Form Body', {
        errors: {
          content: { _errors: [{ code: 'BASE_TYPE_MAX_LENGTH', message: 'Must be 2000 or fewer in length.' }] },
          allowed_mentions: {
            parse: { '0': { _errors: [{ code: 'ENUM', message: 'Value must be one of users, roles, everyone.' }] } },
          },
          _errors: [{ code: 'X', message: 'Top-level problem.' }, { code: 'Y', message: 'Beyond the third.' }],
        },
      }),
    );
    assert.deepEqual(await adapter.send(CHANNEL, 'hi'), {
      ok: false,
      retryable: false,
      message:
        'Discord 400: Invalid Form Body (code 50035) - content: Must be 2000 or fewer in length.; allowed_mentions.parse.0: Value must be one of users, roles, everyone.; body: Top-level problem.',
    });
  });
});

test('discord.send() with a wrong token fails permanently and never shows a token', async () => {
  await withFake(async (fake) => {
    const other = 'OTHER.token.value';
    const adapter = createDiscordAdapter({ botToken: other, apiBase: `${fake.url}/api/v10` });
    assert.deepEqual(await adapter.send(CHANNEL, 'hi'), {
      ok: false,
      retryable: false,
      message: 'Discord 401: 401: Unauthorized',
    });
    assert.equal(fake.seen[0]!.headers['authorization'], `Bot ${other}`);
  });
});

test('discord.send() on 5xx is retryable; a short text body is passed on, an HTML page is not', async () => {
  await withFake(async (fake) => {
    const adapter = createDiscordAdapter({ botToken: TOKEN, apiBase: `${fake.url}/api/v10` });
    fake.queue.push({ status: 502, headers: { 'content-type': 'text/html' }, body: '<html>Bad Gateway</html>' });
    fake.queue.push({
      status: 503,
      headers: { 'content-type': 'text/plain', 'retry-after': '2' },
      body: 'upstream connect error',
    });
    assert.deepEqual(await adapter.send(CHANNEL, 'a'), {
      ok: false,
      retryable: true,
      message: 'Discord 502: no error description',
    });
    assert.deepEqual(await adapter.send(CHANNEL, 'b'), {
      ok: false,
      retryable: true,
      message: 'Discord 503: upstream connect error',
      retryAfterMs: 2000,
    });
  });
});

test('createDiscordAdapter() rejects a token that is empty or would break its header, and an apiBase that is not absolute', () => {
  assert.throws(() => createDiscordAdapter({ botToken: '' }), {
    name: 'TypeError',
    message: /^Invalid option botToken: /,
  });
  assert.throws(() => createDiscordAdapter({ botToken: 'abc\r\nX-Injected: 1' }), /Invalid option botToken/);
  assert.throws(() => createDiscordAdapter({ botToken: TOKEN, apiBase: '/api/v10' }), {
    name: 'TypeError',
    message: 'Invalid option apiBase: must be an http(s) URL, got "/api/v10"',
  });
});
