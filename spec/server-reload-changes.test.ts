import assert from 'node:assert/strict';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { changeLines } from '../lib/cli/reload.ts';
import {
  loaded,
  mappingChanges,
  needsRestart,
  reloadChanges,
  RESTART_KEYS,
  sameConfig,
  secretDigests,
} from '../lib/server/reload-changes.ts';
import { specConfig } from './_app.ts';
import { ROOT } from './_cli.ts';
import { tempDir } from './_dir.ts';

test('reloadChanges() names endpoints, mapping ids and secret key paths that came, went or changed, and no value', async (t) => {
  const dir = await tempDir(t);
  const gh = {
    id: 'gh',
    match: { path: 'github' },
    action: 'wake',
    textTemplate: 'x',
    signature: { scheme: 'github', secret: 'gh-secret-0123456789' },
  };
  const src = { id: 'by-source', match: { source: 'ci' }, action: 'wake', textTemplate: 'x' };
  const before = await specConfig({
    hooks: { enabled: true, token: 'token-one-0123456789abcdef', mappings: [gh, src] },
    channels: { telegram: { botToken: '123:abc' } },
  }, dir);
  const after = await specConfig({
    hooks: { enabled: true, path: '/in', token: 'token-two-0123456789abcdef', mappings: [src] },
    channels: { telegram: { botToken: '123:abc', apiBase: 'http://127.0.0.1:1' } },
  }, dir);
  const changes = reloadChanges(await loaded(before), await loaded(after));
  assert.deepEqual(changes, {
    hooks: { added: ['/in/wake', '/in/agent'], removed: ['/hooks/wake', '/hooks/agent', '/hooks/github'] },
    mappings: { added: [], removed: ['gh'], changed: [] },
    transforms: { added: [], removed: [], changed: [] },
    secrets: { added: [], removed: ['hooks.mappings[gh].signature.secrets[0]'], changed: ['hooks.token'] },
  });
  assert.ok(!JSON.stringify(changes).match(/token-one|token-two|gh-secret|123:abc/));
  assert.deepEqual([...secretDigests(before).keys()].sort(), [
    'channels.telegram.botToken',
    'hooks.mappings[gh].signature.secrets[0]',
    'hooks.token',
  ]);
  const disabled = await specConfig({ hooks: { enabled: false } }, dir);
  assert.deepEqual(reloadChanges(await loaded(after), await loaded(disabled)).hooks, {
    added: [],
    removed: ['/in/wake', '/in/agent'],
  });
});

test('reloadChanges() names a mapping in both configs with the keys that changed, and a transform module whose file content changed', async (t) => {
  const dir = await tempDir(t);
  await mkdir(join(dir, 'hooks', 'transforms'), { recursive: true });
  const module = join(dir, 'hooks', 'transforms', 'ci.mjs');
  await writeFile(module, 'export default () => ({ text: "a" });\n');
  const gh = {
    id: 'gh',
    match: { path: 'github' },
    action: 'wake',
    textTemplate: 'push {{ref}}',
    allowCredentialHeaders: ['x-one'],
  };
  const ci = { id: 'ci', match: { path: 'ci' }, action: 'wake', transform: { module: 'ci.mjs' } };
  const raw = (mappings: unknown[]) => ({ hooks: { enabled: true, token: 'token-one-0123456789abcdef', mappings } });
  const before = await loaded(await specConfig(raw([gh, ci]), dir));
  assert.equal(sameConfig(before, await loaded(await specConfig(raw([gh, ci]), dir))), true, 'the same file twice');
  await writeFile(module, 'export default () => ({ text: "b" });\n');
  const after = await loaded(
    await specConfig(
      raw([
        { ...gh, textTemplate: 'push {{ref}}!', allowCredentialHeaders: ['x-two'], filter: { payload: { a: 1 } } },
        ci,
      ]),
      dir,
    ),
  );
  const changes = reloadChanges(before, after);
  assert.deepEqual(changes.mappings, {
    added: [],
    removed: [],
    changed: ['gh (allowCredentialHeaders, filter, textTemplate)'],
  });
  assert.deepEqual(changes.transforms, { added: [], removed: [], changed: ['ci.mjs'] });
  assert.equal(sameConfig(before, after), false);
  // Only the module's content: the same text again is no change.
  const same = await loaded(await specConfig(raw([gh, ci]), dir));
  assert.deepEqual(reloadChanges(after, same).transforms.changed, []);
  assert.deepEqual(mappingChanges(after.config, same.config), ['gh (allowCredentialHeaders, filter, textTemplate)']);
  // Another setting, in no hook, mapping, transform or secret: still not the same config.
  const other = await loaded(await specConfig({ ...raw([gh, ci]), agents: { defaults: { timeoutSeconds: 33 } } }, dir));
  assert.deepEqual(changeLines(reloadChanges(same, other)), []);
  assert.equal(sameConfig(same, other), false);
});

test('needsRestart() names the keys a running server takes only at its start, the inspector turned on by its port alone', async (t) => {
  const dir = await tempDir(t);
  const base = { hooks: { enabled: true, token: 'token-one-0123456789abcdef' } };
  const plain = await specConfig(base, dir);
  const inspector = await specConfig({ ...base, inspector: { port: 0 } }, dir);
  assert.deepEqual(needsRestart(plain, inspector), ['inspector.port']);
  assert.deepEqual(needsRestart(inspector, plain), ['inspector.port']);
  const moved = await specConfig({
    ...base,
    inspector: { port: 0, bind: '127.0.0.2', idleMinutes: 5 },
    gateway: { port: 9999 },
    agents: { defaults: { heartbeat: { every: '7m' } } },
  }, dir);
  assert.deepEqual(needsRestart(inspector, moved), [
    'gateway.port',
    'agents.defaults.heartbeat.every',
    'inspector.bind',
    'inspector.idleMinutes',
  ]);
  assert.deepEqual(needsRestart(plain, plain), []);
});

// The one list of keys that need a restart: what reload says, and what every document says.
test('RESTART_KEYS are the keys hooks-ingress(1), hooks-ingress.json(5) and docs/operations.md say need a restart', async () => {
  const keys = RESTART_KEYS.map((k) => k.key).sort();
  const keyLike = (text: string) => [...new Set(text.match(/\b[a-z]+(?:\.[a-zA-Z]+)+\b/g) ?? [])].sort();
  const operations = await readFile(join(ROOT, 'docs', 'operations.md'), 'utf8');
  const paragraph = /\nA reload does not apply, because they need a restart:([\s\S]*?)\n\n/.exec(operations)![1]!;
  assert.deepEqual(
    keyLike([...paragraph.matchAll(/`([^`]+)`/g)].map((m) => m[1] ?? '').filter((k) => !k.includes(' ')).join(' ')),
    keys,
    'docs/operations.md',
  );
  const page5 = await readFile(join(ROOT, 'man', 'hooks-ingress.json.5'), 'utf8');
  const reloading = /\nA few keys are read only at start-up and need a restart:\n([\s\S]*?)\nA reload's verdict/.exec(
    page5,
  )![1]!;
  assert.deepEqual(
    keyLike(reloading.split('\n').filter((l) => l.startsWith('.Cm ')).join(' ')),
    keys,
    'hooks-ingress.json(5)',
  );
  const page1 = await readFile(join(ROOT, 'man', 'hooks-ingress.1'), 'utf8');
  const line = page1.split('\n').find((l) => l.startsWith('.Pq Cm gateway.bind'))!;
  assert.deepEqual(keyLike(line), keys, 'hooks-ingress(1)');
});
