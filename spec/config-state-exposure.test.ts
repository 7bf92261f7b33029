import assert from 'node:assert/strict';
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { intendedRealpath, stateExposure } from '../lib/config/state-exposure.ts';
import { tempDir } from './_dir.ts';

// A transforms directory and a state directory side by side, each test adding the links it needs.
async function layout(t: import('node:test').TestContext) {
  const dir = await tempDir(t, 'exposure-');
  const transforms = join(dir, 'transforms');
  await mkdir(join(transforms, 'lib'), { recursive: true });
  await writeFile(join(transforms, 't.js'), 'export default () => null;\n');
  const state = join(dir, 'srv', 'state');
  return { dir, transforms, state };
}

test('stateExposure() passes a state directory beside the transforms directory, with links that lead elsewhere', async (t) => {
  const { dir, transforms, state } = await layout(t);
  await mkdir(state, { recursive: true });
  await mkdir(join(dir, 'other'));
  await symlink(join(dir, 'other'), join(transforms, 'other'));
  await symlink(join(transforms, 't.js'), join(transforms, 'alias.js'));
  await symlink(join(dir, 'gone'), join(transforms, 'dangling'));
  await symlink(transforms, join(transforms, 'lib', 'loop'));
  assert.deepEqual(await stateExposure(state, transforms), { problem: null, partial: false });
  assert.deepEqual(await stateExposure(state, join(dir, 'no-such-dir')), { problem: null, partial: false });
  assert.match(
    (await stateExposure(join(dir, 'no-such-dir', 'state'), join(dir, 'no-such-dir'))).problem ?? '',
    /^it lies inside the transforms directory /,
    'a transforms directory not made yet',
  );
});

test('stateExposure() refuses a link to a folder holding the state directory, to it, or into it, at any depth and through linked folders, made yet or not', async (t) => {
  const cases: [string, (d: { dir: string; transforms: string; state: string }) => Promise<string>, RegExp][] = [
    [
      'a link to a folder that holds it',
      async ({ dir, transforms }) => (await symlink(join(dir, 'srv'), join(transforms, 'shared')), 'shared'),
      /holds a symbolic link \S+\/transforms\/shared to \S+\/srv, which holds it: /,
    ],
    [
      'a link to it',
      async ({ state, transforms }) => (await symlink(state, join(transforms, 'lib', 'state')), 'lib/state'),
      /holds a symbolic link \S+\/transforms\/lib\/state to it: /,
    ],
    [
      'a link into it',
      async (
        { state, transforms },
      ) => (await symlink(join(state, 'control.secret'), join(transforms, 'secret')), 'secret'),
      /holds a symbolic link \S+\/transforms\/secret to \S+\/srv\/state\/control\.secret, inside it: /,
    ],
    [
      'a link to / deep down',
      async ({ transforms }) => (await symlink('/', join(transforms, 'lib', 'root')), 'lib/root'),
      /holds a symbolic link \S+\/transforms\/lib\/root to \/, which holds it: /,
    ],
    [
      'a link inside a linked folder',
      async ({ dir, transforms }) => {
        await mkdir(join(dir, 'vendor'));
        await symlink(join(dir, 'vendor'), join(transforms, 'vendor'));
        await symlink(join(dir, 'srv'), join(dir, 'vendor', 'up'));
        return 'vendor/up';
      },
      /holds a symbolic link \S+\/transforms\/vendor\/up to \S+\/srv, which holds it: /,
    ],
  ];
  for (const [name, plant, expected] of cases) {
    for (const made of [true, false]) {
      const d = await layout(t);
      await mkdir(made ? d.state : join(d.dir, 'srv'), { recursive: true });
      if (made) await writeFile(join(d.state, 'control.secret'), 'f'.repeat(64));
      await plant(d);
      const { problem } = await stateExposure(d.state, d.transforms);
      assert.match(problem ?? 'passed', expected, `${name}, state directory ${made ? 'made' : 'not made yet'}`);
      assert.match(
        problem ?? '',
        /transforms may read it through the link; remove the link or use another state directory$/,
      );
    }
  }
});

test('stateExposure() refuses a state directory inside the transforms directory, the same, or holding it', async (t) => {
  const { dir, transforms } = await layout(t);
  assert.match(
    (await stateExposure(join(transforms, 'state'), transforms)).problem ?? '',
    /^it lies inside the transforms directory /,
  );
  assert.match((await stateExposure(transforms, transforms)).problem ?? '', /^it is the transforms directory /);
  assert.match((await stateExposure(dir, transforms)).problem ?? '', /^it holds the transforms directory /);
  // Through a link on the state directory's own path: real paths are compared.
  await symlink(transforms, join(dir, 'alias'));
  assert.match(
    (await stateExposure(join(dir, 'alias', 'new', 'state'), transforms)).problem ?? '',
    /^it lies inside the transforms directory /,
  );
});

test('intendedRealpath() is the real path of the nearest existing ancestor and the rest', async (t) => {
  const dir = await tempDir(t, 'exposure-');
  await mkdir(join(dir, 'real'));
  await symlink(join(dir, 'real'), join(dir, 'link'));
  assert.equal(await intendedRealpath(join(dir, 'link', 'a', 'b')), join(dir, 'real', 'a', 'b'));
  assert.equal(await intendedRealpath(join(dir, 'link')), join(dir, 'real'));
});
