// The spec harness's cleanups (spec/_cleanup.ts, _dir.ts, _cli.ts): a failed cleanup never keeps
// the later ones from running, a child is stopped before the directory it writes into goes, and
// no spec adds an `after` hook of its own that could run out of that order.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { IS_DENO, ROOT, stopAfter } from './_cli.ts';
import { defer, runCleanups } from './_cleanup.ts';
import { tempDir } from './_dir.ts';
import { until } from './_until.ts';

test('runCleanups() runs every cleanup, last registered first, and throws what failed after the last', async () => {
  const ran: string[] = [];
  const order = [() => void ran.push('directory'), () => void ran.push('server'), () => {
    ran.push('store');
    throw new Error('ENOTEMPTY');
  }];
  await assert.rejects(runCleanups(order), /ENOTEMPTY/);
  assert.deepEqual(ran, ['store', 'server', 'directory']);

  const two = [() => Promise.reject(new Error('first')), () => Promise.reject(new Error('second'))];
  await assert.rejects(
    runCleanups(two),
    (error: unknown) =>
      error instanceof AggregateError && error.errors.map((e: Error) => e.message).join() === 'second,first',
  );
});

test('a child writing into a test directory is stopped before the directory goes, however busy it is', async (t) => {
  let dir = '';
  let exited: Promise<unknown> = Promise.resolve();
  await t.test('a child writing files as fast as it can', async (inner) => {
    dir = await tempDir(inner, 'harness-cleanup-');
    // A new file at every turn: a removal running beside it meets ENOTEMPTY at once.
    const code =
      "import { writeFileSync } from 'node:fs'; import process from 'node:process'; let i = 0; for (;;) writeFileSync(`${process.env.DIR}/${i++ % 500}`, 'x');";
    const args = IS_DENO ? ['eval', code] : ['--input-type=module', '-e', code];
    const child = spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, DIR: dir }, stdio: 'ignore' });
    exited = once(child, 'close');
    stopAfter(inner, { child, exited });
    defer(inner, () => undefined); // a later cleanup of the test's own runs first, as before
    await until('the child to write', async () => (await readdir(dir)).length > 10);
  });
  await exited;
  assert.equal(existsSync(dir), false, `${dir} is still there`);
});

test('specs register cleanups through defer() only, so they run in one order and all of them run', async () => {
  const offenders: string[] = [];
  const folders = [
    'spec',
    ...(await readdir(join(ROOT, 'spec'), { withFileTypes: true })).filter((d) => d.isDirectory()).map((d) =>
      `spec/${d.name}`
    ),
  ];
  for (const folder of folders) {
    const names = await readdir(join(ROOT, folder));
    for (const name of names.filter((n) => n.endsWith('.ts') && n !== '_cleanup.ts')) {
      const text = await readFile(join(ROOT, folder, name), 'utf8');
      if (/\bt\.after\(|\bafterEach\(/.test(text)) offenders.push(`${folder}/${name}`);
    }
  }
  assert.deepEqual(offenders, [], 'these add after hooks of their own; use defer(t, fn) from spec/_cleanup.ts');
});
