import assert from 'node:assert/strict';
import { access, mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { buildConfig } from '../lib/config/load.ts';
import type { Config } from '../lib/config/types.ts';
import { checkTransforms } from '../lib/hooks/transforms/reloader.ts';
import { tempDir } from './_dir.ts';

async function configWith(t: TestContext, modules: Record<string, string>, mappings: unknown[]): Promise<Config> {
  const dir = await tempDir(t, 'transform-pool-');
  await mkdir(join(dir, 'hooks', 'transforms'), { recursive: true });
  for (const [name, source] of Object.entries(modules)) await writeFile(join(dir, 'hooks', 'transforms', name), source);
  const built = await buildConfig({ hooks: { enabled: true, token: 'pool-token-0123456789', mappings } }, { file: null, env: {}, dir });
  assert.ok(built.ok, built.ok ? '' : built.problems.join('\n'));
  return built.config;
}

test('checkTransforms() finds nothing wrong with modules whose exports are functions', async (t) => {
  const config = await configWith(t, { 'a.js': 'export default () => null;', 'b.mjs': 'export const pick = () => null;' }, [
    { match: { path: 'a' }, transform: { module: 'a.js' } },
    { match: { path: 'b' }, transform: { module: 'b.mjs', export: 'pick' } },
    { match: { path: 'c' }, action: 'wake', textTemplate: 'no transform here' },
  ]);
  assert.deepEqual(await checkTransforms(config), []);
});

test('checkTransforms() names the mapping whose export is not a function or whose module does not load', async (t) => {
  const config = await configWith(t, { 'value.js': 'export default 42;', 'broken.js': 'export default (' }, [
    { match: { path: 'ok' }, action: 'wake', textTemplate: 'fine' },
    { match: { path: 'value' }, transform: { module: 'value.js' } },
    { match: { path: 'broken' }, transform: { module: 'broken.js' } },
  ]);
  const problems = await checkTransforms(config);
  assert.equal(problems.length, 2, problems.join('\n'));
  assert.match(problems[0]!, /^hooks\.mappings\[1\]\.transform: .*not a function/);
  assert.match(problems[1]!, /^hooks\.mappings\[2\]\.transform: /);
});

test('checkTransforms() loads a transform without calling it', async (t) => {
  const marker = join(tmpdir(), `transform-pool-called-${process.pid}-${Date.now()}`);
  const source = `import { writeFileSync } from 'node:fs';\nexport default () => { writeFileSync(${JSON.stringify(marker)}, 'called'); return null; };`;
  const config = await configWith(t, { 'side.js': source }, [{ match: { path: 'side' }, transform: { module: 'side.js' } }]);
  assert.deepEqual(await checkTransforms(config), []);
  await assert.rejects(access(marker), { code: 'ENOENT' });
});
