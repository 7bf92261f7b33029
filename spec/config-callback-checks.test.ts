import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { test } from 'node:test';
import { buildConfig } from '../lib/config/load.ts';

const SECRET = `whsec_${randomBytes(32).toString('base64')}`;
const HOOKS = { enabled: true, token: 'callback-checks-token-0123456789' };
const FORWARD = { url: 'http://127.0.0.1:18789/hooks', token: 'upstream-token-0123456789' };
const AGENT_MAPPING = { match: { path: 'ci' }, action: 'agent', messageTemplate: 'x' };

async function problems(hooks: Record<string, unknown>): Promise<string[]> {
  const built = await buildConfig({ hooks: { ...HOOKS, ...hooks } }, { file: null, env: {}, dir: tmpdir() });
  return built.ok ? [] : built.problems;
}

test('onComplete loads with its defaults: one secret or a list, includeReply false, a day of retries', async () => {
  const built = await buildConfig(
    {
      hooks: {
        ...HOOKS,
        onComplete: { url: 'https://ci.example.com/done', secret: SECRET },
        callbackOrigins: ['https://ci.example.com', 'http://127.0.0.1:8080/'],
        mappings: [{
          ...AGENT_MAPPING,
          onComplete: { url: 'http://127.0.0.1:9/x', secret: [SECRET, SECRET], includeReply: true, maxAgeSeconds: 60 },
        }],
      },
    },
    { file: null, env: {}, dir: tmpdir() },
  );
  assert.ok(built.ok, built.ok ? '' : built.problems.join('\n'));
  assert.deepEqual(built.config.hooks.onComplete, {
    url: 'https://ci.example.com/done',
    secrets: [SECRET],
    includeReply: false,
    maxAgeSeconds: 86_400,
  });
  assert.deepEqual(built.config.hooks.callbackOrigins, ['https://ci.example.com', 'http://127.0.0.1:8080']);
  assert.deepEqual(built.config.hooks.mappings[0]!.onComplete, {
    url: 'http://127.0.0.1:9/x',
    secrets: [SECRET, SECRET],
    includeReply: true,
    maxAgeSeconds: 60,
  });
});

test('onComplete refuses a secret not in whsec_ form, a URL that is not http(s) or carries a user:password', async () => {
  assert.deepEqual(await problems({ onComplete: { url: 'https://a.example/x', secret: 'plain' } }), [
    'hooks.onComplete.secret: must be "whsec_" followed by the base64 of a 24 to 64 byte key (as the provider shows it)',
  ]);
  assert.deepEqual(await problems({ onComplete: { url: 'ftp://a.example/x', secret: SECRET } }), [
    'hooks.onComplete.url: must be an http:// or https:// URL',
  ]);
  const withUser = await problems({ onComplete: { url: 'https://user:pass@a.example/x', secret: SECRET } });
  assert.equal(withUser.length, 1);
  assert.match(withUser[0]!, /^hooks\.onComplete\.url: must not hold a user or password/);
});

test('callbackOrigins are exact origins, and need hooks.onComplete (whose secret signs those callbacks)', async () => {
  const path = await problems({
    onComplete: { url: 'https://a.example/x', secret: SECRET },
    callbackOrigins: ['https://ci.example.com/hooks', 'https://ci.example.com:443'],
  });
  assert.deepEqual(path, [
    'hooks.callbackOrigins[0]: must be an origin such as "https://ci.example.com" or "http://127.0.0.1:8080" (no path); as an origin it is "https://ci.example.com"',
    'hooks.callbackOrigins[1]: must be an origin such as "https://ci.example.com" or "http://127.0.0.1:8080" (no path); as an origin it is "https://ci.example.com"',
  ]);
  assert.deepEqual(await problems({ callbackOrigins: ['https://ci.example.com'] }), [
    "hooks.callbackOrigins: needs hooks.onComplete: its secret signs the callbacks sent to a request's own callbackUrl",
  ]);
});

test('onComplete is refused on a mapping that starts no run, and everywhere in forward mode', async () => {
  const onComplete = { url: 'https://a.example/x', secret: SECRET };
  assert.deepEqual(
    await problems({ mappings: [{ match: { path: 'w' }, action: 'wake', textTemplate: 'x', onComplete }] }),
    [
      'hooks.mappings[0].onComplete: is read only by action "agent" (a run ends; a wake starts none)',
    ],
  );
  const upstream = 'is refused in forward mode: runs happen on the upstream gateway, which does not report their end';
  assert.deepEqual(
    await problems({
      forward: FORWARD,
      onComplete,
      callbackOrigins: ['https://a.example'],
      mappings: [{ ...AGENT_MAPPING, onComplete }],
    }),
    [
      `hooks.onComplete: ${upstream}`,
      `hooks.callbackOrigins: ${upstream}`,
      `hooks.mappings[0].onComplete: ${upstream}`,
    ],
  );
});

test('check warns of a callback URL or origin that is http:// to another machine (the completion would cross the network unencrypted)', async () => {
  const built = await buildConfig(
    {
      hooks: {
        ...HOOKS,
        onComplete: { url: 'http://ci.example.com/done', secret: SECRET },
        callbackOrigins: ['http://127.0.0.1:8080', 'http://forms.example.com', 'https://forms.example.com'],
        mappings: [{ ...AGENT_MAPPING, onComplete: { url: 'http://[::1]:9/x', secret: SECRET } }],
      },
    },
    { file: null, env: {}, dir: tmpdir() },
  );
  assert.ok(built.ok);
  const rule =
    "not this machine: completions (with includeReply, the model's reply) cross the network unencrypted; use https://";
  assert.deepEqual(built.warnings.filter((w) => w.includes('unencrypted')), [
    `hooks.onComplete.url: is http:// to ci.example.com, ${rule}`,
    `hooks.callbackOrigins[1]: is http:// to forms.example.com, ${rule}`,
  ]);
});
