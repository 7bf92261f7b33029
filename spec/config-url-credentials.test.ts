import assert from 'node:assert/strict';
import { test } from 'node:test';
import { main } from '../lib/cli/main.ts';
import { urlCredentials } from '../lib/config/url-credentials.ts';
import { captureIo } from './_io.ts';
import { configFile } from './_cli.ts';

const RULE =
  'must not hold a user or password in the URL (user:password@host); put the credential in the key meant for it';

test('urlCredentials() names every URL of the config with a user or password in it, by key path', () => {
  const raw = {
    hooks: {
      forward: { url: 'https://bob:hunter2@up.example/hooks' },
      mappings: [{ match: { path: 'a' } }, { messageTemplate: 'see https://example.test' }],
    },
    models: { providers: { local: { baseUrl: 'http://tok@127.0.0.1:11434/v1' } } },
    channels: { mattermost: { serverUrl: 'https://chat.example' }, signal: { url: ' http://u:@127.0.0.1:8080 ' } },
  };
  assert.deepEqual(urlCredentials(raw), [
    { path: 'hooks.forward.url', message: RULE },
    { path: 'models.providers.local.baseUrl', message: RULE },
    { path: 'channels.signal.url', message: RULE },
  ]);
});

test('urlCredentials() leaves alone what is not a URL with credentials: mail addresses, text with a URL in it, an @ in a path', () => {
  assert.deepEqual(
    urlCredentials({
      a: 'bob@example.test',
      b: 'mail https://u:p@h.test now',
      c: 'https://h.test/@user',
      d: ['mailto:bob@example.test'],
      e: 1,
    }),
    [],
  );
});

test('urlCredentials() walks a value nested 10,000 arrays deep without overflowing the stack', () => {
  let deep: unknown = 'https://u:p@h.test';
  for (let i = 0; i < 10_000; i++) deep = [deep];
  assert.equal(urlCredentials({ deep }).length, 1);
});

test('check refuses a URL with user:password, names the key, and never prints the password', async (t) => {
  const { dir, config: path } = await configFile(t, {
    hooks: {
      enabled: true,
      token: 'a-token-for-check',
      forward: { url: 'https://bob:${UP_PASSWORD}@up.example/hooks', token: 'upstream-token' },
    },
  }, 'hooks-url-credentials-');
  const { io, out } = captureIo({ HOME: dir, UP_PASSWORD: 'pw-from-the-environment' });
  assert.equal(await main(['check', '-c', path], io), 1);
  assert.match(out.stderr, new RegExp(`hooks\\.forward\\.url: ${RULE.replace(/[()]/g, '\\$&')}`));
  assert.ok(!`${out.stdout}${out.stderr}`.includes('pw-from-the-environment'));
  assert.ok(!`${out.stdout}${out.stderr}`.includes('bob'));
});
