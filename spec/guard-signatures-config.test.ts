import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildConfig } from '../lib/config/load.ts';
import type { ConfigResult } from '../lib/config/types.ts';
import { checkSignatures, signatureSchema } from '../lib/guard/signatures/config.ts';
import { check } from '../lib/schema.ts';
import { WHSEC, WHSEC_2 } from './_signers.ts';

const TOKEN = 'hook-token-0123456789';

function load(mappings: unknown[], env: Record<string, string> = {}): Promise<ConfigResult> {
  return buildConfig({ hooks: { enabled: true, token: TOKEN, mappings } }, {
    file: null,
    env,
    dir: '/etc/hooks-ingress',
  });
}

function problems(result: ConfigResult): string[] {
  assert.equal(result.ok, false, 'expected the config to be refused');
  return result.ok ? [] : result.problems;
}

const github = {
  match: { path: 'github' },
  action: 'wake',
  textTemplate: 'push',
  signature: { scheme: 'github', secret: 'gh-secret' },
};

test('signature: an OpenClaw-style standard-webhooks section loads as written', async () => {
  const result = await load([{
    match: { path: 'clerk' },
    action: 'wake',
    textTemplate: 'x',
    signature: { scheme: 'standard-webhooks', secret: WHSEC, toleranceSeconds: 300 },
  }]);
  assert.ok(result.ok, result.ok ? '' : result.problems.join('\n'));
  assert.deepEqual(result.config.hooks.mappings[0]!.signature, {
    scheme: 'standard-webhooks',
    secrets: [WHSEC],
    toleranceSeconds: 300,
  });
});

test('signature: the secret may be a list (rotation) and comes from ${ENV}; toleranceSeconds defaults to 300', async () => {
  const result = await load([{ ...github, signature: { scheme: 'github', secret: ['${GH_NEW}', 'old-secret'] } }], {
    GH_NEW: 'new-secret',
  });
  assert.ok(result.ok, result.ok ? '' : result.problems.join('\n'));
  assert.deepEqual(result.config.hooks.mappings[0]!.signature, {
    scheme: 'github',
    secrets: ['new-secret', 'old-secret'],
    toleranceSeconds: 300,
  });
});

test('signature: each problem is reported with its key path', async () => {
  const found = problems(
    await load([
      { ...github, signature: { scheme: 'github', secret: [] } },
      { ...github, match: { path: 'a' }, signature: { scheme: 'twilio', secret: 't' } },
      { ...github, match: { path: 'b' }, signature: { scheme: 'meta', secret: 's' } },
      { ...github, match: { path: 'c' }, signature: { scheme: 'hmac', secret: 's', algorithm: 'md5' } },
      { ...github, match: { path: 'd' }, signature: { scheme: 'github', secret: 's', url: 'https://x.example/h' } },
      { ...github, match: { path: 'e' }, signature: { scheme: 'standard-webhooks', secret: ['whsec_AAAA', 'plain'] } },
      { ...github, match: { path: 'f' }, signature: { scheme: 'sha-magic', secret: 's' } },
      { ...github, match: { path: 'g' }, signature: { scheme: 'github', secret: 's', toleranceSeconds: 0 } },
      { ...github, match: { path: 'h' }, signature: { scheme: 'token', secret: ['', 'x'] } },
    ]),
  );
  const expect = [
    'hooks.mappings[0].signature.secret: must list at least one secret',
    'hooks.mappings[1].signature.url: is required for scheme "twilio"',
    'hooks.mappings[2].signature.verifyToken: is required for scheme "meta"',
    'hooks.mappings[3].signature.algorithm: must be one of "sha256", "sha1", "sha512"',
    'hooks.mappings[4].signature.url: is only read by scheme "twilio"',
    'hooks.mappings[5].signature.secret[0]: must be "whsec_" followed by the base64 of a 24 to 64 byte key (as the provider shows it); this key is 3 bytes',
    'hooks.mappings[5].signature.secret[1]: must be "whsec_" followed by the base64 of a 24 to 64 byte key (as the provider shows it)',
    'hooks.mappings[6].signature.scheme: must be one of',
    'hooks.mappings[7].signature.toleranceSeconds: must be at least 1',
    'hooks.mappings[8].signature.secret[0]: must be a non-empty string',
  ];
  for (const line of expect) {
    assert.ok(found.some((p) => p.startsWith(line)), `missing "${line}" in:\n${found.join('\n')}`);
  }
});

test('signature: a hmac mapping needs its header; a twilio url must be http(s)', async () => {
  const found = problems(
    await load([
      { ...github, match: { path: 'a' }, signature: { scheme: 'hmac', secret: 's' } },
      { ...github, match: { path: 'b' }, signature: { scheme: 'twilio', secret: 's', url: 'ftp://x' } },
    ]),
  );
  assert.ok(found.includes('hooks.mappings[0].signature.header: is required for scheme "hmac"'), found.join('\n'));
  assert.ok(
    found.some((p) => p.startsWith('hooks.mappings[1].signature.url: must be the public http:// or https:// URL')),
    found.join('\n'),
  );
});

