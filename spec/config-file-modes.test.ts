import assert from 'node:assert/strict';
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { linksOutside, literalSecrets } from '../lib/config/file-modes.ts';
import { tempDir } from './_dir.ts';

test('literalSecrets() names each secret written into the file, by key path, and passes over ${NAME} references', async (t) => {
  const dir = await tempDir(t, 'file-modes-');
  const file = join(dir, 'config.json');
  await writeFile(
    file,
    `{
      // comments are fine
      "hooks": { "token": "literal", "tokenFile": "hooks-token", "gmail": { "pushToken": "\${PUSH}", "hookToken": "also-literal" },
        "mappings": [{ "signature": { "scheme": "github", "secret": ["\${A}", "literal-too"] } }] },
      "models": { "providers": { "p": { "api": "command", "apiKey": "Bearer \${KEY}", "headers": { "Authorization": "Bearer abc", "X-Title": "plain" } } } },
      "channels": { "msteams": { "appPassword": "pw" }, "telegram": { "botToken": "" } },
    }`,
  );
  assert.deepEqual(await literalSecrets(file), [
    'hooks.token',
    'hooks.gmail.hookToken',
    'hooks.mappings[0].signature.secret[1]',
    'models.providers.p.headers.Authorization',
    'channels.msteams.appPassword',
  ]);
});

test('literalSecrets() finds nothing in a file it cannot read or parse', async (t) => {
  const dir = await tempDir(t, 'file-modes-');
  await writeFile(join(dir, 'broken.json'), '{ "hooks": ');
  assert.deepEqual(await literalSecrets(join(dir, 'broken.json')), []);
  assert.deepEqual(await literalSecrets(join(dir, 'missing.json')), []);
});

test('linksOutside() finds the links of the transforms directory, at any depth, that lead outside it, and no others', async (t) => {
  const dir = await tempDir(t, 'file-modes-');
  const root = join(dir, 'transforms');
  await mkdir(join(root, 'lib', 'deep'), { recursive: true });
  await writeFile(join(root, 'a.js'), 'export default () => null;\n');
  await writeFile(join(dir, 'secret.txt'), 'outside\n');
  await symlink(join(root, 'a.js'), join(root, 'alias.js'));
  await symlink(join(dir, 'secret.txt'), join(root, 'lib', 'deep', 'secret.txt'));
  await symlink('/', join(root, 'lib', 'everything'));
  await symlink(join(dir, 'gone'), join(root, 'dangling'));
  const found = (await linksOutside(root)).sort();
  assert.deepEqual(found, [
    [join(root, 'lib', 'deep', 'secret.txt'), join(dir, 'secret.txt')],
    [join(root, 'lib', 'everything'), '/'],
  ]);
  assert.deepEqual(await linksOutside(join(dir, 'no-such-dir')), []);
});
