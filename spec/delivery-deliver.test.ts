import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import type { Channel } from '../lib/model/actions.ts';
import type { Adapter } from '../lib/delivery/adapter.ts';
import type { ConfiguredChannel } from '../lib/delivery/channels.ts';
import { createDeliver } from '../lib/delivery/deliver.ts';
import { createTelegramAdapter } from '../lib/delivery/telegram.ts';
import type { Attempt } from '../lib/retry.ts';
import type { Route } from '../lib/model/records.ts';
import { fake, json } from './_fake-server.ts';

const TOKEN = '123456789:AAHdeliver-spec_token0123456789abcdef';

// An adapter that takes digit-only recipients and records what it was asked to send.
function digitsAdapter(channel: string, sent: { to: string; text: string }[] = []): Adapter {
  return {
    channel,
    maxLength: 100,
    checkRecipient: (
      to,
    ) => (/^[0-9]+$/.test(to) ? null : `Invalid ${channel} recipient: expected digits, got ${JSON.stringify(to)}`),
    send: async (to, text): Promise<Attempt<{ messageIds: string[] }>> => {
      sent.push({ to, text });
      return { ok: true, value: { messageIds: [`${channel}-${sent.length}`] } };
    },
  };
}

test('createDeliver() turns each unresolvable route into skipped or failed, and sends nothing', async () => {
  const sent: { to: string; text: string }[] = [];
  const map = new Map<Channel, ConfiguredChannel>([
    ['telegram', { adapter: digitsAdapter('telegram', sent) }],
    ['discord', { adapter: digitsAdapter('discord', sent) }],
  ]);
  const deliver = createDeliver({ channels: map, lastRoute: () => null });
  assert.deepEqual(await deliver({ channel: 'last', text: 'hi' }), {
    status: 'skipped',
    reason: 'no last route yet and more than one channel is configured',
  });
  assert.deepEqual(await deliver({ channel: 'telegram', text: 'hi' }), {
    status: 'skipped',
    reason: 'no recipient: the run names none and channels.telegram.defaultTo is not set',
  });
  assert.deepEqual(await deliver({ channel: 'slack', to: '1', text: 'hi' }), {
    status: 'failed',
    channel: 'slack',
    reason: 'channel slack is not configured (channels.slack)',
  });
  assert.deepEqual(await deliver({ channel: 'telegram', to: 'bob', text: 'hi' }), {
    status: 'failed',
    channel: 'telegram',
    reason: 'Invalid telegram recipient: expected digits, got "bob"',
  });
  assert.deepEqual(sent, []);
});

test('createDeliver() reads the last route at each delivery, not once', async () => {
  const sent: { to: string; text: string }[] = [];
  let last: Route | null = null;
  const map = new Map<Channel, ConfiguredChannel>([
    ['telegram', { adapter: digitsAdapter('telegram', sent) }],
    ['discord', { adapter: digitsAdapter('discord', sent) }],
  ]);
  const deliver = createDeliver({ channels: map, lastRoute: () => last });
  assert.equal((await deliver({ channel: 'last', text: 'first' })).status, 'skipped');
  last = { channel: 'telegram', to: '31' };
  assert.deepEqual(await deliver({ channel: 'last', text: 'second' }), {
    status: 'delivered',
    channel: 'telegram',
    to: '31',
    messageIds: ['telegram-1'],
  });
  assert.deepEqual(sent, [{ to: '31', text: 'second' }]);
});

// ---- against a fake Telegram Bot API -------------------------------------------------------

interface TelegramCall {
  path: string;
  body: { chat_id: unknown; text: string };
}

type Answer = { status: number; body: unknown } | null;

// A Bot API `sendMessage` on 127.0.0.1 for test `t`; `script` may answer a call itself (by its 1-based number).
async function telegram(
  t: TestContext,
  script: (n: number, call: TelegramCall) => Answer,
): Promise<{ url: string; calls: TelegramCall[] }> {
  const calls: TelegramCall[] = [];
  let nextId = 100;
  const server = await fake(t, (req, res) => {
    const call: TelegramCall = { path: req.url, body: JSON.parse(req.body) as TelegramCall['body'] };
    calls.push(call);
    const sent = () => ({
      message_id: ++nextId,
      date: 1_790_000_000,
      chat: { id: call.body.chat_id, type: 'private' },
      text: call.body.text,
    });
    const answer = script(calls.length, call) ?? { status: 200, body: { ok: true, result: sent() } };
    json(res, answer.status, answer.body);
  });
  return { url: server.url, calls };
}

