import assert from 'node:assert/strict';
import { access, mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { buildConfig } from '../lib/config/load.ts';
import type { Config } from '../lib/config/types.ts';
import { checkTransforms, TransformReloader } from '../lib/hooks/transforms/reloader.ts';
import { silentLogger } from './_app.ts';
import { defer } from './_cleanup.ts';
import { tempDir } from './_dir.ts';
import { until } from './_until.ts';

const TOKEN = 'reload-token-0123456789abcdef';

async function configWith(t: TestContext, modules: Record<string, string>, mappings: unknown[]): Promise<Config> {
  const dir = await tempDir(t, 'transform-pool-');
  await mkdir(join(dir, 'hooks', 'transforms'), { recursive: true });
  for (const [name, source] of Object.entries(modules)) await writeFile(join(dir, 'hooks', 'transforms', name), source);
  const built = await buildConfig({ hooks: { enabled: true, token: 'pool-token-0123456789', mappings } }, {
    file: null,
    env: {},
    dir,
  });
  assert.ok(built.ok, built.ok ? '' : built.problems.join('\n'));
  return built.config;
}

test('checkTransforms() finds nothing wrong with modules whose exports are functions', async (t) => {
  const config = await configWith(t, {
    'a.js': 'export default () => null;',
    'b.mjs': 'export const pick = () => null;',
  }, [
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
  const source = `import { writeFileSync } from 'node:fs';\nexport default () => { writeFileSync(${
    JSON.stringify(marker)
  }, 'called'); return null; };`;
  const config = await configWith(t, { 'side.js': source }, [{
    match: { path: 'side' },
    transform: { module: 'side.js' },
  }]);
  assert.deepEqual(await checkTransforms(config), []);
  await assert.rejects(access(marker), { code: 'ENOENT' });
});

// The worker pool behind a reload, in-process: a pool replaced by a reload (a new transforms folder
// or time budget) must let the calls already on it finish, whatever their time budget.
test('TransformReloader.configure() replacing the pool lets a call in flight on the old pool finish', async (t) => {
  const dir = await tempDir(t, 'ops-reload-');
  const root = join(dir, 'hooks', 'transforms');
  await mkdir(root, { recursive: true });
  await writeFile(
    join(root, 'wait.mjs'),
    `import { existsSync } from 'node:fs';
export default async ({ payload }) => {
  // A sandboxed transform writes no file: it says it started on its console, which the pool logs.
  console.log('started ' + payload.flag);
  while (!existsSync(payload.flag)) await new Promise((resolve) => setTimeout(resolve, 10));
  return { text: 'finished' };
};
`,
  );
  const configure = async (timeoutMs: number): Promise<Config> => {
    const mapping = { match: { path: 'wait' }, action: 'wake', transform: { module: 'wait.mjs' } };
    const built = await buildConfig({
      hooks: { enabled: true, token: TOKEN, transformTimeoutMs: timeoutMs, mappings: [mapping] },
    }, { file: null, env: {}, dir });
    if (!built.ok) throw new Error(built.problems.join('; '));
    return built.config;
  };
  const before = await configure(120_000);
  const after = await configure(119_000);
  const ref = before.hooks.mappings[0]!.transform!;
  const output: string[] = [];
  const pool = new TransformReloader({
    ...silentLogger,
    warn: (message, fields) => void output.push(`${message}: ${String(fields?.['line'])}`),
  });
  defer(t, () => pool.close());
  pool.configure(before);
  // The flags lie inside the transforms root, the one place the child may read.
  const input = (flag: string) => ({ payload: { flag: join(root, flag) }, headers: {}, query: {}, path: 'wait' });

  const inFlight = pool.call(ref, input('first'));
  await until(
    'the transform to start',
    async () => output.includes(`transform output: started ${join(root, 'first')}`),
  );
  pool.configure(after);
  await writeFile(join(root, 'first'), '');
  assert.deepEqual(await inFlight, { ok: true, value: { text: 'finished' } });

  // The new pool serves the next call, and keeps serving after a reload with the same settings
  // (which only clears its module cache).
  await writeFile(join(root, 'second'), '');
  assert.deepEqual(await pool.call(ref, input('second')), { ok: true, value: { text: 'finished' } });
  pool.configure(after);
  await writeFile(join(root, 'third'), '');
  assert.deepEqual(await pool.call(ref, input('third')), { ok: true, value: { text: 'finished' } });
});

test('TransformReloader.call() without a mapping that needs a transform answers load-failed, and close() stops every pool', async (t) => {
  const dir = await tempDir(t, 'ops-reload-');
  const built = await buildConfig({ hooks: { enabled: true, token: TOKEN } }, { file: null, env: {}, dir });
  assert.ok(built.ok);
  const pool = new TransformReloader(silentLogger);
  pool.configure(built.config);
  const result = await pool.call({ module: join(dir, 'none.mjs') }, { payload: {}, headers: {}, query: {}, path: 'x' });
  assert.deepEqual(result, { ok: false, reason: 'load-failed', detail: 'no transform is configured' });
  await pool.close();
});
