import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildConfig } from '../lib/config/load.ts';

// A mapping's coalesce as check sees it: agent mappings only, and not in forward mode.

const TOKEN = 'coalesce-checks-token-0123456789';
const COALESCE = { key: '{{repo}}' };

async function build(mapping: Record<string, unknown>, hooks: Record<string, unknown> = {}) {
  return buildConfig({
    hooks: {
      enabled: true,
      token: TOKEN,
      mappings: [{ match: { path: 'ci' }, messageTemplate: 'CI', textTemplate: 'CI', ...mapping }],
      ...hooks,
    },
  }, { file: null, env: {}, dir: '/' });
}

test('buildConfig() takes coalesce on an agent mapping, with its defaults', async () => {
  const built = await build({ coalesce: COALESCE });
  assert.ok(built.ok, JSON.stringify(built));
  const { coalesce } = built.config.hooks.mappings[0]!;
  assert.deepEqual([coalesce?.key.source, coalesce?.windowSeconds, coalesce?.maxWaitSeconds, coalesce?.messages], [
    '{{repo}}',
    30,
    300,
    'latest',
  ]);
});

test('buildConfig() refuses coalesce on a wake mapping and in forward mode, naming the key', async () => {
  const wake = await build({ action: 'wake', coalesce: COALESCE });
  assert.deepEqual(wake.ok ? [] : wake.problems, [
    'hooks.mappings[0].coalesce: applies to agent mappings only, not to a wake mapping',
  ]);
  const forward = await build({ coalesce: COALESCE }, {
    forward: { url: 'http://127.0.0.1:18789/hooks', token: 'up' },
  });
  assert.equal(forward.ok, false);
  assert.match(
    forward.ok ? '' : forward.problems.join('\n'),
    /^hooks\.mappings\[0\]\.coalesce: is not available in forward mode \(hooks\.forward\)/m,
  );
});

test('buildConfig() checks the keys of coalesce: a key template, windows within a day, messages latest or all', async () => {
  const bad = await build({ coalesce: { key: '{{open', windowSeconds: 0, maxWaitSeconds: 86_401, messages: 'some' } });
  const problems = bad.ok ? [] : bad.problems.join('\n');
  for (const key of ['key', 'windowSeconds', 'maxWaitSeconds', 'messages']) {
    assert.match(String(problems), new RegExp(`hooks\\.mappings\\[0\\]\\.coalesce\\.${key}: `), key);
  }
  const missing = await build({ coalesce: {} });
  assert.match(missing.ok ? '' : missing.problems.join('\n'), /coalesce\.key: /);
});
