import assert from 'node:assert/strict';
import { chmod, mkdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { secureStateDir } from '../lib/store/state/access.ts';
import { tempDir } from './_dir.ts';

const modeOf = async (path: string) => (await stat(path)).mode & 0o7777;

test('secureStateDir() creates a missing directory, parents too, with mode 0700', async (t) => {
  const dir = join(await tempDir(t, 'state-access-'), 'a', 'state');
  assert.deepEqual(await secureStateDir(dir), { ok: true, tightened: null });
  assert.equal(await modeOf(dir), 0o700);
});

test('secureStateDir() leaves a directory only its owner can write as it is, group-readable or not', async (t) => {
  const dir = join(await tempDir(t, 'state-access-'), 'state');
  await mkdir(dir);
  await chmod(dir, 0o750);
  assert.deepEqual(await secureStateDir(dir), { ok: true, tightened: null });
  assert.equal(await modeOf(dir), 0o750);
});

test('secureStateDir() takes write access from group and others, and says from what to what', async (t) => {
  for (const [from, to] of [[0o777, 0o755], [0o770, 0o750]] as const) {
    const dir = join(await tempDir(t, 'state-access-'), 'state');
    await mkdir(dir);
    await chmod(dir, from);
    assert.deepEqual(await secureStateDir(dir), { ok: true, tightened: { from, to } });
    assert.equal(await modeOf(dir), to);
  }
});

test('secureStateDir() refuses a shared directory (the sticky bit) and changes nothing', async (t) => {
  const dir = join(await tempDir(t, 'state-access-'), 'state');
  await mkdir(dir);
  await chmod(dir, 0o1777);
  assert.deepEqual(await secureStateDir(dir), {
    ok: false,
    reason: 'it is shared (mode 01777, the sticky bit): give the server a directory of its own',
  });
  assert.equal(await modeOf(dir), 0o1777);
});
