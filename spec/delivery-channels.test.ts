import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildConfig } from '../lib/config/load.ts';
import { buildChannels, type ChannelsConfig, channelsSchema } from '../lib/delivery/channels.ts';
import { check, formatIssue, type Issue } from '../lib/schema.ts';

// A working section for every platform, each pointed at its own local base URL.
const FULL = {
  telegram: { botToken: '123456:tg-token', apiBase: 'http://127.0.0.1:9/tg', defaultTo: '12345' },
  discord: { botToken: 'discord-token', apiBase: 'http://127.0.0.1:9/discord', defaultTo: '123456789012345678' },
  slack: { botToken: 'xoxb-slack-token', apiBase: 'http://127.0.0.1:9/slack', defaultTo: 'C0123456789' },
  mattermost: {
    serverUrl: 'http://127.0.0.1:9/mm',
    token: 'mm-token',
    maxLength: 4000,
    defaultTo: 'abcdefghijklmnopqrstuvwxyz',
  },
  signal: { url: 'http://127.0.0.1:9/signal', account: '+15550001111', defaultTo: '+15552223333' },
  whatsapp: {
    phoneNumberId: '1234567890',
    accessToken: 'wa-token',
    apiBase: 'http://127.0.0.1:9/wa',
    defaultTo: '+15554445555',
  },
  imessage: {
    serverUrl: 'http://127.0.0.1:9/bb',
    password: 'bb-password',
    method: 'private-api',
    defaultTo: 'friend@example.com',
  },
  msteams: {
    appId: 'app-id',
    appPassword: 'app-password',
    tenantId: 'contoso.onmicrosoft.com',
    serviceUrl: 'http://127.0.0.1:9/teams',
    tokenUrl: 'http://127.0.0.1:9/token',
    defaultTo: 'a:conversation-id',
  },
} as const;

function problems(value: unknown): string[] {
  const checked = check(channelsSchema, value, 'channels');
  return checked.ok ? [] : checked.issues.map(formatIssue);
}

function parsed(value: unknown): ChannelsConfig {
  const checked = check(channelsSchema, value);
  if (!checked.ok) throw new Error(`Invalid spec channels: ${checked.issues.map(formatIssue).join('; ')}`);
  return checked.value!;
}

test('channelsSchema accepts a full section for every platform', () => {
  assert.deepEqual(problems(FULL), []);
  assert.deepEqual(parsed(FULL), FULL);
  assert.deepEqual(problems({}), []);
  // BlueBubbles is optional: an empty imessage section means the imsg CLI.
  assert.deepEqual(problems({ imessage: {} }), []);
});

test('channelsSchema names each required key of each platform', () => {
  const required = {
    telegram: ['botToken'],
    discord: ['botToken'],
    slack: ['botToken'],
    mattermost: ['serverUrl', 'token'],
    signal: ['url', 'account'],
    whatsapp: ['phoneNumberId', 'accessToken'],
    msteams: ['appId', 'appPassword', 'serviceUrl'],
  };
  for (const [channel, keys] of Object.entries(required)) {
    assert.deepEqual(
      problems({ [channel]: {} }),
      keys.map((key) => `channels.${channel}.${key}: is required`),
      channel,
    );
  }
});

test('channelsSchema refuses unknown keys and unknown platforms, suggesting the name meant', () => {
  assert.deepEqual(problems({ telegram: { botToken: 't', chatId: '1' } }), ['channels.telegram.chatId: unknown key']);
  assert.deepEqual(problems({ telegram: { botToken: 't', defaultT: '1' } }), [
    'channels.telegram.defaultT: unknown key (did you mean "defaultTo"?)',
  ]);
  assert.deepEqual(problems({ telegrm: { botToken: 't' } }), [
    'channels.telegrm: unknown key (did you mean "telegram"?)',
  ]);
  // `last` is a route, not a platform one can configure.
  assert.equal(problems({ last: {} }).length, 1);
});