function telegramAt(url: string): Map<Channel, ConfiguredChannel> {
  return new Map<Channel, ConfiguredChannel>([['telegram', {
    adapter: createTelegramAdapter({ botToken: TOKEN, apiBase: url }),
  }]]);
}

// A deliver with only the Telegram channel at `url`, no last route, and the given retry options.
function telegramDeliver(
  url: string,
  retry?: Parameters<typeof createDeliver>[0]['retry'],
): ReturnType<typeof createDeliver> {
  return createDeliver({ channels: telegramAt(url), lastRoute: () => null, ...(retry === undefined ? {} : { retry }) });
}

// Three paragraphs of 3000 characters each: no two fit one 4096-character message.
const PARAGRAPHS = ['a', 'b', 'c'].map((letter) => `${letter.repeat(2999)}.`);

test("createDeliver() splits a long reply at the adapter's maxLength and sends the parts in order, collecting the ids", async (t) => {
  const fake = await telegram(t, () => null);
  const deliver = telegramDeliver(fake.url);
  const outcome = await deliver({ channel: 'telegram', to: '12345', text: PARAGRAPHS.join('\n\n') });
  assert.deepEqual(outcome, {
    status: 'delivered',
    channel: 'telegram',
    to: '12345',
    messageIds: ['101', '102', '103'],
  });
  assert.deepEqual(
    fake.calls.map((c) => c.body),
    PARAGRAPHS.map((text) => ({ chat_id: 12345, text })),
  );
  assert.ok(fake.calls.every((c) => c.path === `/bot${TOKEN}/sendMessage`));
});

test('createDeliver() waits the retry_after a 429 names, then sends the part again', async (t) => {
  const waits: number[] = [];
  const tooMany = {
    status: 429,
    body: {
      ok: false,
      error_code: 429,
      description: 'Too Many Requests: retry after 7',
      parameters: { retry_after: 7 },
    },
  };
  const fake = await telegram(t, (n) => (n === 1 ? tooMany : null));
  const deliver = telegramDeliver(fake.url, { sleep: async (ms) => void waits.push(ms) });
  assert.deepEqual(await deliver({ channel: 'telegram', to: '12345', text: 'hello' }), {
    status: 'delivered',
    channel: 'telegram',
    to: '12345',
    messageIds: ['101'],
  });
  assert.deepEqual(waits, [7_000]);
  assert.equal(fake.calls.length, 2);
  assert.deepEqual(fake.calls[1]!.body, { chat_id: 12345, text: 'hello' });
});

test("createDeliver() fails with the platform's message once 5xx answers exhaust the attempts, noting the parts already delivered", async (t) => {
  const waits: number[] = [];
  const badGateway = { status: 502, body: { ok: false, error_code: 502, description: 'Bad Gateway' } };
  const fake = await telegram(t, (n) => (n === 1 ? null : badGateway));
  const deliver = telegramDeliver(fake.url, {
    maxAttempts: 3,
    baseDelayMs: 100,
    maxDelayMs: 1_000,
    sleep: async (ms) => void waits.push(ms),
    random: () => 1,
  });
  const outcome = await deliver({ channel: 'telegram', to: '12345', text: PARAGRAPHS.join('\n\n') });
  assert.deepEqual(outcome, {
    status: 'failed',
    channel: 'telegram',
    to: '12345',
    reason: 'Telegram 502: Bad Gateway (after 1 part(s) were delivered)',
  });
  // One call for the first part, three for the second; the third part is never tried.
  assert.equal(fake.calls.length, 4);
  assert.deepEqual(waits, [100, 200]);
  assert.ok(!JSON.stringify(outcome).includes(TOKEN));
});

test('createDeliver() fails at once on a permanent 4xx, without a partial note when nothing arrived', async (t) => {
  const waits: number[] = [];
  const blocked = {
    status: 403,
    body: { ok: false, error_code: 403, description: 'Forbidden: bot was blocked by the user' },
  };
  const fake = await telegram(t, () => blocked);
  const deliver = telegramDeliver(fake.url, { sleep: async (ms) => void waits.push(ms) });
  assert.deepEqual(await deliver({ channel: 'telegram', to: '12345', text: 'hello' }), {
    status: 'failed',
    channel: 'telegram',
    to: '12345',
    reason: 'Telegram 403: Forbidden: bot was blocked by the user',
  });
  assert.equal(fake.calls.length, 1);
  assert.deepEqual(waits, []);
});
