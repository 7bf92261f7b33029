import assert from 'node:assert/strict';
import { test } from 'node:test';
import { reloadChanges, secretDigests } from '../lib/cli/reload-changes.ts';
import { specConfig } from './_app.ts';
import { tempDir } from './_dir.ts';

test('reloadChanges() names endpoints, mapping ids and secret key paths that came, went or changed, and no value', async (t) => {
  const dir = await tempDir(t);
  const gh = { id: 'gh', match: { path: 'github' }, action: 'wake', textTemplate: 'x', signature: { scheme: 'github', secret: 'gh-secret-0123456789' } };
  const src = { id: 'by-source', match: { source: 'ci' }, action: 'wake', textTemplate: 'x' };
  const before = await specConfig({ hooks: { enabled: true, token: 'token-one-0123456789abcdef', mappings: [gh, src] }, channels: { telegram: { botToken: '123:abc' } } }, dir);
  const after = await specConfig({ hooks: { enabled: true, path: '/in', token: 'token-two-0123456789abcdef', mappings: [src] }, channels: { telegram: { botToken: '123:abc', apiBase: 'http://127.0.0.1:1' } } }, dir);
  const changes = reloadChanges(before, after);
  assert.deepEqual(changes, {
    hooks: { added: ['/in/wake', '/in/agent'], removed: ['/hooks/wake', '/hooks/agent', '/hooks/github'] },
    mappings: { added: [], removed: ['gh'] },
    secrets: { added: [], removed: ['hooks.mappings[gh].signature.secrets[0]'], changed: ['hooks.token'] },
  });
  assert.ok(!JSON.stringify(changes).match(/token-one|token-two|gh-secret|123:abc/));
  assert.deepEqual([...secretDigests(before).keys()].sort(), ['channels.telegram.botToken', 'hooks.mappings[gh].signature.secrets[0]', 'hooks.token']);
  const disabled = await specConfig({ hooks: { enabled: false } }, dir);
  assert.deepEqual(reloadChanges(after, disabled).hooks, { added: [], removed: ['/in/wake', '/in/agent'] });
});
