// Where a spec file lives decides what runs it: spec/ and spec/system/ make the suite
// (test:node, test:deno), spec/gateway/ the released gateway's run (test:gateway). A spec that
// runs hooks-ingress itself as a process is a system spec; docs/development.md states the rule.
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { test } from 'node:test';
import { ROOT } from './_cli.ts';

async function specFiles(): Promise<string[]> {
  const entries = await readdir(join(ROOT, 'spec'), { withFileTypes: true, recursive: true });
  return entries.filter((e) => e.isFile() && e.name.endsWith('.test.ts')).map((e) =>
    relative(ROOT, join(e.parentPath ?? e.path, e.name))
  );
}

// hooks-ingress as a process: a command or serve through spec/_cli.ts, the shim bin/hooks-ingress,
// or the package as npm packs it. A child the part under test starts (a transform, the command
// provider, gog, imsg) or a probe script run in a child is not hooks-ingress.
const RUNS_THE_PRODUCT = /\b(?:runCli|spawnServer|serveState|cliCommand)\b|'bin\/hooks-ingress'|\['pack'/;

/** Whether a spec's code (comments left out) runs hooks-ingress as a process. */
function runsTheProduct(text: string): boolean {
  return RUNS_THE_PRODUCT.test(text.replace(/\/\*[\s\S]*?\*\/|^\s*\/\/.*$/gm, ''));
}

test('runsTheProduct() tells a spec that runs hooks-ingress as a process from one that runs a part in-process', () => {
  assert.equal(runsTheProduct("const { code } = await runCli(['status']);"), true);
  assert.equal(runsTheProduct("import { configFile, serveState as serve } from '../_cli.ts';"), true);
  assert.equal(runsTheProduct("const BIN = join(ROOT, 'bin/hooks-ingress');"), true);
  assert.equal(runsTheProduct("npm(['pack', '--pack-destination', dir], ROOT);"), true);
  assert.equal(runsTheProduct("const child = spawn('sh', args);\n// not runCli: a child of its own"), false);
  assert.equal(runsTheProduct('const app = await startApp(t, { config });'), false);
});

test('a spec that runs hooks-ingress as a process lives in spec/system/, and every spec in spec/system/ does', async () => {
  const misplaced: string[] = [];
  for (const file of await specFiles()) {
    const folder = file.split('/').slice(1, -1).join('/');
    // This file names the markers without running anything.
    if ((folder !== '' && folder !== 'system') || file === 'spec/layout.test.ts') continue;
    if (runsTheProduct(await readFile(join(ROOT, file), 'utf8')) !== (folder === 'system')) misplaced.push(file);
  }
  assert.deepEqual(misplaced, []);
});

test('every spec file is in a folder an npm script runs: spec/ and spec/system/ (test:node, test:deno), spec/gateway/ (test:gateway, on its own)', async () => {
  const { scripts } = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as {
    scripts: Record<string, string>;
  };
  assert.match(scripts['test:node']!, / spec\/\*\.test\.ts spec\/system\/\*\.test\.ts$/);
  assert.match(scripts['test:gateway']!, / spec\/gateway\/\*\.test\.ts$/);
  // Deno walks spec/ down, spec/gateway/ included: those specs skip themselves there, saying why.
  assert.match(scripts['test:deno']!, / spec\/$/);
  const elsewhere = (await specFiles()).filter((file) =>
    !/^spec\/(?:(?:system|gateway)\/)?[\w.-]+\.test\.ts$/.test(file)
  );
  assert.deepEqual(elsewhere, []);
});
