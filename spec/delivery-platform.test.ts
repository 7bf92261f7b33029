import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Adapter } from '../lib/delivery/adapter.ts';
import { createDiscordAdapter } from '../lib/delivery/discord.ts';
import { createBlueBubblesAdapter } from '../lib/delivery/imessage.ts';
import { createMattermostAdapter } from '../lib/delivery/mattermost.ts';
import { createTeamsAdapter } from '../lib/delivery/msteams.ts';
import { createSignalAdapter } from '../lib/delivery/signal.ts';
import { createSlackAdapter } from '../lib/delivery/slack.ts';
import { createTelegramAdapter } from '../lib/delivery/telegram.ts';
import { createWhatsAppAdapter } from '../lib/delivery/whatsapp.ts';
import { retryableStatus, tellFor } from '../lib/delivery/_platform.ts';

// A fetch that never answers on its own: only the caller's abort ends it, as a real fetch does.
function hangingFetch(calls: string[]): typeof fetch {
  return ((url: string | URL, init?: RequestInit) => {
    calls.push(String(url));
    return new Promise((_resolve, reject) => {
      init?.signal?.addEventListener('abort', () => reject(new DOMException('This operation was aborted', 'AbortError')), { once: true });
    });
  }) as typeof fetch;
}

// Every HTTP adapter, with a recipient each accepts.
function adapters(fetch: typeof globalThis.fetch): [Adapter, string, string][] {
  const base = 'http://127.0.0.1:9';
  return [
    [createTelegramAdapter({ botToken: '123:abc', apiBase: base, fetch }), '12345', 'Telegram'],
    [createDiscordAdapter({ botToken: 'd', apiBase: base, fetch }), '123456789012345678', 'Discord'],
    [createSlackAdapter({ botToken: 'xoxb-1', apiBase: base, fetch }), 'C12345678', 'Slack'],
    [createMattermostAdapter({ serverUrl: base, token: 't', fetch }), 'a'.repeat(26), 'Mattermost'],
    [createSignalAdapter({ url: base, account: '+15550001111', fetch }), '+15550002222', 'Signal'],
    [createWhatsAppAdapter({ phoneNumberId: '1', accessToken: 't', apiBase: base, fetch }), '+15550002222', 'WhatsApp'],
    [createBlueBubblesAdapter({ serverUrl: base, password: 'p', fetch }), '+15550002222', 'BlueBubbles'],
    [createTeamsAdapter({ appId: 'a', appPassword: 'p', serviceUrl: base, tokenUrl: `${base}/token`, fetch }), 'a:1', 'Teams'],
  ];
}

test('every adapter refuses empty text and text over its maxLength before it calls anything', async () => {
  const calls: string[] = [];
  for (const [adapter, to] of adapters(hangingFetch(calls))) {
    await assert.rejects(adapter.send(to, '  '), { name: 'RangeError', message: 'Cannot send text: it is empty' }, adapter.channel);
    await assert.rejects(adapter.send(to, 'x'.repeat(adapter.maxLength + 1)), { name: 'RangeError', message: /^Cannot send text: \d+ characters exceed the \w+ limit of \d+$/ }, adapter.channel);
  }
  assert.deepEqual(calls, []);
});

test('every adapter answers an abort as a failure that is not retried, naming the platform', async () => {
  for (const [adapter, to, platform] of adapters(hangingFetch([]))) {
    const controller = new AbortController();
    const pending = adapter.send(to, 'hi', controller.signal);
    controller.abort();
    assert.deepEqual(await pending, { ok: false, retryable: false, message: `${platform} request aborted` }, adapter.channel);
  }
});

test('every adapter fails on a redirect without following it, and on an answer past the cap without retrying, naming the platform', async () => {
  const inits: (RequestInit | undefined)[] = [];
  const redirecting = (async (_url: string | URL, init?: RequestInit) => (inits.push(init), new Response('moved', { status: 302, headers: { location: 'http://127.0.0.1:9/elsewhere' } }))) as typeof fetch;
  const huge = (async () => new Response('x', { status: 200, headers: { 'content-length': String(1024 ** 3) } })) as typeof fetch;
  for (const [adapter, to] of adapters(redirecting)) {
    const sent = await adapter.send(to, 'hi');
    assert.equal(sent.ok, false, adapter.channel);
    assert.equal(!sent.ok && sent.retryable, false, adapter.channel);
  }
  assert.ok(inits.length >= 8 && inits.every((init) => init?.redirect === 'manual'), 'every call asks fetch not to follow');
  for (const [adapter, to, platform] of adapters(huge)) {
    const sent = await adapter.send(to, 'hi');
    assert.equal(!sent.ok && sent.retryable, false, adapter.channel);
    // The specs' one-letter tokens are masked inside the words of some messages; Telegram's is not.
    if (platform === 'Telegram') assert.equal(!sent.ok && sent.message, 'Telegram answer refused: the answer (HTTP 200) is larger than 8388608 bytes; it was not read past them');
  }
});

test('tellFor() masks secrets before it puts the message on one line and clips it', () => {
  const tell = tellFor(['s3cret'], '<token>');
  assert.equal(tell('moved to https://u:p@h.test/x'), 'moved to https://[redacted]@h.test/x');
  assert.equal(tell('failed:\n  token s3cret\trejected'), 'failed: token <token> rejected');
  const long = tell(`${'x'.repeat(398)}s3cret`);
  assert.equal(long.length, 401);
  assert.doesNotMatch(long, /s3c/);
});

test('retryableStatus() is true for 429 and 5xx only', () => {
  assert.deepEqual([200, 400, 404, 409, 429, 500, 503].map(retryableStatus), [false, false, false, false, true, true, true]);
});
