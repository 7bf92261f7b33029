import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { test } from 'node:test';
import { callbackFor } from '../lib/edge/callback-target.ts';
import { HttpError } from '../lib/errors.ts';
import { specConfig } from './_app.ts';

const SECRET = `whsec_${randomBytes(32).toString('base64')}`;

test("callbackFor(): a mapping's onComplete, else for /agent the request's callbackUrl to a listed origin, else hooks.onComplete; never the secret", async () => {
  const config = await specConfig({
    hooks: {
      enabled: true,
      token: 'callback-target-token-0123456789',
      onComplete: { url: 'https://ci.example.com/done', secret: SECRET, includeReply: true, maxAgeSeconds: 99 },
      callbackOrigins: ['https://forms.example.com'],
      mappings: [
        {
          id: 'ci',
          match: { path: 'ci' },
          messageTemplate: 'x',
          onComplete: { url: 'http://127.0.0.1:1/x', secret: SECRET },
        },
        { id: 'plain', match: { path: 'plain' }, messageTemplate: 'x' },
      ],
    },
  }, tmpdir());
  assert.deepEqual(callbackFor(config, 'ci'), {
    url: 'http://127.0.0.1:1/x',
    mapping: 'ci',
    includeReply: false,
    maxAgeSeconds: 86_400,
  });
  assert.equal(callbackFor(config, 'plain'), undefined);
  assert.deepEqual(callbackFor(config, null), {
    url: 'https://ci.example.com/done',
    includeReply: true,
    maxAgeSeconds: 99,
  });
  assert.deepEqual(callbackFor(config, null, 'https://forms.example.com/a?b=1'), {
    url: 'https://forms.example.com/a?b=1',
    requested: true,
    includeReply: true,
    maxAgeSeconds: 99,
  });
  const refused = (url: string) => {
    try {
      callbackFor(config, null, url);
    } catch (error) {
      assert.ok(error instanceof HttpError);
      return [error.status, error.code, error.message];
    }
    return null;
  };
  const origin = [400, 'ERR_CALLBACK_ORIGIN', 'callbackUrl: its origin is not one of hooks.callbackOrigins'];
  assert.deepEqual(refused('https://forms.example.com:8443/a'), origin);
  assert.deepEqual(refused('http://forms.example.com/a'), origin);
  assert.deepEqual(refused('https://forms.example.com.evil.example/a'), origin);
  assert.deepEqual(refused('https://forms.example.com./a'), origin, 'a trailing dot is another origin');
  assert.deepEqual(refused('https://[::1]/a'), origin);
  // What is sent to is the URL as parsed, so one the parser sees at the listed origin goes there.
  for (
    const [asked, sent] of [
      ['HTTPS://FORMS.EXAMPLE.COM:443/a', 'https://forms.example.com/a'],
      ['https://forms%2Eexample%2Ecom/a', 'https://forms.example.com/a'],
      ['https://forms.example.com\\@evil.example/', 'https://forms.example.com/@evil.example/'],
    ]
  ) assert.equal(callbackFor(config, null, asked!)?.url, sent);
  assert.deepEqual(
    refused('https://ci.example.com/done'),
    origin,
    'hooks.onComplete.url is not an allowed origin by itself',
  );
  assert.deepEqual(refused('not a url'), [
    400,
    'ERR_INVALID_PAYLOAD',
    'callbackUrl: must be an http:// or https:// URL',
  ]);
  assert.deepEqual(refused('file:///etc/passwd'), [
    400,
    'ERR_INVALID_PAYLOAD',
    'callbackUrl: must be an http:// or https:// URL',
  ]);
  assert.deepEqual(refused('https://forms.example.com@evil.example/'), [
    400,
    'ERR_INVALID_PAYLOAD',
    'callbackUrl: must not hold a user or password',
  ]);
  assert.deepEqual(refused('https://u:p@forms.example.com/a'), [
    400,
    'ERR_INVALID_PAYLOAD',
    'callbackUrl: must not hold a user or password',
  ]);
});