test('channelsSchema checks URLs, numbers, methods and empty strings', () => {
  assert.deepEqual(problems({ telegram: { botToken: 't', apiBase: 'ftp://example.com' } }), [
    'channels.telegram.apiBase: must be an http:// or https:// URL',
  ]);
  assert.equal(problems({ telegram: { botToken: '   ' } }).length, 1);
  assert.match(
    problems({ mattermost: { serverUrl: 'https://chat.example.com', token: 't', maxLength: 1 } })[0]!,
    /^channels\.mattermost\.maxLength: /,
  );
  assert.match(problems({ imessage: { method: 'sms' } })[0]!, /^channels\.imessage\.method: /);
  assert.match(
    problems({ signal: { url: 'localhost:8080', account: '+15550001111' } })[0]!,
    /^channels\.signal\.url: /,
  );
  assert.match(problems({ telegram: { botToken: 't', defaultTo: '' } })[0]!, /^channels\.telegram\.defaultTo: /);
});

test('buildChannels() builds one adapter per configured platform, with its limit and default recipient', async () => {
  const issues: Issue[] = [];
  const built = await buildChannels(parsed(FULL), issues);
  assert.deepEqual(issues, []);
  assert.deepEqual([...built.keys()], [
    'telegram',
    'discord',
    'slack',
    'mattermost',
    'signal',
    'whatsapp',
    'imessage',
    'msteams',
  ]);
  for (const [name, configured] of built) {
    assert.equal(configured.adapter.channel, name);
    assert.equal(configured.defaultTo, FULL[name as keyof typeof FULL].defaultTo);
    assert.equal(configured.adapter.checkRecipient(configured.defaultTo!), null, name);
  }
  assert.equal(built.get('telegram')!.adapter.maxLength, 4096);
  assert.equal(built.get('discord')!.adapter.maxLength, 2000);
  assert.equal(built.get('mattermost')!.adapter.maxLength, 4000);
});

test('buildChannels() leaves defaultTo out when a section has none', async () => {
  const built = await buildChannels(parsed({ telegram: { botToken: '123456:tg-token' } }), []);
  assert.deepEqual(Object.keys(built.get('telegram')!), ['adapter']);
});

test('buildChannels() hands each adapter its configured base URL and the injected fetch', async () => {
  const urls: string[] = [];
  const fetchStub = (async (input: string | URL | Request) => {
    urls.push(String(input instanceof Request ? input.url : input));
    return new Response(JSON.stringify({ error: 'fake' }), {
      status: 400,
      headers: { 'content-type': 'application/json' },
    });
  }) as typeof fetch;
  const built = await buildChannels(parsed(FULL), [], fetchStub);
  for (const [name, configured] of built) {
    const before = urls.length;
    const sent = await configured.adapter.send(configured.defaultTo!, 'hello');
    assert.equal(sent.ok, false, name);
    assert.ok(urls.length > before, `${name} made no request`);
  }
  const origin = 'http://127.0.0.1:9';
  assert.ok(urls.some((u) => u === `${origin}/tg/bot123456:tg-token/sendMessage`));
  assert.ok(urls.some((u) => u === `${origin}/discord/channels/123456789012345678/messages`));
  assert.ok(urls.some((u) => u === `${origin}/slack/chat.postMessage`));
  assert.ok(urls.some((u) => u === `${origin}/mm/api/v4/posts`));
  assert.ok(urls.some((u) => u === `${origin}/signal/api/v1/rpc`));
  assert.ok(urls.some((u) => u === `${origin}/wa/1234567890/messages`));
  assert.ok(urls.some((u) => u.startsWith(`${origin}/bb/api/v1/message/text`)));
  assert.ok(urls.some((u) => u === `${origin}/token`));
});