test('signature: a mapping with a signature needs match.path', async () => {
  const found = problems(await load([{ ...github, match: {} }]));
  assert.deepEqual(found, [
    'hooks.mappings[0].match.path: is required on a mapping with a signature (the signature guards that path)',
  ]);
});

test('signature: mappings of one path with different signatures are refused, naming both', async () => {
  const found = problems(
    await load([github, { ...github, signature: undefined }, {
      ...github,
      signature: { scheme: 'github', secret: 'other' },
    }]),
  );
  assert.deepEqual(found, [
    'hooks.mappings[1].signature: must be the same as hooks.mappings[0].signature: all mappings of path "github" carry one signature',
    'hooks.mappings[2].signature: must be the same as hooks.mappings[0].signature: all mappings of path "github" carry one signature',
  ]);
});

test('signature: a per-path token equal to hooks.token is refused', async () => {
  const found = problems(await load([{ ...github, signature: { scheme: 'token', secret: TOKEN } }]));
  assert.deepEqual(found, [
    'hooks.mappings[0].signature.secret: must differ from hooks.token (a per-path token opens that path only)',
  ]);
});

test('signatureSchema() accepts a secret list for standard-webhooks and keeps the hmac layout', () => {
  assert.deepEqual(check(signatureSchema, { scheme: 'standard-webhooks', secret: [WHSEC, WHSEC_2] }), {
    ok: true,
    value: { scheme: 'standard-webhooks', secrets: [WHSEC, WHSEC_2], toleranceSeconds: 300 },
    ignored: [],
  });
  const hmac = check(signatureSchema, {
    scheme: 'hmac',
    secret: ' s ',
    header: 'X-Sig',
    algorithm: 'sha1',
    encoding: 'base64',
    prefix: 'sha1=',
  });
  assert.deepEqual(hmac.ok && hmac.value, {
    scheme: 'hmac',
    secrets: ['s'],
    toleranceSeconds: 300,
    header: 'X-Sig',
    algorithm: 'sha1',
    encoding: 'base64',
    prefix: 'sha1=',
  });
  const bad = check(signatureSchema, { scheme: 'github', secret: 7 });
  assert.deepEqual(bad.ok ? [] : bad.issues, [{
    path: 'secret',
    message: 'must be a string or a non-empty list of strings, got number',
  }]);
});

test('checkSignatures() lets mappings without a path or signature be', () => {
  assert.deepEqual(
    checkSignatures([{ match: {} }, { match: { path: 'a' } }, { match: { path: 'a' } }], (i) => `m[${i}]`, null),
    [],
  );
});

test('signature.dedupeBodySeconds: a whole number of seconds up to 30 days, on the schemes whose signature covers no delivery id', async () => {
  const result = await load([{
    ...github,
    signature: { scheme: 'github', secret: 'gh-secret', dedupeBodySeconds: 3600 },
  }]);
  assert.ok(result.ok, result.ok ? '' : result.problems.join('\n'));
  assert.deepEqual(result.config.hooks.mappings[0]!.signature, {
    scheme: 'github',
    secrets: ['gh-secret'],
    toleranceSeconds: 300,
    dedupeBodySeconds: 3600,
  });
  for (const scheme of ['shopify', 'gitlab', 'token']) {
    assert.ok((await load([{ ...github, signature: { scheme, secret: 's', dedupeBodySeconds: 60 } }])).ok, scheme);
  }
  const found = problems(
    await load([
      { ...github, signature: { scheme: 'github', secret: 's', dedupeBodySeconds: 0 } },
      { ...github, match: { path: 'a' }, signature: { scheme: 'github', secret: 's', dedupeBodySeconds: 1.5 } },
      { ...github, match: { path: 'b' }, signature: { scheme: 'github', secret: 's', dedupeBodySeconds: 2_592_001 } },
      {
        ...github,
        match: { path: 'c' },
        signature: { scheme: 'standard-webhooks', secret: WHSEC, dedupeBodySeconds: 60 },
      },
      { ...github, match: { path: 'd' }, signature: { scheme: 'stripe', secret: 's', dedupeBodySeconds: 60 } },
      { ...github, match: { path: 'e' }, signature: { scheme: 'slack', secret: 's', dedupeBodySeconds: 60 } },
      {
        ...github,
        match: { path: 'f' },
        signature: { scheme: 'meta', secret: 's', verifyToken: 'v', dedupeBodySeconds: 60 },
      },
    ]),
  );
  assert.deepEqual(found, [
    'hooks.mappings[0].signature.dedupeBodySeconds: must be at least 1',
    'hooks.mappings[1].signature.dedupeBodySeconds: must be an integer',
    'hooks.mappings[2].signature.dedupeBodySeconds: must be at most 2592000',
    ...['standard-webhooks', 'stripe', 'slack', 'meta'].map(
      (scheme, i) =>
        `hooks.mappings[${
          i + 3
        }].signature.dedupeBodySeconds: is not read by scheme "${scheme}": its signature covers the delivery's id, which is the dedupe key`,
    ),
  ]);
});
