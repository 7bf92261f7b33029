import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { readStateDir } from '../lib/config/state-dir.ts';
import { tempDir } from './_dir.ts';

test('readStateDir() reads state.dir alone, relative to the config file, its own variables resolved', async (t) => {
  const dir = await tempDir(t);
  const file = join(dir, 'config.json');
  await writeFile(
    file,
    '{ // JSONC\n "hooks": { "token": "${UNSET_SECRET}", "tokn": 1 }, "state": { "dir": "${BASE}/state" }, }',
  );
  assert.deepEqual(await readStateDir(file, { BASE: 'var' }), { ok: true, dir: join(dir, 'var/state') });
  assert.deepEqual(await readStateDir(file, {}), {
    ok: false,
    problems: ['state.dir: environment variable BASE is not set'],
  });
});

test('readStateDir() is null without state.dir, and names what is wrong with the file or the section', async (t) => {
  const dir = await tempDir(t);
  const file = join(dir, 'config.json');
  await writeFile(file, '{ "hooks": {} }');
  assert.deepEqual(await readStateDir(file, {}), { ok: true, dir: null });
  await writeFile(file, '{ "state": { "dir": "", "path": "x" } }');
  assert.deepEqual(await readStateDir(file, {}), {
    ok: false,
    problems: ['state.path: unknown key', 'state.dir: must be a non-empty string'],
  });
  await writeFile(file, '[]');
  assert.deepEqual(await readStateDir(file, {}), { ok: false, problems: [`${file}: must be an object`] });
  assert.equal((await readStateDir(join(dir, 'missing.json'), {})).ok, false);
});

test('readStateDir() answers a state value nested 10,000 arrays deep with its key path, not a stack overflow', async (t) => {
  const dir = await tempDir(t, 'state-dir-spec-');
  const file = join(dir, 'config.json');
  await writeFile(file, `{"state":{"dir":${'['.repeat(10_000)}"\${X}"${']'.repeat(10_000)}}}`);
  const read = await readStateDir(file, {});
  assert.deepEqual(read, {
    ok: false,
    problems: [`${file}: state.dir${'[0]'.repeat(62)}: may nest objects and arrays at most 64 levels deep`],
    unparsable: true,
  });
});