test('buildChannels() picks the imsg CLI for imessage without serverUrl, with the configured command', async () => {
  const issues: Issue[] = [];
  const built = await buildChannels(parsed({ imessage: { command: '/nonexistent/imsg-for-spec' } }), issues);
  assert.deepEqual(issues, []);
  const sent = await built.get('imessage')!.adapter.send('+15552223333', 'hello');
  assert.equal(sent.ok, false);
  assert.match(!sent.ok ? sent.message : '', /^Cannot run \/nonexistent\/imsg-for-spec: /);
});

test('buildChannels() reports imessage with serverUrl but no password at channels.imessage', async () => {
  const issues: Issue[] = [];
  const built = await buildChannels(parsed({ imessage: { serverUrl: 'http://127.0.0.1:1234' } }), issues);
  assert.deepEqual(issues, [{
    path: 'channels.imessage',
    message: 'Invalid option password: required with serverUrl (BlueBubbles)',
  }]);
  assert.equal(built.has('imessage'), false);
});

test('buildChannels() reports a defaultTo the platform cannot reach at channels.<name>.defaultTo', async () => {
  const issues: Issue[] = [];
  await buildChannels(
    parsed({
      telegram: { botToken: '123456:tg-token', defaultTo: 'my friend' },
      discord: { botToken: 'discord-token', defaultTo: 'general' },
      whatsapp: { phoneNumberId: '1234567890', accessToken: 'wa-token', defaultTo: '555-1234' },
    }),
    issues,
  );
  assert.deepEqual(
    issues.map((i) => i.path),
    ['channels.telegram.defaultTo', 'channels.discord.defaultTo', 'channels.whatsapp.defaultTo'],
  );
  assert.match(issues[0]!.message, /^Invalid Telegram recipient: /);
});

test('buildChannels() reports an option an adapter refuses, and leaves that channel out', async () => {
  const issues: Issue[] = [];
  const built = await buildChannels(
    parsed({
      telegram: { botToken: 'has spaces in it' },
      signal: { url: 'http://127.0.0.1:9', account: '5550001111' },
      slack: { botToken: 'xoxb-fine' },
    }),
    issues,
  );
  assert.deepEqual(
    issues.map((i) => i.path),
    ['channels.telegram', 'channels.signal'],
  );
  assert.match(issues[0]!.message, /^Invalid option botToken: /);
  assert.match(issues[1]!.message, /^Invalid option account: /);
  assert.deepEqual([...built.keys()], ['slack']);
});

test('buildConfig() reports channel problems with their full key paths', async () => {
  const result = await buildConfig(
    {
      channels: {
        telegram: { botToken: '123456:tg-token', defaultTo: 'nobody', chatId: 1 },
        imessage: { serverUrl: 'http://127.0.0.1:1234' },
      },
    },
    { file: null, env: {}, dir: '/tmp' },
  );
  assert.equal(result.ok, false);
  assert.deepEqual(!result.ok && result.problems, ['channels.telegram.chatId: unknown key']);
  const second = await buildConfig(
    {
      channels: {
        telegram: { botToken: '123456:tg-token', defaultTo: 'nobody' },
        imessage: { serverUrl: 'http://127.0.0.1:1234' },
      },
    },
    { file: null, env: {}, dir: '/tmp' },
  );
  assert.equal(second.ok, false);
  const listed = !second.ok ? second.problems : [];
  assert.equal(listed.length, 2);
  assert.match(listed[0]!, /^channels\.telegram\.defaultTo: Invalid Telegram recipient: /);
  assert.equal(listed[1], 'channels.imessage: Invalid option password: required with serverUrl (BlueBubbles)');
});

test('buildConfig() keeps the channels section as plain data (adapters are built by the composition root)', async () => {
  const result = await buildConfig({
    channels: { telegram: { botToken: '123456:tg-token', defaultTo: '@news_channel' } },
  }, { file: null, env: {}, dir: '/tmp' });
  assert.equal(result.ok, true);
  assert.deepEqual(result.ok && result.config.channels, {
    telegram: { botToken: '123456:tg-token', defaultTo: '@news_channel' },
  });
});
