// Each lib/ file opens with a comment saying what it is, before its imports, and the map of lib/ in
// docs/development.md is made from those comments by tools/docs-map.ts (npm run docs:map).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { filesWithoutComment, firstSentence, openingComment, ROOT, withMap } from '../tools/docs-map.ts';

test('openingComment() reads the // lines or the /* */ block a file opens with, and nothing when it opens with code', () => {
  assert.equal(
    openingComment("// The one.\n// Two lines.\n\nimport x from './x.ts';\n// not this"),
    'The one.\nTwo lines.',
  );
  assert.equal(
    openingComment('/**\n * @module What it is.\n *\n * More.\n */\nexport const x = 1;'),
    '@module What it is.\n\nMore.',
  );
  assert.equal(openingComment("import x from './x.ts';\n\n// A header after the imports."), null);
});

test("firstSentence() is the first paragraph's first sentence without its full stop, whatever dots a path or a name holds", () => {
  assert.equal(
    firstSentence('The request listener: routing, /healthz.\nThe rest of it.'),
    'The request listener: routing, /healthz',
  );
  assert.equal(
    firstSentence('What forward.ts sends (see docs/http-api.md) and `a.b`, on\ntwo lines'),
    'What forward.ts sends (see docs/http-api.md) and `a.b`, on two lines',
  );
  assert.equal(firstSentence('@module Why a request came out as it did.\n\nMore.'), 'Why a request came out as it did');
  assert.equal(firstSentence('One paragraph\n\nand another.'), 'One paragraph');
});

test('every lib/ .ts file opens with a comment saying what it is, before its imports', () => {
  assert.deepEqual(filesWithoutComment(), []);
});

test("the inspector page's script opens with a comment too: it says what the page's line in the map says", () => {
  assert.notEqual(openingComment(readFileSync(join(ROOT, 'lib', 'inspector', 'page', 'app.js'), 'utf8')), null);
});

test('the map of lib/ in docs/development.md is the one the files make (npm run docs:map writes it)', () => {
  const doc = readFileSync(join(ROOT, 'docs', 'development.md'), 'utf8');
  assert.equal(withMap(doc), doc, 'the map of lib/ in docs/development.md is stale: run npm run docs:map');
});
