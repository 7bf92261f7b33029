// Every answer and trace of the hooks path keeps one hidden class from request to request. Node
// 20's V8 gives the copy an object spread makes a class of its own each time once a key is added
// to it (`{ ...trace, became }`), and every later read of such an object misses V8's caches: the
// structure's first shape cost a wake some 10 % of its CPU that way (docs/benchmark.md). Deno's
// newer V8 keeps one class either way: there the spec holds, and could not catch the old code.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { test } from 'node:test';
import { IS_DENO, ROOT } from './_cli.ts';

test('the answers and traces of wakes, runs and a template mapping keep one hidden class each, request after request', async () => {
  const args = IS_DENO
    ? ['run', '-A', '--v8-flags=--allow-natives-syntax', 'spec/_hidden-classes.ts']
    : ['--allow-natives-syntax', '--import', 'tsx', 'spec/_hidden-classes.ts'];
  const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk));
  child.stderr.on('data', (chunk: Buffer) => (err += chunk));
  const [code] = await once(child, 'close');
  assert.equal(code, 0, err);
  const none = { answers: 0, traces: 0 };
  assert.deepEqual(JSON.parse(out), { wake: none, agent: none, plain: none });
});
