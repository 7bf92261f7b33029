import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { test } from 'node:test';
import { ROOT } from './_cli.ts';

async function sources(dir: string): Promise<string[]> {
  const entries = await readdir(join(ROOT, dir), { withFileTypes: true, recursive: true });
  return entries.filter((e) => e.isFile()).map((e) => relative(ROOT, join(e.parentPath ?? e.path, e.name)));
}

// Static `import`/`export ... from`, side-effect imports, and dynamic import() of a literal.
const SPECIFIER = /(?:^|[\s;])(?:import|export)\s[^'"`]*?from\s*['"]([^'"]+)['"]|(?:^|[\s;])import\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/gm;

test('lib/ and bin/ import only node: built-ins and relative files (zero runtime dependencies)', async () => {
  const files = [...(await sources('lib')), ...(await sources('bin'))];
  assert.ok(files.length > 10);
  const offenders: string[] = [];
  for (const file of files) {
    const text = await readFile(join(ROOT, file), 'utf8');
    for (const match of text.matchAll(SPECIFIER)) {
      const specifier = match[1] ?? match[2] ?? match[3]!;
      const allowed = specifier.startsWith('node:') || (file.startsWith('lib/') ? /^\.\.?\/.*\.ts$/.test(specifier) : specifier.startsWith('../'));
      if (!allowed) offenders.push(`${file}: ${specifier}`);
    }
  }
  assert.deepEqual(offenders, []);
});

test('lib/ is ESM that Deno runs as it is: no require, __dirname or module.exports outside strings', async () => {
  const offenders: string[] = [];
  for (const file of await sources('lib')) {
    const text = await readFile(join(ROOT, file), 'utf8');
    // Template literals are worker sources; their text runs inside a worker, not as this module.
    const code = text.replace(/`(?:\\[\s\S]|[^`\\])*`/g, '``');
    if (/\brequire\(|__dirname|__filename|module\.exports/.test(code)) offenders.push(file);
  }
  assert.deepEqual(offenders, []);
});

test('package.json declares no runtime dependencies', async () => {
  const pkg = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as Record<string, unknown>;
  for (const field of ['dependencies', 'optionalDependencies', 'peerDependencies', 'bundledDependencies']) {
    assert.equal(pkg[field], undefined, `${field} must be absent`);
  }
});
