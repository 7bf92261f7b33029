import assert from 'node:assert/strict';
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { before, test } from 'node:test';
import { resolveInside, resolveModule } from '../lib/guard/contain.ts';
import { fileDir } from './_dir.ts';

// base/root is the transforms root; base/outside is a sibling it must not reach.
const base = await fileDir('hooks-contain-');
const root = join(base, 'root');
const outside = join(base, 'outside');

before(async () => {
  await mkdir(join(root, 'lib'), { recursive: true });
  await mkdir(outside);
  await writeFile(join(root, 'a.js'), 'export default () => 1;\n');
  await writeFile(join(root, 'lib', 'b.js'), 'export default () => 2;\n');
  await writeFile(join(outside, 'evil.js'), 'export default () => 666;\n');
  await symlink(join(outside, 'evil.js'), join(root, 'evil.js'));
  await symlink(outside, join(root, 'out'));
  await symlink(join(root, 'lib', 'b.js'), join(root, 'alias.js'));
  await symlink(join(root, 'lib'), join(root, 'lib-link'));
  await symlink(join(base, 'nowhere.js'), join(root, 'dangling.js'));
  await symlink(join(root, 'loop-b'), join(root, 'loop-a'));
  await symlink(join(root, 'loop-a'), join(root, 'loop-b'));
  await symlink(join(base, 'root'), join(base, 'root-link'));
});

test('resolveInside() accepts a relative path inside the root and answers its real path', async () => {
  assert.deepEqual(await resolveInside(root, 'lib/b.js'), { ok: true, path: join(root, 'lib', 'b.js') });
});

test('resolveInside() accepts an absolute path inside the root', async () => {
  assert.deepEqual(await resolveInside(root, join(root, 'a.js')), { ok: true, path: join(root, 'a.js') });
});

test('resolveInside() accepts the root itself', async () => {
  assert.deepEqual(await resolveInside(root, '.'), { ok: true, path: root });
});

test('resolveInside() rejects a sibling whose name starts with the root name', async () => {
  await mkdir(join(base, 'root-sibling'), { recursive: true });
  const found = await resolveInside(root, '../root-sibling');
  assert.equal(!found.ok && found.code, 'outside');
});

/** Paths that lead outside the root; a function because the temp dirs exist only once before() ran. */
const outsidePaths: { name: string; path: () => string }[] = [
  { name: 'an absolute path outside the root', path: () => join(outside, 'evil.js') },
  { name: 'a symlinked module that points outside', path: () => 'evil.js' },
  { name: 'a path through a symlinked directory that points outside', path: () => 'out/evil.js' },
  { name: 'a not-yet-existing path under a symlinked directory that points outside', path: () => 'out/new/later.js' },
];

for (const c of outsidePaths) {
  test(`resolveInside() rejects ${c.name}`, async () => {
    const found = await resolveInside(root, c.path());
    assert.equal(found.ok, false);
    assert.equal(!found.ok && found.code, 'outside');
  });
}

test('resolveInside() accepts symlinks that stay inside and answers the target', async () => {
  assert.deepEqual(await resolveInside(root, 'alias.js'), { ok: true, path: join(root, 'lib', 'b.js') });
  assert.deepEqual(await resolveInside(root, 'lib-link/b.js'), { ok: true, path: join(root, 'lib', 'b.js') });
});

test('resolveInside() compares real paths when the root itself is a symlink', async () => {
  assert.deepEqual(await resolveInside(join(base, 'root-link'), 'a.js'), { ok: true, path: join(root, 'a.js') });
  const found = await resolveInside(join(base, 'root-link'), 'evil.js');
  assert.equal(!found.ok && found.code, 'outside');
});

test('resolveInside() judges a missing path by its nearest existing ancestor', async () => {
  assert.deepEqual(await resolveInside(root, 'lib/new/c.js'), { ok: true, path: join(root, 'lib', 'new', 'c.js') });
  assert.deepEqual(await resolveInside(root, 'a.js/c.js'), { ok: true, path: join(root, 'a.js', 'c.js') });
});

/** Refusals with their full answer; root and path are functions because the temp dirs exist only once before() ran. */
const refusals: { name: string; root: () => string; path: string; code: string; reason: string }[] = [
  {
    name: 'rejects a path that climbs out with ..',
    root: () => root,
    path: '../outside/evil.js',
    code: 'outside',
    reason: 'resolves outside the transforms root',
  },
  {
    name: 'rejects a broken symlink, which could later point anywhere',
    root: () => root,
    path: 'dangling.js',
    code: 'missing',
    reason: 'is a broken symbolic link',
  },
  {
    name: 'reports a symlink loop as unresolvable',
    root: () => root,
    path: 'loop-a',
    code: 'unresolvable',
    reason: 'cannot be resolved: ELOOP',
  },
  {
    name: 'reports a missing root',
    root: () => join(base, 'no-root'),
    path: 'a.js',
    code: 'missing',
    reason: 'the transforms root does not exist',
  },
];

for (const c of refusals) {
  test(`resolveInside() ${c.name}`, async () => {
    assert.deepEqual(await resolveInside(c.root(), c.path), { ok: false, code: c.code, reason: c.reason });
  });
}

test('resolveModule() accepts an existing regular file inside the root', async () => {
  assert.deepEqual(await resolveModule(root, 'alias.js'), { ok: true, path: join(root, 'lib', 'b.js') });
});

test('resolveModule() rejects a module that does not exist', async () => {
  assert.deepEqual(await resolveModule(root, 'nope.js'), { ok: false, code: 'missing', reason: 'does not exist' });
});

test('resolveModule() rejects a directory', async () => {
  assert.deepEqual(await resolveModule(root, 'lib'), {
    ok: false,
    code: 'not-a-file',
    reason: 'is not a regular file',
  });
});

test('resolveModule() still rejects a path outside the root first', async () => {
  const found = await resolveModule(root, 'evil.js');
  assert.equal(!found.ok && found.code, 'outside');
});
