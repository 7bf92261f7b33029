import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { Io } from '../lib/cli/io.ts';
import { main } from '../lib/cli/main.ts';

async function check(t: import('node:test').TestContext, config: unknown) {
  const dir = await mkdtemp(join(tmpdir(), 'hooks-check-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const path = join(dir, 'config.json');
  await writeFile(path, JSON.stringify(config));
  const out = { stdout: '', stderr: '' };
  const io: Io = { stdout: (s) => void (out.stdout += s), stderr: (s) => void (out.stderr += s), env: { HOME: dir } };
  return { code: await main(['check', '-c', path], io), path, ...out };
}

test('check says ok for the quick start\'s config, and warns that runs and heartbeats cannot work yet', async (t) => {
  const result = await check(t, { hooks: { enabled: true, token: 'a-token-for-check' } });
  assert.equal(result.code, 0);
  assert.equal(result.stdout, `${result.path}: ok\n`);
  assert.equal(
    result.stderr,
    'hooks-ingress check: warning: agent "main" has no model and agents.defaults.model is not set: agent runs and heartbeats will fail\n' +
      'hooks-ingress check: warning: no channel is configured (channels): run replies (deliver defaults to true) and heartbeat replies will not be delivered\n',
  );
});

test('check warns, one line, about a model whose provider is missing', async (t) => {
  const result = await check(t, {
    hooks: { enabled: true, token: 'a-token-for-check' },
    agents: { defaults: { model: 'openai/gpt-4o-mini' } },
    channels: { telegram: { botToken: '123:abc', defaultTo: '42' } },
  });
  assert.equal(result.code, 0);
  assert.equal(result.stderr, 'hooks-ingress check: warning: agents.defaults.model: provider "openai" is not configured (models.providers.openai)\n');
});
